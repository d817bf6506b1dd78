"""The framework probe's own reading of *.dist-info metadata (probes/scripts/dist_info.py)
against importlib.metadata's, on the shapes real METADATA files take: both must name the same
distribution, version and requirements."""

from __future__ import annotations

import importlib
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest

from gpucheck.model.frameworks import static_probe_options


def load(name: str) -> ModuleType:
    return importlib.import_module(f"gpucheck.probes.scripts.{name}")


DIST_INFO = load("dist_info")

CASES = {
    # As pip writes a wheel's METADATA (torch 2.5.1's first lines), description after a blank line.
    "plain": (
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n"
        "Requires-Dist: filelock\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70; "
        'platform_system == "Linux" and platform_machine == "x86_64"\n\n'
        "Name: not-a-header\nVersion: 0\n"
    ),
    # Written on Windows: CRLF line ends.
    "crlf": "Metadata-Version: 2.1\r\nName: tensorflow\r\nVersion: 2.15.0\r\n\r\nbody\r\n",
    # A folded License field between the fields that matter; lower-case field names.
    "folded": (
        "Metadata-Version: 2.1\nname: jaxlib\nLicense: Apache 2.0\n  and more\n\tlines\n"
        "version: 0.4.30\nrequires-dist: scipy>=1.9\nRequires-Dist: numpy>=1.22\n"
    ),
    # No blank line and no body at all.
    "headers only": "Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: 13.3.0",
    # Spaces around the value.
    "spaces": "Metadata-Version: 2.1\nName:   xformers  \nVersion:\t0.0.28.post3 \n",
}


@pytest.mark.parametrize("case", list(CASES))
def test_headers_read_as_importlib_metadata_reads_them(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "x-1.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_bytes(CASES[case].encode())
    expected = metadata.PathDistribution(folder)
    fields = DIST_INFO.read_headers(str(folder))
    assert fields["name"][0].strip() == expected.metadata["Name"].strip()
    assert fields["version"][0].strip() == expected.metadata["Version"].strip()
    assert fields.get("requires-dist", []) == (expected.requires or [])


def test_the_values_themselves(tmp_path: Path) -> None:
    folder = tmp_path / "torch-2.5.1.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_text(CASES["plain"])
    fields = DIST_INFO.read_headers(str(folder))
    assert fields["name"] == ["torch"] and fields["version"] == ["2.5.1"]
    assert fields["requires-dist"] == [
        "filelock",
        'nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"',
    ]


def test_no_metadata_file_reads_as_no_fields(tmp_path: Path) -> None:
    folder = tmp_path / "nvidia_cudnn_cu12-9.1.0.70.dist-info"
    folder.mkdir()
    assert DIST_INFO.read_headers(str(folder)) == {}
    assert metadata.PathDistribution(folder).metadata["Name"] is None  # importlib agrees


def test_pkg_info_is_read_where_there_is_no_metadata(tmp_path: Path) -> None:
    folder = tmp_path / "torch-2.6.0.dist-info"
    folder.mkdir()
    (folder / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0\n")
    assert DIST_INFO.read_headers(str(folder))["version"] == ["2.6.0"]
    assert metadata.PathDistribution(folder).version == "2.6.0"


def test_not_utf8_is_an_error_the_probe_reports(tmp_path: Path) -> None:
    folder = tmp_path / "torch-2.5.1.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_bytes(b"Name: torch\nVersion: 2.5.1\nSummary: \xff\xfe\n")
    with pytest.raises(UnicodeDecodeError):
        DIST_INFO.read_headers(str(folder))


def test_the_probe_script_finds_this_interpreters_own_distributions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real site folder of the interpreter running the tests, against importlib.metadata:
    every distribution the probe keeps is there with the same version."""
    static = load("framework_static")
    monkeypatch.setattr(static, "TABLE", static.Table(static_probe_options()))  # as gpucheck
    errors: list[str] = []
    found = DIST_INFO.distributions(static, errors)
    assert errors == []
    by_name = {static.normalise(d.metadata["Name"]): d.version for d in metadata.distributions()}
    kept = [d for d in found if d["location"] and d["location"].startswith(sys.prefix)]
    assert kept, "this environment has nvidia-ml-py: the probe must keep it"
    for record in kept:
        assert by_name[record["name"]] == record["version"], record


# --- the build files' literals (framework_static.literal_value, for torch/version.py and
# TensorFlow's build_info.py), against ast.literal_eval ------------------------------------------

LITERALS = [
    "'12.4'",
    "None",
    "True",
    "-1.5",
    "+3",
    "(1, -2)",
    "['sm_80', 'sm_90', 'compute_90']",
    "{'cuda_version': '12.2', 'cudnn_version': '8', 'is_cuda_build': True}",
    "{'nested': {'a': [1, (2, 3)]}}",
]
NOT_LITERALS = ["f(x)", "a + b", "{**x}", "name", "-'text'", "[i for i in x]"]


@pytest.mark.parametrize("text", LITERALS)
def test_literals_read_as_ast_literal_eval_reads_them(text: str) -> None:
    import ast

    static = load("framework_static")
    node = compile(f"x = {text}", "<build file>", "exec", ast.PyCF_ONLY_AST).body[0].value  # type: ignore[attr-defined]
    assert static.literal(node) == ast.literal_eval(text)


@pytest.mark.parametrize("text", NOT_LITERALS)
def test_anything_else_is_not_a_literal(text: str) -> None:
    import ast

    static = load("framework_static")
    node = compile(f"x = {text}", "<build file>", "exec", ast.PyCF_ONLY_AST).body[0].value  # type: ignore[attr-defined]
    assert static.literal(node) is static.NOT_LITERAL


# --- the NVML child's own reading of nvidia-ml-py's version (scripts/nvml.py) --------------------


@pytest.mark.parametrize(
    ("folder", "leaf"),
    [
        ("nvidia_ml_py-12.560.30.dist-info", "METADATA"),
        ("nvidia_ml_py-11.525.84.egg-info", "PKG-INFO"),
    ],
)
def test_binding_version_as_importlib_metadata_says_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, leaf: str
) -> None:
    version = folder.split("-")[1].removesuffix(".dist").removesuffix(".egg")
    (tmp_path / folder).mkdir()
    (tmp_path / folder / leaf).write_text(
        f"Metadata-Version: 2.1\nName: nvidia-ml-py\nVersion: {version}\n\nbody\n"
    )
    monkeypatch.setattr(sys, "argv", ["nvml.py", "{}"])  # (the script reads its options)
    nvml = load("nvml")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    (found,) = metadata.distributions(path=[str(tmp_path)])
    assert nvml.binding_version() == found.version == version
