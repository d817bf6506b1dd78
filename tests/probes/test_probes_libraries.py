"""Library discovery (probes/libraries.py) on fabricated folders: every CUDA library soname a
framework's wheels bring, found on LD_LIBRARY_PATH, in pip's nvidia/*/lib and in torch/lib,
with the version its file name or its wheel's metadata gives. No library is loaded."""

from __future__ import annotations

from pathlib import Path

from gpucheck.model.snapshot import LIBRARY_FAMILIES
from gpucheck.probes.libraries import SearchScope, find_copies


def _wheel(site: Path, dist: str, version: str, files: list[str]) -> None:
    info = site / f"{dist}-{version}.dist-info"
    info.mkdir(parents=True)
    name = dist.replace("_", "-")  # as the wheels' METADATA spells it
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    (info / "RECORD").write_text("".join(f"{f},sha256=x,1\n" for f in files))
    for f in files:
        (site / f).parent.mkdir(parents=True, exist_ok=True)
        (site / f).write_bytes(b"\x7fELF")


def _scope(tmp_path: Path, ld: list[Path]) -> SearchScope:
    return SearchScope(
        env={"LD_LIBRARY_PATH": ":".join(map(str, ld))},
        site_dirs=[tmp_path / "site"],
        use_ldconfig=False,
        system_dirs=(),
    )


def test_nvjitlink_on_ld_library_path_and_in_the_wheel_are_both_found(tmp_path: Path) -> None:
    # jax#30050: the HPC SDK's nvJitLink (CUDA 12.4) on LD_LIBRARY_PATH, the wheel's in site.
    hpc = tmp_path / "opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64"
    hpc.mkdir(parents=True)
    (hpc / "libnvJitLink.so.12.4.127").write_bytes(b"\x7fELF")
    (hpc / "libnvJitLink.so.12").symlink_to("libnvJitLink.so.12.4.127")
    (hpc / "libnvrtc-builtins.so.12.4").write_bytes(b"\x7fELF")  # not the nvrtc family
    site = tmp_path / "site"
    _wheel(site, "nvidia_nvjitlink_cu12", "12.9.86", ["nvidia/nvjitlink/lib/libnvJitLink.so.12"])
    copies = find_copies("nvjitlink", _scope(tmp_path, [hpc]))
    assert [(c.path, c.origin, c.on_loader_path, c.version, c.package) for c in copies] == [
        (str(hpc / "libnvJitLink.so.12"), "ld_library_path", True, "12.4.127", None),
        (
            str(site / "nvidia/nvjitlink/lib/libnvJitLink.so.12"),
            "pip",
            False,
            "12.9.86",
            "nvidia-nvjitlink-cu12 12.9.86",
        ),
    ]
    assert find_copies("nvrtc", _scope(tmp_path, [hpc])) == []


def test_torch_lib_bundled_copies_are_the_torch_wheels(tmp_path: Path) -> None:
    # pytorch#80637: torch 1.12.0+cu113 bundles libcudnn.so.8 in torch/lib.
    site = tmp_path / "site"
    _wheel(site, "torch", "1.12.0+cu113", ["torch/lib/libcudnn.so.8", "torch/lib/libcublas.so.11"])
    (cudnn,) = find_copies("cudnn", _scope(tmp_path, []))
    assert cudnn.path == str(site / "torch/lib/libcudnn.so.8")
    assert (cudnn.origin, cudnn.package) == ("pip", "torch 1.12.0+cu113")
    (cublas,) = find_copies("cublas", _scope(tmp_path, []))
    assert cublas.path.endswith("torch/lib/libcublas.so.11")
    assert find_copies("cublasLt", _scope(tmp_path, [])) == []  # libcublas is not libcublasLt


def test_every_family_has_its_own_soname_stem() -> None:
    assert LIBRARY_FAMILIES["nvjitlink"] == "libnvJitLink"
    assert len(set(LIBRARY_FAMILIES.values())) == len(LIBRARY_FAMILIES)


def test_libcuda_cache_entries_are_recorded_by_name(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # WSL#8587: the cache has libcuda.so.1 but not the unversioned libcuda.so.
    from gpucheck.probes import native

    cache = {"libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"], "libz.so.1": ["/lib/libz.so.1"]}
    monkeypatch.setattr(native, "ldconfig_cache", lambda: cache)
    scope = SearchScope(env={}, site_dirs=[], cuda_homes=[tmp_path], system_dirs=())
    cuda, _, _ = native.probe_cuda_and_cudnn(scope, 5.0)
    assert cuda.libcuda_cache == {
        "libcuda.so.1": ["/usr/lib/wsl/lib/libcuda.so.1"],
        "libcuda.so": [],
    }
    scope = SearchScope(env={}, site_dirs=[], cuda_homes=[tmp_path], use_ldconfig=False)
    assert native.probe_cuda_and_cudnn(scope, 5.0)[0].libcuda_cache is None
