"""The fake libnvidia-ml.so.1 and libcuda.so.1, built from fake_nvml.c and fake_cuda.c against
NVIDIA's nvml.h (from the nvidia-nvml-dev wheel)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from support import reallibs

from sim.model import HERE, NVML_DEV_DIST, NVML_DEV_VERSION

# --- the libraries ----------------------------------------------------------------------------


def find_compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def nvml_include_dir(cache: Path | None = None) -> Path:
    """The folder holding NVIDIA's nvml.h, from the nvidia-nvml-dev wheel, fetched once into
    the test cache (reallibs' conventions: a lock, a marker after a complete fetch)."""
    base = (cache or reallibs.cache_root()) / "nvml-dev"
    with reallibs._locked(base):
        marker = reallibs._read_marker(base)
        include = base / "include"
        if (
            marker is not None
            and marker.get("version") == NVML_DEV_VERSION
            and (include / "nvml.h").is_file()
        ):
            return include
        reallibs._wipe(base, keep={".lock"})
        wheels = base / "wheels"
        wheels.mkdir()
        wheel = reallibs._download_wheel(NVML_DEV_DIST, NVML_DEV_VERSION, wheels)
        try:
            with zipfile.ZipFile(wheel) as zf:
                headers = [n for n in zf.namelist() if n.endswith("/include/nvml.h")]
                if len(headers) != 1:
                    raise reallibs.FetchError(f"{wheel.name} holds no single nvml.h: {headers}")
                include.mkdir()
                (include / "nvml.h").write_bytes(zf.read(headers[0]))
        except (zipfile.BadZipFile, OSError) as exc:
            raise reallibs.FetchError(f"{wheel.name}: cannot extract nvml.h: {exc}") from exc
        shutil.rmtree(wheels)
        reallibs._write_marker(
            base, {"version": NVML_DEV_VERSION, "wheel": wheel.name, "header": headers[0]}
        )
        return include


class BuildError(Exception):
    pass


def _cc(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr}")


@dataclass(frozen=True)
class Libraries:
    """The fake libraries, built once per test session; per-scenario variants link fast."""

    build_dir: Path
    compiler: str
    nvml_object: Path  # fake_nvml.o, linked into each libnvidia-ml variant
    nvml: Path  # every function
    cuda: Path

    @classmethod
    def build(cls, include: Path, build_dir: Path, compiler: str) -> Libraries:
        build_dir.mkdir(parents=True, exist_ok=True)
        obj = build_dir / "fake_nvml.o"
        flags = ["-fPIC", "-O1", "-Wall", "-Wextra"]
        _cc([compiler, "-c", *flags, f"-I{include}", str(HERE / "fake_nvml.c"), "-o", str(obj)])
        libs = cls(build_dir, compiler, obj, build_dir / "libnvidia-ml.so", build_dir / "cuda.so")
        libs._link_nvml(libs.nvml, [])
        _cc(
            [
                compiler,
                "-shared",
                *flags,
                "-Wl,-soname,libcuda.so.1",
                str(HERE / "fake_cuda.c"),
                "-o",
                str(libs.cuda),
            ]
        )
        return libs

    def _link_nvml(self, out: Path, missing: list[str]) -> None:
        cmd = [self.compiler, "-shared", "-Wl,-soname,libnvidia-ml.so.1"]
        if missing:
            # Exact names in `local:` win over the `global: *` wildcard: these are not exported.
            script = out.with_suffix(".map")
            script.write_text(f"{{\n  global: *;\n  local: {'; '.join(missing)};\n}};\n")
            cmd.append(f"-Wl,--version-script={script}")
        _cc([*cmd, str(self.nvml_object), "-o", str(out)])

    def nvml_without(self, missing: list[str]) -> Path:
        """libnvidia-ml lacking `missing` (an older driver), linked once per distinct set."""
        if not missing:
            return self.nvml
        key = hashlib.sha256(" ".join(sorted(missing)).encode()).hexdigest()[:12]
        out = self.build_dir / f"libnvidia-ml-without-{key}.so"
        if not out.exists():
            self._link_nvml(out, sorted(missing))
        return out
