"""The fat-binary reader's entry counts (probes/fatbin.py `read_entry_counts`): how many entries
(one per compiled source file and architecture) carry SASS and PTX for each arch, and the archs
that stand for the library (`standing`): SASS with at least a quarter of the entries of the
largest arch, PTX with half, which leaves out the few files nvcc built for its default sm_52."""

from __future__ import annotations

from pathlib import Path

from support import fatbin_files as ff

from gpucheck.model.compiled_code import CompiledCode
from gpucheck.probes.fatbin import read_compiled_code, read_entry_counts, standing


def test_entries_are_counted_per_arch(tmp_path: Path) -> None:
    lib = tmp_path / "_C.abi3.so"
    sass = ["5.2", *["8.0"] * 4, "9.0a", *["12.0"] * 2]
    lib.write_bytes(ff.library(sass=sass, ptx=["5.2", "9.0", "9.0"]))
    assert read_entry_counts(str(lib)) == (
        {"5.2": 1, "8.0": 4, "9.0a": 1, "12.0": 2},
        {"5.2": 1, "9.0": 2},
    )
    # The largest arch has 4 entries: SASS needs 1, PTX 2.
    assert read_compiled_code(str(lib)) == CompiledCode(
        sass=("5.2", "8.0", "9.0a", "12.0"), ptx=("9.0",)
    )


def test_the_default_arch_files_of_vllm_0_9_2_do_not_stand_for_its_library() -> None:
    # The entry counts of vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl's vllm/_C.abi3.so, as read
    # from the wheel: one sm_52 and one compute_52 entry beside 31 to 50 per arch.
    sass = {"5.2": 1, "7.0": 31, "7.5": 32, "8.0": 50, "8.7": 16, "8.9": 34, "9.0": 47}
    sass |= {"9.0a": 18, "10.0": 31, "10.0a": 10, "12.0": 31, "12.0a": 2}
    ptx = {"5.2": 1, "8.9": 1, "9.0": 16}
    assert standing(sass, ptx) == CompiledCode(
        sass=("7.0", "7.5", "8.0", "8.7", "8.9", "9.0", "9.0a", "10.0", "12.0"), ptx=()
    )


def test_an_empty_fat_binary_counts_nothing_and_not_an_elf_is_unknown(tmp_path: Path) -> None:
    cpu = tmp_path / "cpu.so"
    cpu.write_bytes(ff.library())
    assert read_entry_counts(str(cpu)) == ({}, {})
    text = tmp_path / "notes.so"
    text.write_bytes(b"not a library")
    assert read_entry_counts(str(text)) is None


def test_a_section_of_zeros_is_walked_a_chunk_at_a_time(tmp_path: Path) -> None:
    # 8 MiB of padding before the one container: found by searching, not a seek per 8 bytes.
    lib = tmp_path / "padded.so"
    padded = ff.elf([(".nv_fatbin", b"\0" * (8 << 20) + ff.container(sass=["8.0"]))])
    lib.write_bytes(padded)
    assert read_compiled_code(str(lib)) == CompiledCode(sass=("8.0",))


def test_arch_specific_ptx_is_compiled_for_its_own_capability_alone(tmp_path: Path) -> None:
    lib = tmp_path / "sm90a.so"
    lib.write_bytes(ff.library(ptx=["9.0a"]))
    assert read_compiled_code(str(lib)) == CompiledCode(ptx=("9.0a",))


def test_arch_specific_kernels_do_not_push_the_portable_archs_out() -> None:
    # A build heavy in sm_100a kernels still runs on the GPUs its portable archs cover.
    sass = {"7.5": 30, "8.0": 40, "9.0": 40, "10.0a": 200}
    assert standing(sass, {}) == CompiledCode(sass=("7.5", "8.0", "9.0", "10.0a"))
    assert standing({"9.0a": 12, "10.0a": 1}, {}) == CompiledCode(sass=("9.0a",))
