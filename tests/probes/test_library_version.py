"""A library's version read from its own files (probes/library_version.py), on small ELF files
laid out as NVIDIA's libraries are; the real wheels' files are read in
test_probes_reallibs_wheels.py."""

from __future__ import annotations

from pathlib import Path

from support.elf_files import elf_with_sections

from gpucheck.probes.libraries import SearchScope, find_copies
from gpucheck.probes.library_version import library_version

# The marker as nvidia-cudnn-cu12 8.9.2.26's libcudnn_ops_infer.so.8 carries it in .rodata.
CUDNN_8_9_2_MARKER = b"\0other\0cudnn_version_8_9_2_26_c32916828_e0\0"
# and as nvidia-cudnn-cu12 9.10.2.21's libcudnn_graph.so.9 does (no "c" before the changelist).
CUDNN_9_10_2_MARKER = b"\0cudnn_version_9_10_2_21_36061468_\0"


def _write(folder: Path, name: str, rodata: bytes | None) -> Path:
    sections = {b".text": b"\x90" * 16, **({b".rodata": rodata} if rodata is not None else {})}
    path = folder / name
    path.write_bytes(elf_with_sections(sections))
    return path


def test_cudnn_8_version_from_the_ops_library_beside_the_dispatcher(tmp_path: Path) -> None:
    main = _write(tmp_path, "libcudnn.so.8", b"\0cudnnGetVersion\0")
    _write(tmp_path, "libcudnn_ops_infer.so.8", CUDNN_8_9_2_MARKER)
    assert library_version("cudnn", str(main)) == "8.9.2.26"


def test_cudnn_9_version_from_the_graph_library(tmp_path: Path) -> None:
    main = _write(tmp_path, "libcudnn.so.9", b"")
    _write(tmp_path, "libcudnn_graph.so.9", CUDNN_9_10_2_MARKER)
    assert library_version("cudnn", str(main)) == "9.10.2.21"


def test_a_sub_library_of_another_major_is_not_read(tmp_path: Path) -> None:
    main = _write(tmp_path, "libcudnn.so.9", b"")
    _write(tmp_path, "libcudnn_ops_infer.so.8", CUDNN_8_9_2_MARKER)
    assert library_version("cudnn", str(main)) is None


def test_marker_outside_rodata_or_a_broken_file_is_unknown(tmp_path: Path) -> None:
    elsewhere = tmp_path / "a"
    elsewhere.mkdir()
    main = _write(elsewhere, "libcudnn.so.9", None)
    (elsewhere / "libcudnn_graph.so.9").write_bytes(
        elf_with_sections({b".data": CUDNN_9_10_2_MARKER})
    )
    assert library_version("cudnn", str(main)) is None
    broken = tmp_path / "b"
    broken.mkdir()
    truncated = elf_with_sections({b".rodata": CUDNN_9_10_2_MARKER})[:80]
    (broken / "libcudnn.so.9").write_bytes(truncated)
    (broken / "libcudnn_graph.so.9").write_bytes(b"not an ELF " + CUDNN_9_10_2_MARKER)
    assert library_version("cudnn", str(broken / "libcudnn.so.9")) is None


def test_cublas_and_cusparse_carry_no_version_to_read(tmp_path: Path) -> None:
    # Their wheels' .rodata hold no version string (checked on nvidia-cublas-cu12 12.1.3.1 and
    # nvidia-cusparse-cu12 12.1.0.106): the reader does not guess one.
    lib = _write(tmp_path, "libcublas.so.12", b"\0cublasGetVersion_v2\0")
    assert library_version("cublas", str(lib)) is None


def test_find_copies_records_the_library_as_the_source(tmp_path: Path) -> None:
    _write(tmp_path, "libcudnn.so.8", b"")
    _write(tmp_path, "libcudnn_ops_infer.so.8", CUDNN_8_9_2_MARKER)
    scope = SearchScope(env={"LD_LIBRARY_PATH": str(tmp_path)}, use_ldconfig=False, system_dirs=())
    (copy,) = find_copies("cudnn", scope)
    assert (copy.path, copy.version, copy.version_source) == (
        str(tmp_path / "libcudnn.so.8"),
        "8.9.2.26",
        "library",
    )
