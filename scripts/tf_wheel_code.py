"""Maintainer tool: the GPU code (SASS, PTX architectures) a TensorFlow wheel's libraries carry.

Downloads one wheel from the package registry with pip (Linux manylinux, x86_64 or aarch64, the
newest Python tag the release has), extracts the shared libraries TensorFlow built one at a time
(`_pywrap_tensorflow_internal.so`, `libtensorflow_framework.so.*`, `libtensorflow_cc.so.*`, the
kernel libraries under `python/`, `core/kernels/`, `contrib/`; not a bundled third-party library
such as TensorRT's libnvinfer), reads each one's fat binary headers with
gpucheck's own reader (gpucheck.probes.fatbin) and deletes it before the next, then prints the
union of SASS and PTX with the wheel's file name and sha256, ready for a `[[gpu_code]]` row of
compat/tensorflow.toml:

    python scripts/tf_wheel_code.py tensorflow==2.15.0 [--arch aarch64] [--keep DIR] [--json]
    python scripts/tf_wheel_code.py --wheel PATH.whl     # a wheel already downloaded

Exit 0: read (the union may be empty: a CPU-only wheel); 1: the wheel could not be downloaded or a
library in it could not be read; 2: usage. The wheel is deleted afterwards unless --keep names a
folder to keep it in. Never run by gpucheck itself (it does no network access at run time).

`read_wheel_code(wheel, wanted)` is the part another framework's wheels can share.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpucheck.model.compiled_code import CompiledCode
from gpucheck.probes.fatbin import read_compiled_code

# pip's platform tags for a Linux wheel, newest manylinux first; the Python versions to ask for,
# newest first (the first a release has a wheel for wins: the GPU code is the same for each).
PLATFORMS = {
    "x86_64": [
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
        "manylinux2010_x86_64",
        "manylinux1_x86_64",
        "linux_x86_64",
    ],
    "aarch64": [
        "manylinux_2_28_aarch64",
        "manylinux_2_27_aarch64",
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
        "linux_aarch64",
    ],
}
PYTHONS = ["3.13", "3.12", "3.11", "3.10", "3.9", "3.8", "3.7", "3.6", "3.5", "2.7"]


@dataclass
class WheelCode:
    """What one wheel's libraries carry: per library (those with any GPU code) and their union."""

    wheel: str
    sha256: str
    libraries: dict[str, CompiledCode] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    build_info: list[str] = field(default_factory=list)  # what build_info.py claims, to compare

    def union(self) -> CompiledCode:
        return union_of(self.libraries.values())


def is_shared_library(member: str) -> bool:
    """A wheel member that is a shared library: `x.so`, `libx.so.2`, `libx.so.2.15.0`."""
    name = member.rsplit("/", 1)[-1]
    stem, dot_so, version = name.partition(".so")
    return bool(stem) and bool(dot_so) and (not version or version[1:].replace(".", "").isdigit())


def is_tensorflow_library(member: str) -> bool:
    """A shared library TensorFlow built: not a bundled third-party one (tensorflow_gpu 1.7 ships
    NVIDIA's TensorRT libnvinfer.so.4 under external/, with NVIDIA's own architecture list)."""
    parts = member.split("/")
    third_party = "external" in parts[:-1] or parts[-1].startswith(("libnv", "libcu"))
    return is_shared_library(member) and not third_party


def _arch_key(arch: str) -> tuple[int, int, str]:
    major, _, rest = arch.partition(".")
    minor = rest.rstrip("af")
    return int(major), int(minor), rest[len(minor) :]


def union_of(codes: Iterable[CompiledCode]) -> CompiledCode:
    """Every SASS and PTX architecture any of `codes` carries, in capability order."""
    sass: set[str] = set()
    ptx: set[str] = set()
    for code in codes:
        sass.update(code.sass)
        ptx.update(code.ptx)
    ordered = (tuple(sorted(archs, key=_arch_key)) for archs in (sass, ptx))
    return CompiledCode(*ordered)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def claimed_capabilities(build_info: str) -> list[str]:
    """The `cuda_compute_capabilities` entries a TensorFlow build_info.py names ("sm_60",
    "compute_90"); the wheel's own fat binaries are the truth this is compared against."""
    start = build_info.find("cuda_compute_capabilities")
    if start < 0:
        return []
    end = build_info.find("]", start)
    return re.findall(r"(?:sm|compute)_[0-9]+[a-z]?", build_info[start:end])


