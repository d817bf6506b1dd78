"""The CUDA the monolithic jaxlib 0.1.73+ `+cuda11.cudnnXY` wheels were built with (compat/jax.toml,
from jax's commits e6e81ba885 and 5efa28566e and .bazelrc / build/build.py at the jaxlib tags), and
frameworks.jax.cuda-driver on a driver older than that CUDA: a GPU without SASS in the wheel fails (the
driver cannot JIT the newer PTX: jax-ml/jax#8731), one with SASS runs through minor version
compatibility."""

from __future__ import annotations

import msgspec
import pytest
from packaging.version import Version
from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.checks.frameworks.jax_builds import jaxlib_built
from gpucheck.compat import load
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import GpuFacts

COMPAT = load()


@pytest.mark.parametrize(
    ("version", "built"),
    [
        ("0.1.74+cuda11.cudnn82", "11.4"),  # commit e6e81ba885: CUDA 11.4 release builds
        ("0.1.75+cuda11.cudnn805", "11.4"),
        ("0.1.76+cuda11.cudnn82", "11.4"),
        ("0.3.0+cuda11.cudnn805", "11.1"),  # commit 5efa28566e: cudnn805 back to CUDA 11.1
        ("0.3.25+cuda11.cudnn82", "11.4"),  # README from d704c151fa: "Cuda >= 11.4"
        ("0.1.65+cuda112", None),  # the tag names its minor itself
        ("0.1.72+cuda11.cudnn82", None),  # before the data's first row: not known
        ("0.4.14+cuda11.cudnn86", None),  # no cuda_built in that row
        ("0.4.30", None),
    ],
)
def test_the_build_cuda_of_a_major_only_jaxlib_tag(version: str, built: str | None) -> None:
    found = jaxlib_built(COMPAT.jax, version)
    assert (found[0] if found else None) == built


def test_a_row_holds_within_its_minor_line_only() -> None:
    row = COMPAT.jax.release("0.1.75+cuda11.cudnn82")
    assert row is not None and row.version == Version("0.1.73")
    assert COMPAT.jax.release("0.2.25") is None  # jax 0.2.x: no jaxlib 0.2 exists
    row = COMPAT.jax.release("0.3.15")
    assert row is not None and row.version == Version("0.3.0")


def _gpu(cc: str, name: str) -> GpuFacts:
    return msgspec.structs.replace(builders.rtx_3060(0), compute_capability=cc, name=name)


def _finding(cc: str, name: str, jaxlib: str, driver: str, cuda: int) -> tuple[Status, str]:
    env = fb.environment()
    fb.add(env, "jax", "0.2.25")
    fb.add(env, "jaxlib", jaxlib)
    snap = builders.node([_gpu(cc, name)], driver=driver, cuda=cuda)
    f = the(fb.on(snap, env), "frameworks.jax.cuda-driver")
    return f.status, " ".join([f.title, *f.evidence, f.fix.text if f.fix else ""])


def test_jaxlib_0_1_74_on_an_rtx_3080_and_driver_465_fails_naming_driver_470() -> None:
    status, text = _finding(
        "8.6", "NVIDIA GeForce RTX 3080", "0.1.74+cuda11.cudnn82", "465.19.01", 11030
    )
    assert status is Status.FAIL
    assert "CUDA 11.4" in text and "470" in text and "unsupported toolchain" in text


def test_a_gtx_1080_ti_has_sass_in_jaxlib_0_1_74_and_is_not_failed() -> None:
    status, text = _finding(
        "6.1", "NVIDIA GeForce GTX 1080 Ti", "0.1.74+cuda11.cudnn82", "465.19.01", 11030
    )
    assert status is Status.INFO  # minor version compatibility: runs, PTX JIT aside
    assert "CUDA 11.4" in text


def test_jaxlib_0_1_76_has_sass_for_compute_8_0() -> None:
    status, _ = _finding(
        "8.0", "NVIDIA A100-SXM4-40GB", "0.1.76+cuda11.cudnn82", "465.19.01", 11030
    )
    assert status is Status.INFO


def test_driver_470_82_runs_jaxlib_0_1_74_on_an_rtx_3080() -> None:
    status, _ = _finding(
        "8.6", "NVIDIA GeForce RTX 3080", "0.1.74+cuda11.cudnn82", "470.82.01", 11040
    )
    assert status is Status.PASS
