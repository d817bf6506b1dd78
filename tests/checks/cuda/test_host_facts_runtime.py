"""A CUDA runtime in the loader cache older than the toolkit builds use is judged, not only
listed: what nvcc builds against the shared runtime gets the older copy and
misses newer symbols (sgl-project/sglang#3372: built with CUDA 12.8's headers, loaded with a
12.4 libcudart: "undefined symbol: cudaGetDriverEntryPointByVersion, version
libcudart.so.12")."""

from __future__ import annotations

from support import builders
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.install_state import InstallStateFacts, LoaderEntry
from gpucheck.model.snapshot import NvccFacts, Snapshot


def _machine(cached: str) -> Snapshot:
    snap = builders.h100_node(1)  # driver 590 (CUDA 13.1): every 12.x runtime runs
    snap.cuda.nvcc = NvccFacts(
        path="/usr/local/cuda-12.8/bin/nvcc", version="12.8.93", toolkit="/usr/local/cuda-12.8"
    )
    snap.cuda.runtimes = [
        builders.library(
            "cudart", f"/usr/lib/x86_64-linux-gnu/libcudart.so.{cached}", cached, origin="ldconfig"
        ),
    ]
    return snap


def test_an_older_runtime_of_the_toolkit_s_major_in_the_cache_warns() -> None:
    f = the(_machine("12.4.127"), "cuda.runtime-libraries")
    assert f.status is Status.WARN
    assert "CUDA runtime 12.4.127 is older than the toolkit (nvcc 12.8.93)" in f.title
    assert f.fix and f.fix.commands[0] == (
        "export LD_LIBRARY_PATH=/usr/local/cuda-12.8/lib64:$LD_LIBRARY_PATH"
    )
    assert "sudo ldconfig" in f.fix.commands
    assert f.subjects.paths == ["/usr/lib/x86_64-linux-gnu"]


def test_the_same_minor_or_another_major_passes() -> None:
    assert the(_machine("12.8.90"), "cuda.runtime-libraries").status is Status.PASS
    assert the(_machine("11.8.89"), "cuda.runtime-libraries").status is Status.PASS


def test_the_loader_entry_that_registers_the_old_runtime_is_named_for_removal() -> None:
    # A CUDA 12.4 installer's /etc/ld.so.conf.d entry left behind after 12.8 came.
    snap = _machine("12.4.127")
    snap.cuda.runtimes[0].path = "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127"
    snap.install_state = InstallStateFacts(
        loader_entries=[
            LoaderEntry("/etc/ld.so.conf.d/cuda-12-4.conf", ["/usr/local/cuda-12.4/lib64"], "12.4"),
            LoaderEntry("/etc/ld.so.conf.d/cuda-12-8.conf", ["/usr/local/cuda-12.8/lib64"], "12.8"),
        ]
    )
    f = the(snap, "cuda.runtime-libraries")
    assert f.fix is not None
    assert "sudo rm /etc/ld.so.conf.d/cuda-12-4.conf && sudo ldconfig" in f.fix.commands
    assert "cuda-12-8.conf" not in f.fix.text
