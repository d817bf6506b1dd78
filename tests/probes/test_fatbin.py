"""The fat binary reader (gpucheck/probes/fatbin.py): the SASS and PTX architectures a library
carries, from its .nv_fatbin headers; on files laid out by tests/support/fatbin_files.py, on the
real bitsandbytes 0.45.5 wheel (archs from its own build script), and on broken files, which
give None or an empty answer, never an exception."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from support import fatbin_files as ff
from support import reallibs

from gpucheck.model.compiled_code import CompiledCode
from gpucheck.probes.fatbin import read_compiled_code


def _write(tmp_path: Path, data: bytes, name: str = "lib.so") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_sass_ptx_and_arch_specific_entries_are_read(tmp_path: Path) -> None:
    path = _write(tmp_path, ff.library(["8.0", "9.0a", "10.0", "12.0a"], ["8.0", "9.0"]))
    assert read_compiled_code(path) == CompiledCode(
        sass=("8.0", "9.0a", "10.0", "12.0a"), ptx=("8.0", "9.0")
    )


def test_entries_of_several_containers_with_padding_between_them(tmp_path: Path) -> None:
    path = _write(tmp_path, ff.library(["7.5", "8.6"], ["9.0"], containers=2))
    assert read_compiled_code(path) == CompiledCode(sass=("7.5", "8.6"), ptx=("9.0",))


def test_a_library_without_a_fat_binary_carries_nothing(tmp_path: Path) -> None:
    found = read_compiled_code(_write(tmp_path, ff.cpu_library()))
    assert found == CompiledCode() and found.empty()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not an ELF file at all, a text file renamed .so\n" * 4,
        b"\x7fELF\x01\x01\x01" + b"\0" * 100,  # a 32-bit ELF
        b"\x7fELF\x02\x02\x01" + b"\0" * 100,  # big-endian
    ],
    ids=["empty", "text", "elf32", "big-endian"],
)
def test_what_is_not_a_64_bit_little_endian_elf_gives_none(tmp_path: Path, data: bytes) -> None:
    assert read_compiled_code(_write(tmp_path, data)) is None


@pytest.mark.parametrize("keep", [10, 63, 64, 0x68, 0x100])
def test_a_truncated_library_gives_none_or_nothing(tmp_path: Path, keep: int) -> None:
    whole = ff.library(["8.0"], ["8.0"])
    assert keep < len(whole)
    assert read_compiled_code(_write(tmp_path, whole[:keep])) in (None, CompiledCode())


def _fatbin_offset(data: bytes | bytearray) -> int:
    at = data.find(struct.pack("<I", ff.FATBIN_MAGIC))
    assert at > 0
    return at


def test_a_container_larger_than_its_section_gives_none(tmp_path: Path) -> None:
    data = bytearray(ff.library(["8.0"]))
    struct.pack_into("<Q", data, _fatbin_offset(data) + 8, 1 << 40)
    assert read_compiled_code(_write(tmp_path, bytes(data))) is None


def test_an_entry_header_shorter_than_its_fields_gives_none(tmp_path: Path) -> None:
    data = bytearray(ff.library(["8.0"]))
    struct.pack_into("<I", data, _fatbin_offset(data) + 16 + 4, 8)
    assert read_compiled_code(_write(tmp_path, bytes(data))) is None


def test_an_sm_number_out_of_range_gives_none(tmp_path: Path) -> None:
    data = bytearray(ff.library(["8.0"]))
    struct.pack_into("<I", data, _fatbin_offset(data) + 16 + 28, 0xFFFFFFFF)
    assert read_compiled_code(_write(tmp_path, bytes(data))) is None


def test_section_headers_past_the_end_of_the_file_give_none(tmp_path: Path) -> None:
    data = bytearray(ff.library(["8.0"]))
    struct.pack_into("<Q", data, 0x28, len(data) + 4096)  # e_shoff
    assert read_compiled_code(_write(tmp_path, bytes(data))) is None


def test_a_name_table_index_past_the_section_count_gives_none(tmp_path: Path) -> None:
    data = bytearray(ff.library(["8.0"]))
    struct.pack_into("<H", data, 0x3E, 200)  # e_shstrndx
    assert read_compiled_code(_write(tmp_path, bytes(data))) is None


def test_a_missing_file_or_a_folder_gives_none(tmp_path: Path) -> None:
    assert read_compiled_code(str(tmp_path / "absent.so")) is None
    assert read_compiled_code(str(tmp_path)) is None


def test_the_real_bitsandbytes_wheel_carries_what_its_build_script_asks_for() -> None:
    """bitsandbytes 0.45.5 from PyPI: each libbitsandbytes_cudaXYZ.so carries SASS for exactly
    the -DCOMPUTE_CAPABILITY list of its CUDA in .github/scripts/build-cuda.sh at that tag
    (BNB_BUILD_CAPABILITIES cites it), and its CPU library carries none."""
    try:
        site = ff.bitsandbytes_site()
    except reallibs.FetchError as exc:
        if reallibs.offline():
            pytest.skip(f"offline: {exc}")
        pytest.fail(f"cannot fetch bitsandbytes {ff.BNB_VERSION}: {exc}", pytrace=False)
    folder = site / "bitsandbytes"
    for cuda, archs in ff.BNB_BUILD_CAPABILITIES.items():
        found = read_compiled_code(str(folder / f"libbitsandbytes_cuda{cuda}.so"))
        assert found is not None and found.sass == archs, cuda
    assert read_compiled_code(str(folder / "libbitsandbytes_cpu.so")) == CompiledCode()