def read_wheel_code(
    wheel: Path, wanted: Callable[[str], bool] = is_tensorflow_library
) -> WheelCode:
    """Read every `wanted` member of `wheel`, extracting one at a time into a temporary folder
    that is emptied before the next (a TF wheel's largest library is about 1 GB unpacked)."""
    found = WheelCode(wheel=wheel.name, sha256=sha256_of(wheel))
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
        for info in archive.infolist():
            if info.filename.endswith("python/platform/build_info.py"):
                text = archive.read(info).decode("utf-8", "replace")
                found.build_info = claimed_capabilities(text)
            if info.is_dir() or not wanted(info.filename):
                continue
            target = Path(scratch) / "lib.so"
            with archive.open(info) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            code = read_compiled_code(str(target))
            target.unlink()
            if code is None:
                found.unreadable.append(info.filename)
            elif not code.empty():
                found.libraries[info.filename] = code
    return found


def download_wheel(spec: str, arch: str, dest: Path) -> Path | None:
    """pip-download `spec`'s Linux wheel for `arch` into `dest`; None: no Python tag has one."""
    platforms = [f"--platform={p}" for p in PLATFORMS[arch]]
    for python in PYTHONS:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir"]
        cmd += ["--only-binary=:all:"]
        cmd += [*platforms, f"--python-version={python}", "-d", str(dest), spec]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(dest.glob("*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
    return None


def _quoted(items: Iterable[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def toml_row(version: str, code: CompiledCode, read: WheelCode) -> str:
    """The `[[gpu_code]]` row for one release line as compat/tensorflow.toml writes it."""
    return (
        f'[[gpu_code]]\nversion = "{version}"\nsm = {_quoted(code.sass)}\n'
        f"ptx = {_quoted(code.ptx)}\nbuild_info = {_quoted(read.build_info)}\n"
        f'source = "{read.wheel} sha256:{read.sha256} (python scripts/tf_wheel_code.py)"\n'
    )


def _line_of(wheel: str) -> str:
    version = wheel.split("-")[1]
    return ".".join(version.split(".")[:2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", nargs="?", help="a pip requirement: tensorflow==2.15.0")
    parser.add_argument("--wheel", type=Path, help="read this wheel instead of downloading one")
    parser.add_argument("--arch", choices=sorted(PLATFORMS), default="x86_64")
    parser.add_argument("--keep", type=Path, help="keep the downloaded wheel in this folder")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a row")
    args = parser.parse_args(argv)
    if (args.spec is None) == (args.wheel is None):
        parser.error("give either a requirement (tensorflow==2.15.0) or --wheel PATH")
    with tempfile.TemporaryDirectory() as scratch:
        wheel = args.wheel
        if wheel is None:
            dest = args.keep or Path(scratch)
            dest.mkdir(parents=True, exist_ok=True)
            wheel = download_wheel(args.spec, args.arch, dest)
            if wheel is None:
                print(f"error: no Linux {args.arch} wheel of {args.spec} on the registry")
                return 1
        elif not wheel.is_file():
            print(f"error: {wheel}: no such wheel")
            return 2
        read = read_wheel_code(wheel)
    code = read.union()
    if args.json:
        libraries = {k: {"sass": v.sass, "ptx": v.ptx} for k, v in read.libraries.items()}
        body = {"wheel": read.wheel, "sha256": read.sha256, "sass": code.sass, "ptx": code.ptx}
        extra = {"build_info": read.build_info, "unreadable": read.unreadable}
        print(json.dumps({**body, "libraries": libraries, **extra}))
    else:
        for name, lib in read.libraries.items():
            print(f"# {name}: sm {','.join(lib.sass)} ptx {','.join(lib.ptx)}")
        print(toml_row(_line_of(read.wheel), code, read), end="")
    if read.unreadable:
        print(f"error: could not read {', '.join(read.unreadable)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
