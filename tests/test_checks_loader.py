"""Libraries the framework loads that are not the ones it needs: a release whose loader misses
its own wheels, and CUDA libraries of other copies that win the loader race. Each test is one
real thread's situation."""

from __future__ import annotations

import builders
import framework_builders as fb
from framework_builders import COMPAT
from more_builders import the

from gpucheck.model.finding import Status

# --- tensorflow.cuda-libraries: a release whose loader misses its wheels --------------------


def test_tensorflow_2_16_1_with_its_wheels_fails_until_ld_library_path_names_them() -> None:
    # tensorflow#63362 / #65842: pip install tensorflow[and-cuda]==2.16.1, GPU list empty.
    row = COMPAT.tensorflow.and_cuda_for("2.16.1")
    assert row is not None and row.loader_gap
    env = fb.with_tensorflow(fb.environment(), "2.16.1", and_cuda=True)
    snap = fb.on(builders.h100_node(1), env)
    f = the(snap, "tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert "will not find its tensorflow[and-cuda] libraries" in f.title
    assert "LD_LIBRARY_PATH is unset" in f.evidence
    site = fb.site()
    assert f.fix is not None
    (command,) = f.fix.commands
    assert command.startswith("export LD_LIBRARY_PATH=")
    for folder in ("cudnn", "cublas", "cuda_runtime", "cusparse", "nvjitlink"):
        assert f"{site}/nvidia/{folder}/lib" in command
    assert "cuda_nvcc" not in command  # ptxas, not a library
    # Once they are named, it finds them.
    snap.system.env["LD_LIBRARY_PATH"] = command.split("=", 1)[1].split("$")[0].rstrip(":")
    assert the(snap, "tensorflow.cuda-libraries").status is Status.PASS


def test_tensorflow_2_17_finds_its_wheels_by_itself() -> None:
    env = fb.with_tensorflow(fb.environment(), "2.17.0", and_cuda=True)
    f = the(fb.on(builders.h100_node(1), env), "tensorflow.cuda-libraries")
    assert f.status is Status.PASS
