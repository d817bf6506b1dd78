"""`install tensorflow` judged by the GPU code a release's builds carry, where compat/tensorflow.toml
ties a list to the release. The 2.3 list is SASS 3.5, 3.7, 5.2, 6.0, 6.1, 7.0 and PTX 7.0: a
cuobjdump of the 2.3.1 GPU build (https://github.com/tensorflow/tensorflow/issues/46537) and
RELEASE.md 2.3.0 ('PTX kernels only for compute capability 7.0'); for the pip package, a maintainer
in https://github.com/tensorflow/tensorflow/issues/41990: 'supports 3.5, 3.7, 5.2, 6.0, 6.1, 7.0 and
higher than 7.0'; the 2.3.0 wheel's fat binaries say the same. The other lines' lists were read
from their wheels (scripts/tf_wheel_code.py): 2.2 SASS and PTX 3.5, 3.7, 5.2, 6.0, 6.1, 7.0; 2.16
SASS 5.0, 6.0, 7.0, 8.0, 9.0; 2.17 - 2.21 SASS 6.0, 7.0, 8.0, 8.9, 9.0 and PTX 9.0. Expectations
are those literals."""

from __future__ import annotations

import pytest

from gpucheck.compat import load
from gpucheck.install.answer import PackageAnswer
from gpucheck.install.flow import answer_for
from gpucheck.install.machine import Described, described
from gpucheck.install.request import parse_wanted

_DRIVER = "580.95.05"  # CUDA 13.0 at most: JIT-compiles any older PTX


def tensorflow(wanted: str, gpu: str, python: str = "3.8", driver: str = _DRIVER) -> PackageAnswer:
    compat = load()
    machine = described(compat, Described(gpus=(gpu,), driver=driver, python=python))
    (tf,) = answer_for(compat, machine, parse_wanted([wanted])).packages
    return tf


def test_gtx_980_gets_2_3_by_its_sm_52_code_with_no_uncertainty() -> None:
    tf = tensorflow("tensorflow==2.3.*", "GTX 980")
    assert tf.requirement == "tensorflow==2.3.*"
    assert tf.ruled_out == []
    assert tf.notes == []


def test_gtx_1080_runs_2_3_by_its_sm_61_code() -> None:
    tf = tensorflow("tensorflow==2.3.*", "GTX 1080")
    assert tf.requirement == "tensorflow==2.3.*"
    assert tf.notes == []


def test_rtx_4090_runs_2_3_only_through_ptx_jit_of_compute_70() -> None:
    tf = tensorflow("tensorflow==2.3.*", "RTX 4090")
    assert tf.requirement == "tensorflow==2.3.*"
    assert tf.notes == ["compute capability 8.9 runs through PTX JIT compilation"]


def test_rtx_5090_runs_2_3_through_ptx_jit_on_a_driver_that_knows_it() -> None:
    tf = tensorflow("tensorflow==2.3.*", "RTX 5090", driver="570.124.06")
    assert tf.requirement == "tensorflow==2.3.*"
    assert tf.notes == ["compute capability 12.0 runs through PTX JIT compilation"]


def test_gtx_680_has_no_code_in_2_3_and_the_line_says_so() -> None:
    """Compute capability 3.0: no sm_3x at or below minor 0 (sm_35, sm_37), PTX only from 7.0."""
    tf = tensorflow("tensorflow==2.3.*", "GTX 680")
    assert tf.release is None
    assert tf.ruled_out == [
        "2.3: has no code for compute capability 3.0 "
        "(built for sm_35 sm_37 sm_52 sm_60 sm_61 sm_70 compute_70)"
    ]


def test_gtx_750_ti_has_no_code_in_2_3_and_runs_2_2_through_its_compute_37_ptx() -> None:
    """Compute capability 5.0: sm_52 does not run on 5.0 (tensorflow#46537: 'any GPU with CC 3.5 and up
    except for CC 5.0'); 2.2 carries PTX for every architecture it has SASS for (tensorflow#41892:
    an MX130, 5.0, ran 2.2 and not 2.3)."""
    tf = tensorflow("tensorflow>=2.2,<2.4", "GTX 750 Ti")
    assert tf.requirement == "tensorflow==2.2.*"
    assert tf.ruled_out == [
        "2.3: has no code for compute capability 5.0 "
        "(built for sm_35 sm_37 sm_52 sm_60 sm_61 sm_70 compute_70)",
    ]
    assert tf.notes == ["compute capability 5.0 runs through PTX JIT compilation"]


def test_gtx_980_gets_2_16_the_last_line_whose_wheels_carry_maxwell_sass() -> None:
    tf = tensorflow("tensorflow", "GTX 980", python="3.12")
    assert tf.requirement == "tensorflow[and-cuda]==2.16.*"
    no_maxwell = "has no code for compute capability 5.2 (built for sm_60 sm_70 sm_80 sm_89 sm_90 compute_90)"
    assert tf.ruled_out == [
        f"{line}: {no_maxwell}" for line in ("2.21", "2.20", "2.19", "2.18", "2.17")
    ]
    assert not [n for n in tf.notes if n.startswith("not certain")]


def test_a_line_without_a_list_keeps_the_uncertain_note_for_maxwell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release newer than the data (here: 2.21 with its row taken out) is judged by its CUDA."""
    data = load().tensorflow
    monkeypatch.setattr(
        data, "gpu_code", {v: c for v, c in data.gpu_code.items() if str(v) != "2.21"}
    )
    tf = tensorflow("tensorflow", "GTX 980", python="3.12")
    assert tf.requirement == "tensorflow[and-cuda]==2.21.*"
    assert [n for n in tf.notes if n.startswith("not certain for compute capability 5.2: ")]
