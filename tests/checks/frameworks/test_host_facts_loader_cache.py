"""frameworks.loader-cache: a CUDA library registered in the loader cache
older than the copy a framework's wheels bring. pytorch/pytorch#103832: torch 1.13 (pinning
nvidia-cublas-cu11 11.10.3.66) installed into nvidia/cuda:11.3.1-cudnn8-runtime-ubuntu20.04,
whose CUDA 11.3.1 cuBLAS (11.5.1.109) is in ld.so.cache: `import torch` fails with
"libcublas.so.11: undefined symbol: cublasLtGetStatusString, version libcublasLt.so.11"."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import finding, the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import Snapshot

# torch 1.13.1's Linux pins (its wheel METADATA's Requires-Dist).
TORCH_1131_PINS = (
    "nvidia-cuda-runtime-cu11==11.7.99",
    "nvidia-cudnn-cu11==8.5.0.96",
    "nvidia-cublas-cu11==11.10.3.66",
    "nvidia-cuda-nvrtc-cu11==11.7.99",
)
IMAGE_LIB = "/usr/local/cuda-11.3/targets/x86_64-linux/lib"
UNDEFINED = (
    f"{fb.site()}/torch/lib/../../nvidia/cublas/lib/libcublas.so.11: undefined symbol: "
    "cublasLtGetStatusString, version libcublasLt.so.11"
)


def _image(version: str = "11.5.1.109") -> Snapshot:
    env = fb.with_torch(fb.environment(), "1.13.1+cu117", "11.7", pins=TORCH_1131_PINS)
    snap = fb.on(builders.h100_node(1), env)
    snap.cuda.libraries = [
        builders.library("cublasLt", f"{IMAGE_LIB}/libcublasLt.so.11", version),
        builders.library(
            "cublasLt",
            f"{fb.site()}/nvidia/cublas/lib/libcublasLt.so.11",
            "11.10.3.66",
            origin="pip",
            package="nvidia-cublas-cu11 11.10.3.66",
        ),
    ]
    return snap


def test_an_older_cublaslt_in_the_loader_cache_warns_with_the_wheel_folder_first() -> None:
    f = the(_image(), "frameworks.loader-cache")
    assert f.status is Status.WARN
    assert "libcublasLt 11.5.1.109" in f.title and "11.10.3.66" in f.title
    assert (
        f"loader cache: {IMAGE_LIB}/libcublasLt.so.11 (cublasLt 11.5.1.109) is older than "
        "nvidia-cublas-cu11 11.10.3.66 (required by torch 1.13.1+cu117)"
    ) in f.evidence
    assert f.fix is not None
    assert f"export LD_LIBRARY_PATH={fb.site()}/nvidia/cublas/lib:$LD_LIBRARY_PATH" in (
        f.fix.commands
    )
    assert "sudo ldconfig" in f.fix.commands
    assert f.subjects.paths == [IMAGE_LIB]


def test_the_import_error_naming_it_fails() -> None:
    snap = _image()
    snap.deep = True
    fb.imported(snap.environments[0], "torch", 0, status="import_error", error=UNDEFINED)
    f = the(snap, "frameworks.loader-cache")
    assert f.status is Status.FAIL
    assert f"the import failed naming it: {UNDEFINED}" in f.evidence


def test_the_same_or_a_newer_version_in_the_cache_says_nothing() -> None:
    assert finding(_image("11.10.3.66"), "frameworks.loader-cache") is None
    assert finding(_image("11.11.3.6"), "frameworks.loader-cache") is None


def test_a_copy_on_ld_library_path_is_left_to_library_shadowing() -> None:
    snap = _image()
    snap.system.env["LD_LIBRARY_PATH"] = IMAGE_LIB
    assert finding(snap, "frameworks.loader-cache") is None


def test_what_the_deep_pass_saw_loaded_confirms_or_clears_it() -> None:
    snap = _image()
    snap.deep = True
    fb.imported(
        snap.environments[0], "torch", 1, loaded_libraries=[f"{IMAGE_LIB}/libcublasLt.so.11"]
    )
    f = the(snap, "frameworks.loader-cache")
    assert f.status is Status.FAIL and f.title.endswith("(confirmed by what was loaded)")
    assert f"torch loaded {IMAGE_LIB}/libcublasLt.so.11 (doctor --deep)" in f.evidence
    snap = _image()
    snap.deep = True
    wheel_copy = f"{fb.site()}/nvidia/cublas/lib/libcublasLt.so.11"
    fb.imported(snap.environments[0], "torch", 1, loaded_libraries=[wheel_copy])
    f = the(snap, "frameworks.loader-cache")
    assert f.status is Status.INFO and f.title.endswith("but the frameworks loaded their own")
    assert f"torch loaded {wheel_copy} (doctor --deep)" in f.evidence
