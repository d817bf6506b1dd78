"""The installed-library probe (gpucheck/probes/library_code.py): for each kernel package that
compat [[kernel_library]] names, the deciding libraries its RECORD lists, with the SASS and PTX
their fat binaries carry. Installs laid out as pip lays them out (support.static_probe), with
libraries from support.fatbin_files, and the real bitsandbytes 0.45.5 wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import fatbin_files as ff
from support import reallibs
from support.static_probe import install, simple_metadata

from gpucheck.compat import load
from gpucheck.model.compiled_code import CompiledCode
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.library_code import LibraryCode
from gpucheck.probes.library_code import add_library_code, read_libraries

# vLLM 0.9.2's _C.abi3.so, as its fat binary lists it.
VLLM_SASS = (
    "5.2",
    "7.0",
    "7.5",
    "8.0",
    "8.7",
    "8.9",
    "9.0",
    "9.0a",
    "10.0",
    "10.0a",
    "12.0",
    "12.0a",
)
VLLM_C = ff.library(VLLM_SASS, ["5.2", "8.9", "9.0"])


def _env(site: Path, *dists: tuple[str, str]) -> PythonEnvironment:
    return PythonEnvironment(
        python="/venv/bin/python",
        origin="virtualenv",
        site_packages=[str(site)],
        distributions=[Distribution(name, version, str(site)) for name, version in dists],
    )


def _vllm(site: Path, c_library: bytes = VLLM_C) -> None:
    install(
        site,
        simple_metadata("vllm", "0.9.2", "torch==2.7.0"),
        {
            "vllm/__init__.py": "",
            "vllm/_C.abi3.so": c_library,
            "vllm/_moe_C.abi3.so": ff.library(["8.0"]),
            "vllm/_flashmla_C.abi3.so": ff.library(["9.0a"]),
            "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so": ff.library(["8.0"], ["8.0"]),
        },
    )


def test_only_the_deciding_library_is_read(tmp_path: Path) -> None:
    _vllm(tmp_path)
    env = add_library_code(_env(tmp_path, ("vllm", "0.9.2")))
    assert env.errors == []
    assert env.compiled == [
        LibraryCode(
            "vllm",
            "0.9.2",
            "vllm/_C.abi3.so",
            str(tmp_path / "vllm/_C.abi3.so"),
            CompiledCode(
                sass=VLLM_SASS,
                ptx=("5.2", "8.9", "9.0"),
            ),
        )
    ]


def test_a_dist_info_folder_is_found_by_its_normalised_name(tmp_path: Path) -> None:
    install(
        tmp_path,
        simple_metadata("flash_attn", "2.8.3"),
        {
            "flash_attn/__init__.py": "",
            "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so": ff.library(["8.0", "9.0"]),
        },
    )
    (found,) = add_library_code(_env(tmp_path, ("flash-attn", "2.8.3"))).compiled
    assert found.path == "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
    assert found.code == CompiledCode(sass=("8.0", "9.0"))


def test_the_dist_info_of_the_installed_version_is_read_beside_a_stale_one(tmp_path: Path) -> None:
    _vllm(tmp_path)
    stale = tmp_path / "vllm-0.8.0.dist-info"
    stale.mkdir()
    (stale / "RECORD").write_text("vllm/_C.cpython-311-x86_64-linux-gnu.so,,\n")
    (found,) = add_library_code(_env(tmp_path, ("vllm", "0.9.2"))).compiled
    assert found.path == "vllm/_C.abi3.so"


def test_an_unreadable_library_is_recorded_as_unknown(tmp_path: Path) -> None:
    _vllm(tmp_path, c_library=b"a text file where the library should be\n")
    (found,) = add_library_code(_env(tmp_path, ("vllm", "0.9.2"))).compiled
    assert found.path == "vllm/_C.abi3.so" and found.code is None


def test_without_a_record_nothing_is_read(tmp_path: Path) -> None:
    _vllm(tmp_path)
    (tmp_path / "vllm-0.9.2.dist-info" / "RECORD").unlink()
    env = add_library_code(_env(tmp_path, ("vllm", "0.9.2")))
    assert env.compiled == [] and env.errors == []


def test_a_library_the_record_lists_but_the_disk_lacks_is_left_out(tmp_path: Path) -> None:
    _vllm(tmp_path)
    (tmp_path / "vllm/_C.abi3.so").unlink()
    assert add_library_code(_env(tmp_path, ("vllm", "0.9.2"))).compiled == []


def test_a_site_folder_that_is_gone_is_an_error_line_not_an_exception(tmp_path: Path) -> None:
    env = add_library_code(_env(tmp_path / "gone", ("vllm", "0.9.2")))
    assert env.compiled == []
    assert len(env.errors) == 1 and env.errors[0].startswith("compiled libraries: FileNotFound")


def test_past_the_time_budget_libraries_are_listed_unread(tmp_path: Path) -> None:
    # Which libraries the install has stays known (bitsandbytes loads only the one for
    # torch's CUDA: a library left out would read as one the install lacks).
    _vllm(tmp_path)
    env = _env(tmp_path, ("vllm", "0.9.2"))
    assert read_libraries(env, load().extensions.libraries, budget=-1.0) == [
        LibraryCode("vllm", "0.9.2", "vllm/_C.abi3.so", str(tmp_path / "vllm/_C.abi3.so"), None)
    ]
    assert env.errors == ["compiled libraries: stopped after -1 s at vllm/_C.abi3.so"]


def _add_to_record(site: Path, *lines: str) -> None:
    record = site / "vllm-0.9.2.dist-info" / "RECORD"
    record.write_text(record.read_text() + "".join(f"{line},,\n" for line in lines))


def test_a_record_path_leaving_the_site_folder_is_not_read(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"
    _vllm(site)
    # fnmatch's "vllm/_C.*.so" matched it, and the path resolved to lib/outside.so.
    (tmp_path / "lib" / "outside.so").write_bytes(ff.library(["8.0"]))
    _add_to_record(site, "vllm/_C./../../../outside.so")
    found = add_library_code(_env(site, ("vllm", "0.9.2"))).compiled
    assert [c.path for c in found] == ["vllm/_C.abi3.so"]


def test_a_glob_star_stays_inside_one_folder(tmp_path: Path) -> None:
    # "vllm/_C.*.so" names vllm/_C.<abi>.so, not a library in a folder below it.
    _vllm(tmp_path)
    (tmp_path / "vllm" / "_C.sub").mkdir()
    (tmp_path / "vllm" / "_C.sub" / "kernels.so").write_bytes(ff.library(["8.0"]))
    _add_to_record(tmp_path, "vllm/_C.sub/kernels.so")
    found = add_library_code(_env(tmp_path, ("vllm", "0.9.2"))).compiled
    assert [c.path for c in found] == ["vllm/_C.abi3.so"]


def test_packages_without_a_row_are_not_read(tmp_path: Path) -> None:
    install(
        tmp_path,
        simple_metadata("torchvision", "0.20.1"),
        {"torchvision/_C.so": ff.library(["8.0"])},
    )
    assert add_library_code(_env(tmp_path, ("torchvision", "0.20.1"))).compiled == []


def test_the_real_bitsandbytes_install_lists_every_cuda_library(tmp_path: Path) -> None:
    try:
        site = ff.bitsandbytes_site()
    except reallibs.FetchError as exc:
        if reallibs.offline():
            pytest.skip(f"offline: {exc}")
        pytest.fail(f"cannot fetch bitsandbytes {ff.BNB_VERSION}: {exc}", pytrace=False)
    env = add_library_code(_env(site, ("bitsandbytes", ff.BNB_VERSION)))
    by_name = {Path(c.path).name: c.code for c in env.compiled}
    # The wheel's CUDA builds (its python-package.yml matrix at 0.45.5): 11.7, 11.8, 12.0 to
    # 12.6, 12.8; the CPU library is not a CUDA one and is not read.
    assert sorted(by_name) == [
        f"libbitsandbytes_cuda{v}.so"
        for v in ("117", "118", "120", "121", "122", "123", "124", "125", "126", "128")
    ]
    for cuda, archs in ff.BNB_BUILD_CAPABILITIES.items():
        assert by_name[f"libbitsandbytes_cuda{cuda}.so"] == CompiledCode(sass=archs), cuda
