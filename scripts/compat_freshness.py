"""Maintainer tool: is the compat data (compat/*.toml) still current?

Asks the package registry (PyPI's simple index, JSON form) for the newest final release of every
framework and library the data covers, and reports what the data lacks: a torch, TensorFlow or
jaxlib line with no row, a torch line with no CUDA variants, a cuDNN release no row covers, a CUDA
minor no toolkit row names. It also prints each file's `data_as_of` and its age.

    python scripts/compat_freshness.py [--index-url URL] [--json]

Exit 0: nothing lacking; 1: something is (the list says what); 2: the registry could not be read.

This is never run by gpucheck itself (gpucheck does no network access at run time); it is for
whoever brings the data up to date. The test suite checks the other half offline: every file's
`data_as_of` must be at most MAX_DATA_AGE_DAYS old (tests/compat/test_compat_history.py).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

# The documented limit: compat data older than this fails the test suite loudly.
MAX_DATA_AGE_DAYS = 120

DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class Watched:
    package: str  # the registry's name
    topic: str  # the compat file it is checked against
    check: str  # "torch", "extension", "tensorflow", "jax", "cudnn" or "cuda"


WATCHED: tuple[Watched, ...] = (
    Watched("torch", "torch.toml", "torch"),
    # The extensions that pin torch and whose pairings the data holds (gpucheck install moves them).
    Watched("torchvision", "extensions.toml", "extension"),
    Watched("torchaudio", "extensions.toml", "extension"),
    Watched("tensorflow", "tensorflow.toml", "tensorflow"),
    Watched("jaxlib", "jax.toml", "jax"),
    Watched("nvidia-cudnn-cu12", "cudnn.toml", "cudnn"),
    Watched("nvidia-cudnn-cu13", "cudnn.toml", "cudnn"),
    Watched("nvidia-cuda-runtime-cu12", "cuda.toml", "cuda"),
    Watched("nvidia-cuda-runtime", "cuda.toml", "cuda"),
)


def newest_final(versions: Iterable[str]) -> str | None:
    """The newest version that is neither a pre-release nor a dev release."""
    best: Version | None = None
    for text in versions:
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if not v.is_prerelease and not v.is_devrelease and (best is None or v > best):
            best = v
    return str(best) if best is not None else None


def registry_versions(package: str, index_url: str = DEFAULT_INDEX) -> list[str]:
    """Every version the index lists for `package` (PEP 691 JSON form of the simple index)."""
    request = urllib.request.Request(
        f"{index_url.rstrip('/')}/{package}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        data = json.load(response)
    versions = data.get("versions")
    if isinstance(versions, list):
        return [str(v) for v in versions]
    # Older index servers: versions only from the file names (name-version-...).
    out = []
    for f in data.get("files", []):
        parts = str(f.get("filename", "")).split("-")
        if len(parts) > 1:
            out.append(parts[1].removesuffix(".tar.gz").removesuffix(".zip"))
    return out


def lacking(compat: object, newest: dict[str, str]) -> list[str]:
    """What the data lacks for the newest releases in `newest` (package -> version)."""
    from gpucheck.compat import Compat

    assert isinstance(compat, Compat)
    out: list[str] = []
    for w in WATCHED:
        version = newest.get(w.package)
        if version is None:
            continue
        v = Version(version)
        line = f"{v.major}.{v.minor}"
        if w.check == "torch":
            rel = compat.torch.release(version)
            if rel is None:
                out.append(f"torch {version}: no row for the {line} line in {w.topic}")
            elif not rel.cuda_variants:
                out.append(f"torch {version}: the {line} row has no cuda_variants in {w.topic}")
        elif w.check == "extension":
            if compat.extensions.torch_for(w.package, version) is None:
                out.append(f"{w.package} {version}: no pairing row names it in {w.topic}")
        elif w.check == "tensorflow":
            if compat.tensorflow.release(version) is None:
                out.append(f"tensorflow {version}: no row for the {line} line in {w.topic}")
        elif w.check == "jax":
            if compat.jax.release(version) is None:
                out.append(f"jaxlib {version}: no row covers it in {w.topic}")
        elif w.check == "cudnn":
            if compat.cudnn.release(version) is None:
                out.append(f"cuDNN {version} ({w.package}): no row covers it in {w.topic}")
        elif w.check == "cuda" and compat.release(line) is None:
            out.append(f"CUDA {line} ({w.package} {version}): no toolkit row in {w.topic}")
    return out


def newer_than_data(compat: object, package: str, versions: Iterable[str]) -> list[str]:
    """The final releases of torch (a line after the data's newest) or of a paired extension
    (no pairing row names it) that the data does not know, oldest first: what `gpucheck
    install` cannot choose until a maintainer adds them."""
    from gpucheck.compat import Compat

    assert isinstance(compat, Compat)
    finals = sorted((Version(v) for v in versions if _final(v)), key=lambda v: v)
    if package == "torch":
        newest = max(r.version for r in compat.torch.releases)
        return [str(v) for v in finals if Version(f"{v.major}.{v.minor}") > newest]
    return [str(v) for v in finals if compat.extensions.torch_for(package, str(v)) is None]


def _final(text: str) -> bool:
    try:
        v = Version(text)
    except InvalidVersion:
        return False
    return not v.is_prerelease and not v.is_devrelease


def data_ages(compat: object, today: dt.date) -> dict[str, tuple[str, int | None]]:
    """Each compat file's data_as_of and its age in days (None: no valid date)."""
    from gpucheck.compat import TOPICS, Compat, read_topic

    assert isinstance(compat, Compat)
    ages: dict[str, tuple[str, int | None]] = {}
    for name in TOPICS:
        _, data = read_topic(compat.dirs, name)
        text = str(data.get("data_as_of", ""))
        try:
            ages[name] = (text, (today - dt.date.fromisoformat(text)).days)
        except ValueError:
            ages[name] = (text, None)
    return ages


def main(
    argv: list[str] | None = None,
    fetch: Callable[[str, str], list[str]] = registry_versions,
) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-url", default=DEFAULT_INDEX, help="simple index to ask")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from gpucheck.compat import load

    compat = load()
    newest: dict[str, str] = {}
    newer: dict[str, list[str]] = {}
    errors: list[str] = []
    for w in WATCHED:
        try:
            versions = fetch(w.package, args.index_url)
        except (OSError, ValueError) as exc:
            errors.append(f"{w.package}: the registry could not be read ({exc})")
            continue
        version = newest_final(versions)
        if version is not None:
            newest[w.package] = version
        if w.check in ("torch", "extension"):
            unknown = newer_than_data(compat, w.package, versions)
            if unknown:
                newer[w.package] = unknown
    gaps = lacking(compat, newest)
    ages = data_ages(compat, dt.date.today())
    if args.json:
        report = {"newest": newest, "newer": newer, "lacking": gaps, "errors": errors, "ages": ages}
        print(json.dumps(report))
    else:
        for name, (date, age) in ages.items():
            old = age is not None and age > MAX_DATA_AGE_DAYS
            stale = f" (older than {MAX_DATA_AGE_DAYS} days)" if old else ""
            days = "?" if age is None else str(age)
            print(f"{name}: data_as_of {date or '?'}, {days} days{stale}")
        for package, version in newest.items():
            print(f"registry: {package} {version}")
        for package, versions in newer.items():
            print(f"newer than the data: {package} {', '.join(versions)}")
        for line in errors:
            print(f"error: {line}")
        print("lacking:" if gaps else "lacking: nothing")
        for line in gaps:
            print(f"  {line}")
    if errors:
        return 2
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
