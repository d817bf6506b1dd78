"""Inputs gpucheck does not control: compat data files and version strings as drivers and
packages really print them. Each parses, or is reported as unknown / a clear error."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucheck.compat import Compat, CompatError, data_dir, driver_text, parse_version
from gpucheck.probes.cuda_tools import parse_nvcc_version
from gpucheck.probes.system import parse_module_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

REAL = tomllib.loads((data_dir() / "cuda.toml").read_text(encoding="utf-8"))
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_compat_rows_load_or_raise_compat_error(data: st.DataObject) -> None:
    table = data.draw(st.sampled_from(["toolkit", "minor_compat", "toolkit_arch", "architecture"]))
    rows = [dict(r) for r in REAL[table]]
    index = data.draw(st.integers(0, len(rows) - 1))
    key = data.draw(st.sampled_from([*rows[index].keys(), "unexpected"]))
    rows[index][key] = data.draw(VALUES)
    try:
        Compat.from_data(Path("cuda.toml"), {**REAL, table: rows})
    except CompatError as exc:
        assert str(exc).startswith("cuda.toml: ") and "\n" not in str(exc)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["toolkit", "minor_compat", "architecture", "x"]), VALUES))
def test_arbitrary_top_level_structure(data: dict[str, object]) -> None:
    with contextlib.suppress(CompatError):
        Compat.from_data(Path("cuda.toml"), data)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40000), st.integers(0, 40))
def test_truncated_or_garbled_compat_file_is_a_clear_error(
    tmp_path_factory: pytest.TempPathFactory, cut: int, noise: int
) -> None:
    text = (data_dir() / "cuda.toml").read_text(encoding="utf-8")
    folder = tmp_path_factory.mktemp("compat")
    (folder / "cuda.toml").write_text(text[:cut] + "\x00[[" * (noise % 3) + "=" * (noise % 2))
    try:
        Compat.from_dir(folder)
    except CompatError as exc:
        assert "cuda.toml" in str(exc)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("535.104.05", "535.104.05"),
        ("550.54.14", "550.54.14"),
        ("470.256.02", "470.256.02"),
        ("418.43", "418.43"),
        ("610.57.04", "610.57.04"),
        ("384.81", "384.81"),
        ("  580.65.06\n", "580.65.06"),
    ],
)
def test_driver_versions_round_trip_as_nvidia_prints_them(text: str, expected: str) -> None:
    parsed = parse_version(text)
    assert parsed is not None
    assert driver_text(parsed) == expected


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("13.0.88", (13, 0, 88)),
        ("9.28.0.42", (9, 28, 0, 42)),
        ("2.5.1+cu124", (2, 5, 1)),  # a torch wheel's local tag
        ("2.13.0+cpu", (2, 13, 0)),
        ("2.14.0rc1", (2, 14, 0)),
        ("12.4.r12.4", None),  # not PEP 440: unknown, not guessed
        ("N/A", None),
        ("", None),
        ('Deprecated, see "CUDA UMD version" instead', None),
        ("Not Supported", None),
    ],
)
def test_package_and_tool_versions_parse_or_are_unknown(
    text: str, release: tuple[int, ...] | None
) -> None:
    parsed = parse_version(text)
    assert (parsed.release if parsed else None) == release


@pytest.mark.parametrize(
    ("banner", "version"),
    [
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
            "535.104.05",
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build  (dvs-builder@U22)",
            "590.48.01",
        ),
        (
            "NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15  Tue Mar  5 19:17:47 UTC 2024",
            "550.54.15",
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  610.57.04  Release Build",
            "610.57.04",
        ),
        ("NVRM version: something else entirely", None),
        ("", None),
    ],
)
def test_kernel_module_banners(banner: str, version: str | None) -> None:
    assert parse_module_version(banner) == version


@pytest.mark.parametrize(
    ("output", "version"),
    [
        (
            "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
            "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\n"
            "Build cuda_13.0.r13.0/compiler.36424714_0\n",
            "13.0.88",
        ),
        ("Cuda compilation tools, release 9.0, V9.0.176\n", "9.0.176"),
        ("Cuda compilation tools, release 12.4\n", "12.4"),
        ("command not found", None),
        ("", None),
    ],
)
def test_nvcc_version_output(output: str, version: str | None) -> None:
    assert parse_nvcc_version(output) == version


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        JSON_VALUES.map(lambda v: json.dumps(v)),
        st.dictionaries(
            st.sampled_from(["schema_version", "system", "nvml", "cuda", "cudnn", "probes"]),
            JSON_VALUES,
        ).map(lambda v: json.dumps({"schema_version": "1.0", **v})),
        st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
    )
)
def test_doctor_from_hostile_input_exits_cleanly(tmp_path_factory, text: str) -> None:  # type: ignore[no-untyped-def]
    """Through the command itself (in-process for speed): any input is diagnosed (0/1) or
    refused with one line and exit 2; never a traceback, never exit 3."""
    import contextlib
    import io

    from gpucheck import cli

    path = tmp_path_factory.mktemp("from") / "snap.json"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    out, err = io.StringIO(), io.StringIO()
    argv = ["gpucheck", "doctor", "--json", "--from", str(path)]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(argv[1:])
    assert code in (0, 1, 2), (code, err.getvalue())
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gpucheck: --from: ")
    else:
        assert json.loads(out.getvalue())["summary"]["exit_code"] == code
