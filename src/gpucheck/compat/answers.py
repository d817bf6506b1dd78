"""Answers to the questions a person choosing what to install asks (`gpucheck compat ...`),
and the one every fix suggestion needs: the newest framework build that fits a machine.

Each answer is a plain dict (the JSON keys are public interface) plus the sources it rests
on. A version the data does not know is an UnknownVersion error with the closest known ones,
unless a rule answers it (a torch wheel's +cuXYZ tag names its CUDA).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

import msgspec
from msgspec import Struct, field
from packaging.version import Version

from gpucheck.compat import TOPICS, Compat, CompatError, driver_text, read_topic
from gpucheck.compat.frameworks import cuda_of_local_tag, major_minor
from gpucheck.compat.rows import parse_version

TORCH_INDEX = "https://download.pytorch.org/whl/cu{tag}"
TF_AND_CUDA_FIRST = Version("2.14")  # the first release with the tensorflow[and-cuda] extra


class UnknownVersion(CompatError):
    """Not in the data and no rule answers it; the message suggests the closest known."""


class Pick(Struct, frozen=True, omit_defaults=True):
    """A framework release for a fix or an answer: the newest that fits a machine."""

    version: str  # the release line: "2.9"
    cuda: str  # the CUDA it is built with
    install: str  # the pip command
    cudnn: str | None = None  # TensorFlow's tested cuDNN


class Answer(Struct):
    data: dict[str, Any]
    sources: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**self.data, "sources": list(dict.fromkeys(self.sources))}


def _plain(pick: Pick | None) -> dict[str, Any] | None:
    """A pick as the JSON answer carries it (`cudnn` only for TensorFlow)."""
    return None if pick is None else msgspec.to_builtins(pick)


def _closest(wanted: str, known: Iterable[Version], n: int = 3) -> str:
    """The known versions around where `wanted` would sit (the newest ones past the end)."""
    versions = sorted(set(known))
    target = parse_version(wanted)
    at = bisect.bisect_left(versions, target) if target is not None else len(versions)
    start = max(0, min(at - n // 2 - (1 if at == len(versions) else 0), len(versions) - n))
    return ", ".join(str(v) for v in versions[start : start + n])


def _unknown(what: str, wanted: str, known: Iterable[Version]) -> UnknownVersion:
    return UnknownVersion(
        f"{what} {wanted} is not in the compat data (closest known: {_closest(wanted, known)})"
    )


def _cuda_key(variant: str) -> Version:
    return parse_version(variant) or Version("0")


# -- the newest build that fits ----------------------------------------------------------------


def _python_fits(python: str | None, low: Version | None, high: Version | None) -> bool:
    """Does a release with wheels for Pythons low..high have one for `python`? Unknown: yes."""
    have = major_minor(python) if python else None
    if have is None:
        return True
    return (low is None or have >= low) and (high is None or have <= high)


def torch_install(compat: Compat, release: Version, cuda: str, os: str = "linux") -> str:
    rel = compat.torch.release(str(release))
    spec = f"torch=={release}.*"
    # PyPI's own wheel is the default CUDA build on Linux only (on Windows it is CPU-only).
    if os == "linux" and rel is not None and rel.default_pypi_cuda == cuda:
        return f"pip install '{spec}'"
    return f"pip install '{spec}' --index-url {TORCH_INDEX.format(tag=cuda.replace('.', ''))}"


def newest_torch(
    compat: Compat,
    driver: str | None = None,
    ccs: Iterable[str] = (),
    os: str = "linux",
    python: str | None = None,
    line: str | None = None,
) -> Pick | None:
    """The newest torch release and CUDA variant that runs on `driver` (if given), carries
    code for every compute capability in `ccs` (if given; a variant whose architectures the
    data does not know is passed over, never assumed), has wheels for `python` (if given) and
    belongs to the release `line` (if given: "2.5", the line of the torch installed now)."""
    ccs = list(ccs)
    wanted = parse_version(line) if line else None
    for rel in reversed(compat.torch.releases):
        if wanted is not None and rel.version.release[:2] != wanted.release[:2]:
            continue
        if not _python_fits(python, rel.python_min, rel.python_max):
            continue
        variants = set(rel.cuda_variants)
        # A release whose variants are not published yet still has its PyPI wheel, whose
        # CUDA is known from the wheel itself (Linux; on Windows PyPI's wheel is CPU-only).
        if os == "linux" and rel.default_pypi_cuda:
            variants.add(rel.default_pypi_cuda)
        for cuda in sorted(variants, key=_cuda_key, reverse=True):
            if driver is not None and not compat.cuda_runs_on_driver(cuda, driver, os):
                continue
            if ccs:
                arch = compat.torch.arch(rel.version, cuda)
                if arch is None or not all(arch.runs_on(cc) for cc in ccs):
                    continue
            return Pick(str(rel.version), cuda, torch_install(compat, rel.version, cuda, os))
    return None


def tf_install(release: Version, package: str | None = None) -> str:
    """The pip line for a release's GPU build: the table names the package (tensorflow_gpu for
    the 1.x lines, whose `tensorflow` package had no GPU support)."""
    if release >= TF_AND_CUDA_FIRST:
        return f"pip install 'tensorflow[and-cuda]=={release}.*'"
    name = (package or "tensorflow").replace("_", "-")
    return f"pip install '{name}=={release}.*'"


def cuda_targets(compat: Compat, cuda: str, ccs: Iterable[str]) -> bool:
    """Can the toolkit of CUDA `cuda` build for every compute capability in `ccs`?"""
    rng = compat.cc_range(cuda)
    wanted = [parse_version(cc) for cc in ccs]
    return not wanted or (
        rng is not None and all(w is not None and rng.min_cc <= w <= rng.max_cc for w in wanted)
    )


def _tf_runs(how: str | None, cc: str) -> bool:
    """SASS, or PTX below compute capability 12: the pip wheels' PTX fails to load there
    (CUDA_ERROR_INVALID_PTX: tensorflow/tensorflow#99592, #101746, #90291, 2.18 - 2.20)."""
    major = parse_version(cc)
    return how == "sass" or (how == "ptx" and major is not None and major.major < 12)


def newest_tensorflow(
    compat: Compat,
    driver: str | None = None,
    ccs: Iterable[str] = (),
    os: str = "linux",
    python: str | None = None,
    line: Version | None = None,
) -> Pick | None:
    """The newest TensorFlow (of release `line` only, if given) whose tested CUDA runs on
    `driver`, whose builds carry code (SASS or PTX) for every compute capability in `ccs`,
    with wheels for `python`. The code is the line's [[gpu_code]] row, read from its wheel;
    a line without one is judged by its CUDA's architecture range."""
    ccs = list(ccs)
    for rel in reversed(compat.tensorflow.releases):
        if rel.cuda is None or (line is not None and rel.version != line):
            continue
        if not _python_fits(python, rel.python_min, rel.python_max):
            continue
        if driver is not None and not compat.cuda_runs_on_driver(rel.cuda, driver, os):
            continue
        code = compat.tensorflow.gpu_code_for(rel.version)
        if code is not None and not all(_tf_runs(code.code_for(cc), cc) for cc in ccs):
            continue
        if code is None and not cuda_targets(compat, rel.cuda, ccs):
            continue
        return Pick(str(rel.version), rel.cuda, tf_install(rel.version, rel.package), rel.cudnn)
    return None


def newest_cuda_for_cc(compat: Compat, cc: str) -> str | None:
    if parse_version(cc) is None:
        return None
    for tk in reversed(compat.toolkits):
        if cuda_targets(compat, str(tk.version), [cc]):
            return f"{tk.version.major}.{tk.version.minor}"
    return None


# -- one answer per `gpucheck compat` subject ------------------------------------------------------


def tensorflow(compat: Compat, version: str) -> Answer:
    tf = compat.tensorflow
    rel = tf.release(version)
    if rel is None:
        raise _unknown("TensorFlow", version, (r.version for r in tf.releases))
    last_windows = tf.windows_native_gpu_last
    data: dict[str, Any] = {
        "version": str(rel.version),
        "cuda": rel.cuda,
        "cudnn": rel.cudnn,
        "python_min": str(rel.python_min) if rel.python_min else None,
        "python_max": str(rel.python_max) if rel.python_max else None,
        "windows_native_gpu": bool(last_windows and rel.version <= last_windows),
    }
    sources = [rel.source]
    and_cuda = tf.and_cuda_for(version)
    data["and_cuda_requires"] = list(and_cuda.requires) if and_cuda is not None else None
    if and_cuda is not None:
        sources.append(and_cuda.source)
    data["install"] = tf_install(rel.version, rel.package)
    if not data["windows_native_gpu"]:
        sources.append(tf.windows_native_gpu_source)
    return Answer(data, sources)


def torch(compat: Compat, version: str) -> Answer:
    data = compat.torch
    rel = data.release(version)
    tag_cuda = cuda_of_local_tag(version)
    if rel is None:
        if tag_cuda is None:
            raise _unknown("PyTorch", version, (r.version for r in data.releases))
        # Newer than the data: the wheel's tag still says its CUDA; nothing else is guessed.
        return Answer(
            {
                "version": version,
                "known": False,
                "cuda_variants": None,
                "python_min": None,
                "python_max": None,
                "default_pypi_cuda": None,
                "rocm_variants": None,
                "architectures": None,
                "cuda": tag_cuda,
            }
        )
    published = [*rel.cuda_variants, *([rel.default_pypi_cuda] if rel.default_pypi_cuda else [])]
    if tag_cuda is not None and rel.cuda_variants and tag_cuda not in published:
        # (an empty list is "not published yet": any tag may still come, nothing is refused)
        tags = ", ".join(f"+cu{v.replace('.', '')}" for v in rel.cuda_variants)
        raise UnknownVersion(
            f"PyTorch {version.strip()} is not a published build: {rel.version} was published "
            f"for CUDA {', '.join(rel.cuda_variants)} ({tags})"
        )
    archs: dict[str, Any] = {}
    sources = [rel.source]
    # The architectures the doctor would judge with: per published variant, and for the
    # default PyPI build too (the only one known while the variants are not yet published).
    variants = list(rel.cuda_variants)
    if rel.default_pypi_cuda and rel.default_pypi_cuda not in variants:
        variants.append(rel.default_pypi_cuda)
    for cuda in variants:
        arch = data.arch(rel.version, cuda)
        archs[cuda] = {"sm": list(arch.sm), "ptx": list(arch.ptx)} if arch else None
        if arch:
            sources.append(arch.source)
    answer: dict[str, Any] = {
        "version": str(rel.version),
        "known": True,
        # Empty in the data: not published yet (unknown), not "none".
        "cuda_variants": list(rel.cuda_variants) or None,
        "python_min": str(rel.python_min) if rel.python_min else None,
        "python_max": str(rel.python_max) if rel.python_max else None,
        "default_pypi_cuda": rel.default_pypi_cuda,
        "rocm_variants": list(rel.rocm_variants),
        "architectures": archs or None,
    }
    answer["cuda"] = tag_cuda  # the wheel's own CUDA, when the version has a +cuXYZ tag
    return Answer(answer, sources)


def jax(compat: Compat, version: str) -> Answer:
    rel = compat.jax.release(version)
    if rel is None:
        raise _unknown("JAX", version, (r.version for r in compat.jax.releases))
    return Answer(
        {
            "version": version,
            "row": str(rel.version),
            "cuda_min": rel.cuda_min,
            "cudnn_min": rel.cudnn_min,
            "python_min": str(rel.python_min) if rel.python_min else None,
            "cuda_majors": list(rel.cuda_majors),
            "packages": list(rel.packages),
        },
        [rel.source],
    )


def cudnn(compat: Compat, version: str) -> Answer:
    rel = compat.cudnn.release(version)
    answered_by = version
    if rel is None:
        # cuDNN patch releases of one major.minor are compatible with each other (NVIDIA's
        # API compatibility rules in the cuDNN Developer Guide): answer from the newest known
        # patch of the same line, and say that it is that row.
        wanted = parse_version(version)
        same_line = [
            r
            for r in compat.cudnn.releases
            if wanted is not None
            and (v := parse_version(str(r.version))) is not None
            and v.release[:2] == wanted.release[:2]
        ]
        if not same_line:
            raise _unknown("cuDNN", version, (r.version for r in compat.cudnn.releases))
        rel = max(same_line, key=lambda r: parse_version(str(r.version)) or Version("0"))
        answered_by = str(rel.version)
    return Answer(
        {
            "version": version,
            "answered_by": answered_by,  # the data's row: another patch of the same line
            "cuda": list(rel.cuda),
            "cuda_majors": list(rel.cuda_majors),
            "min_driver_linux": rel.min_driver_linux,
            "min_driver_windows": rel.min_driver_windows,
            # An empty list in the data means the source did not say: unknown, not "none".
            "compute_capabilities": list(rel.compute_capabilities) or None,
        },
        [rel.source],
    )


def driver(compat: Compat, version: str, os: str = "linux") -> Answer:
    parsed = parse_version(version)
    if parsed is None:
        raise UnknownVersion(f"{version!r} is not a driver version (like 535.104.05)")
    max_cuda = compat.max_cuda_for_driver(version, os)
    if max_cuda is None:
        oldest = compat.toolkits[0] if compat.toolkits else None
        need = oldest.min_driver_linux if oldest else None
        start = (
            f" (the data starts at CUDA {oldest.version}, driver {driver_text(need)})"
            if oldest and need
            else ""
        )
        raise UnknownVersion(f"driver {version} runs no CUDA release in the compat data{start}")
    majors = sorted({t.version.major for t in compat.toolkits})
    floors = {m: compat.minor_compat_floor(m, os) for m in majors if m >= 11}
    compatible = [m for m, floor in floors.items() if floor is not None and parsed >= floor]
    return Answer(
        {
            "driver": version,
            "os": os,
            "max_cuda": str(max_cuda),
            "minor_compat_majors": compatible,
            "newest_torch": _plain(newest_torch(compat, driver=version, os=os)),
            "newest_tensorflow": _plain(newest_tensorflow(compat, driver=version, os=os)),
        },
        [rel.source for rel in (compat.release(str(max_cuda)),) if rel is not None],
    )


def cuda(compat: Compat, version: str) -> Answer:
    rel = compat.release(version)
    if rel is None:
        raise _unknown("CUDA", version, (t.version for t in compat.toolkits))
    rng = compat.cc_range(version)
    mm = major_minor(rel.version)
    floor = compat.minor_compat_floor(rel.version.major)
    return Answer(
        {
            "version": version,
            "release": rel.label,
            "min_driver_linux": driver_text(rel.min_driver_linux) if rel.min_driver_linux else None,
            "min_driver_windows": driver_text(rel.min_driver_windows)
            if rel.min_driver_windows
            else None,
            "minor_compat_min_driver_linux": driver_text(floor) if floor else None,
            "min_compute_capability": str(rng.min_cc) if rng else None,
            "max_compute_capability": str(rng.max_cc) if rng else None,
            "cuda": str(mm),
        },
        [rel.source, *([rng.source] if rng else [])],
    )


def gpu(compat: Compat, name: str) -> Answer:
    if not name.strip():  # (every known GPU would be as close as any other)
        raise UnknownVersion('GPU name is empty: give one as nvidia-smi names it ("H100")')
    model, several = compat.gpus.find(name)
    if model is None and several:
        raise UnknownVersion(
            f"GPU {name!r} names several known GPUs: {', '.join(several[:6])}"
            + (f" and {len(several) - 6} more" if len(several) > 6 else "")
            + ": name one"
        )
    if model is None:
        close = compat.gpus.suggestions(name)
        hint = f" (closest known: {', '.join(close)})" if close else ""
        raise UnknownVersion(f"GPU {name!r} is not in the compat data{hint}")
    cc = model.compute_capability
    return Answer(
        {
            "name": model.name,
            "compute_capability": cc,
            "architecture": model.architecture,
            "segment": model.segment,
            "newest_cuda": newest_cuda_for_cc(compat, cc),
            "newest_torch": _plain(newest_torch(compat, ccs=[cc])),
            "newest_tensorflow": _plain(newest_tensorflow(compat, ccs=[cc])),
        },
        [model.source],
    )


def about(compat: Compat) -> dict[str, Any]:
    files: dict[str, Any] = {}
    dates: list[str] = []
    sources: set[str] = set()
    for name in TOPICS:
        _, data = read_topic(compat.dirs, name)
        counts = {k: len(v) for k, v in data.items() if isinstance(v, list)}
        for rows in data.values():
            if isinstance(rows, list):
                sources.update(r["source"] for r in rows if isinstance(r, dict) and "source" in r)
        date = str(data.get("data_as_of", ""))
        dates.append(date)
        files[name] = {"data_as_of": date, "rows": counts}
    return {
        "data_as_of": min(d for d in dates if d) if any(dates) else None,
        "folders": [str(d) for d in compat.dirs],
        "files": files,
        "distinct_sources": len(sources),
    }
