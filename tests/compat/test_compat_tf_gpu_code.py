"""compat/tensorflow.toml [[gpu_code]]: the rows as read, and bad rows refused on load."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucheck.compat import CompatError, load
from gpucheck.compat.answers import newest_tensorflow
from gpucheck.compat.frameworks import TensorflowData

_BASE = {"windows_native_gpu_source": "x"}
_RELEASE_23 = {
    "version": "2.3",
    "python_min": "3.5",
    "python_max": "3.8",
    "cuda": "10.1",
    "cudnn": "7.6",
    "source": "x",
}


def test_2_3_carries_the_list_its_cuobjdump_shows() -> None:
    code = load().tensorflow.gpu_code_for("2.3.1")
    assert code is not None
    assert code.sm == ("3.5", "3.7", "5.2", "6.0", "6.1", "7.0")
    assert code.ptx == ("7.0",)
    assert "issues/46537" in code.source
    assert "tensorflow-2.3.0-" in code.source  # and the wheel it was read from


def test_every_linux_gpu_line_has_a_row_read_from_its_wheels() -> None:
    tf = load().tensorflow
    missing = [str(r.version) for r in tf.releases if r.cuda and tf.gpu_code_for(r.version) is None]
    assert missing == []
    for code in tf.gpu_code.values():
        assert "sha256:" in code.source and "scripts/tf_wheel_code.py" in code.source, code.version


@pytest.mark.parametrize(
    ("line", "sm", "ptx"),
    [
        (
            "1.4",
            ("3.0", "3.5", "3.7", "5.2", "6.0", "6.1"),
            ("3.0", "3.5", "3.7", "5.2", "6.0", "6.1"),
        ),
        (
            "1.5",
            ("3.5", "3.7", "5.2", "6.0", "6.1", "7.0"),
            ("3.5", "3.7", "5.2", "6.0", "6.1", "7.0"),
        ),
        ("2.4", ("3.5", "5.0", "6.0", "7.0", "7.5", "8.0"), ("8.0",)),
        ("2.20", ("6.0", "7.0", "8.0", "8.9", "9.0"), ("9.0",)),
    ],
)
def test_rows_as_the_wheels_carry_them(
    line: str, sm: tuple[str, ...], ptx: tuple[str, ...]
) -> None:
    """1.5 dropped sm_30 (tensorflow#17445: a K2000M ignored in March 2018); 2.4 added sm_50
    (tensorflow#46537: 'TF 2.4 supports cc 5.0'); 2.20's build_info says compute_90 for what is
    sm_90 SASS and compute_90 PTX."""
    code = load().tensorflow.gpu_code_for(line)
    assert code is not None
    assert (code.sm, code.ptx) == (sm, ptx)


def test_the_build_info_the_2_20_wheel_prints_is_kept_to_tell_it_from_other_builds() -> None:
    code = load().tensorflow.gpu_code_for("2.20.0")
    assert code is not None
    assert code.build_info == ("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")


def test_a_row_for_a_line_with_no_release_is_refused() -> None:
    data = {**_BASE, "gpu_code": [{"version": "9.9", "sm": ["3.5"], "source": "x"}]}
    with pytest.raises(CompatError, match=r"with no \[\[release\]\]: \['9\.9'\]"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)


def test_a_capability_that_is_not_a_version_is_refused() -> None:
    data = {**_BASE, "gpu_code": [{"version": "2.3", "sm": ["sm_35"], "source": "x"}]}
    with pytest.raises(CompatError, match="sm_35"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)


def test_a_second_row_for_a_line_is_refused() -> None:
    row = {"version": "2.3", "sm": ["3.5"], "source": "x"}
    data = {**_BASE, "gpu_code": [row, row]}
    with pytest.raises(CompatError, match="second row"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)


def test_a_patch_built_otherwise_has_its_own_row_and_the_line_answers_with_the_newest() -> None:
    """tensorflow_gpu 1.12.2's and 1.12.3's libraries carry sm_37 and compute_37 only; 1.12.0's
    six architectures. `==1.12.*` installs 1.12.3, so the line answers with its row."""
    tf = load().tensorflow
    first, second, last, line = (tf.gpu_code_for(v) for v in ("1.12.0", "1.12.2", "1.12.3", "1.12"))
    assert first is not None and last is not None
    assert first.sm == ("3.5", "3.7", "5.2", "6.0", "6.1", "7.0")
    assert (last.sm, last.ptx) == (("3.7",), ("3.7",))
    assert second is last and line is last


def test_a_from_version_outside_its_line_is_refused() -> None:
    row = {"version": "2.3", "from_version": "2.4.1", "sm": ["3.5"], "source": "x"}
    data = {**_BASE, "release": [_RELEASE_23], "gpu_code": [row]}
    with pytest.raises(CompatError, match=r"from_version 2\.4\.1 is not 2\.3\.x"):
        TensorflowData.from_data(Path("tensorflow.toml"), data)


def test_the_aarch64_wheels_carry_no_gpu_code() -> None:
    assert load().tensorflow.aarch64_gpu_code == "none"


@pytest.mark.parametrize(
    ("cc", "line"),
    [
        ("3.0", "1.4"),  # 1.5 dropped sm_30
        ("3.7", "2.14"),  # a K80 runs sm_35 up to 2.14; 2.15 starts at sm_50
        ("5.2", "2.16"),  # 2.17 starts at sm_60
        ("6.1", "2.21"),
    ],
)
def test_the_newest_tensorflow_for_a_gpu_is_the_newest_whose_wheels_carry_it(
    cc: str, line: str
) -> None:
    pick = newest_tensorflow(load(), ccs=[cc])
    assert pick is not None and pick.version == line
