"""Maintainer tool: which GPU architectures a kernel package's release carries code for, read from
its own wheel (compat/extensions.toml [[kernel_archs]] is written from this).

    python scripts/wheel_archs.py vllm==0.9.2 [--json] [--cache DIR] [--keep] [--only WORD]
    python scripts/wheel_archs.py path/to/some.whl

Downloads the release's Linux x86_64 wheel with `pip download --no-deps` (any Python tag it has;
nothing is installed), extracts its shared libraries one at a time into a temporary folder, reads
each one's fat binary headers (gpucheck.probes.fatbin: SASS and PTX architectures; nothing is
loaded or run) and deletes it. Prints the wheel's file name and sha256, then one line per library
that carries GPU code. The downloaded wheel is deleted too unless --keep (a wheel is hundreds of
MB). Exit 0: read; 1: the release has no such wheel or it could not be read; 2: usage.

gpucheck itself never runs this (it does no network access at run time).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from gpucheck.probes.fatbin import read_entry_counts

# {arch: entries} for SASS, then for PTX: one entry per compiled source file and arch.
Counts = tuple[dict[str, int], dict[str, int]]

# Tried in order: the first Python tag the release has a wheel for (abi3 wheels match them all).
PYTHON_TAGS = ("3.10", "3.11", "3.12", "3.9", "3.8", "3.13")
# manylinux tags an x86_64 CUDA wheel on PyPI is published under, newest first.
PLATFORMS = (
    "manylinux_2_35_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
)
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.!+_-]+)$")
_SHARED_LIBRARY = re.compile(r"\.so(\.\d+)*$")


class UsageError(ValueError):
    """A target that is neither `package==version` nor an existing .whl file."""


def parse_requirement(text: str) -> tuple[str, str]:
    """("vllm", "0.9.2") from "vllm==0.9.2"; UsageError for anything but an exact pin."""
    found = _REQUIREMENT.match(text.strip())
    if found is None:
        raise UsageError(f"{text!r}: give package==version (an exact release) or a .whl file")
    return found.group(1), found.group(2)


def shared_libraries(members: Iterable[str]) -> list[str]:
    """The wheel members that are shared libraries (`_C.abi3.so`, `libfoo.so.12`), sorted."""
    return sorted(m for m in members if _SHARED_LIBRARY.search(m) and not m.endswith("/"))


def download_command(package: str, version: str, python: str, dest: Path) -> list[str]:
    """pip's command that fetches this release's Linux x86_64 wheel for `python`, alone."""
    platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
        "--only-binary=:all:", "--python-version", python, *platforms,
        "--dest", str(dest), "--quiet", f"{package}=={version}",
    ]  # fmt: skip


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(package: str, version: str, dest: Path) -> Path | None:
    """The wheel pip fetched into `dest` for the first Python tag that has one, or None."""
    for python in PYTHON_TAGS:
        before = set(dest.glob("*.whl"))
        done = subprocess.run(
            download_command(package, version, python, dest),
            capture_output=True,
            text=True,
            check=False,
        )
        fetched = sorted(set(dest.glob("*.whl")) - before)
        if done.returncode == 0 and fetched:
            return fetched[0]
    return None


def read_wheel(wheel: Path, only: Sequence[str] = ()) -> dict[str, Counts | None]:
    """Each shared library's GPU code (None: unreadable), extracting one at a time; with
    `only`, the libraries whose path contains one of those words alone."""
    found: dict[str, Counts | None] = {}
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
        for member in shared_libraries(archive.namelist()):
            if only and not any(word in member for word in only):
                continue
            extracted = Path(archive.extract(member, scratch))
            try:
                found[member] = read_entry_counts(str(extracted))
            finally:
                extracted.unlink()
    return found


def _listed(counts: dict[str, int]) -> str:
    return ",".join(f"{arch}({n})" for arch, n in counts.items()) or "-"


def describe(code: Counts | None) -> str:
    """One library's code in words, with each arch's entry count:
    "sass 5.2(3),8.0(250),9.0a(12) ptx 8.0(250)"."""
    if code is None:
        return "unreadable"
    sass, ptx = code
    return f"sass {_listed(sass)} ptx {_listed(ptx)}"


def _gpu(libraries: dict[str, Counts | None]) -> dict[str, Counts | None]:
    """The libraries that carry GPU code, or could not be read."""
    return {name: c for name, c in libraries.items() if c is None or c[0] or c[1]}


def report_text(wheel: str, digest: str, libraries: dict[str, Counts | None]) -> str:
    """The text report: the wheel, then each library that carries GPU code (or is unreadable)."""
    lines = [f"{wheel} sha256={digest}"]
    gpu = _gpu(libraries)
    lines += [f"  {name}: {describe(code)}" for name, code in gpu.items()]
    if not gpu:
        lines.append("  no library carries GPU code")
    return "\n".join(lines)


def report_json(wheel: str, digest: str, libraries: dict[str, Counts | None]) -> str:
    libs = {
        name: None if code is None else {"sass": code[0], "ptx": code[1]}
        for name, code in _gpu(libraries).items()
    }
    return json.dumps({"wheel": wheel, "sha256": digest, "libraries": libs})


def _fetch(target: str, dest: Path) -> Path | str:
    """The wheel to read: `target` itself, or the one pip fetches into `dest`; else the error."""
    if target.endswith(".whl"):
        return Path(target) if Path(target).is_file() else f"{target}: no such file"
    package, version = parse_requirement(target)
    dest.mkdir(parents=True, exist_ok=True)
    return download(package, version, dest) or f"{target}: no Linux x86_64 wheel"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("target", help="package==version, or a .whl file")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    parser.add_argument("--cache", type=Path, help="download into DIR (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the downloaded wheel")
    parser.add_argument(
        "--only", action="append", default=[], metavar="WORD", help="read only libraries whose "
        "path holds WORD (repeatable): common_ops, _C. (a 500 MB wheel reads in seconds)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            wheel = _fetch(args.target, args.cache or Path(scratch))
        except UsageError as err:
            print(f"wheel_archs: {err}", file=sys.stderr)
            return 2
        if isinstance(wheel, str):
            print(f"wheel_archs: {wheel}", file=sys.stderr)
            return 2 if args.target.endswith(".whl") else 1
        try:
            digest, libraries = sha256(wheel), read_wheel(wheel, args.only)
        except (OSError, zipfile.BadZipFile) as err:
            print(f"wheel_archs: {wheel.name}: cannot be read ({err})", file=sys.stderr)
            return 1
        finally:
            if not args.target.endswith(".whl") and not args.keep:
                wheel.unlink(missing_ok=True)
    report = report_json if args.json else report_text
    print(report(wheel.name, digest, libraries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
