"""What the framework checks share: the facts of each framework in each Python environment,
the GPUs a build must run on, the build a fix should install (the newest that fits this driver,
these GPUs and this Python, from the compat data), and how one verdict per environment becomes
one finding.

An environment is one interpreter (`Snapshot.environments`). Every check judges each
environment that has its framework and says which one in the evidence when there are several;
a check with no environment holding its framework has nothing to say (no finding at all).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from gpucheck.checks.context import Context, gpu_label
from gpucheck.checks.model import Outcome, Status
from gpucheck.compat import driver_text, parse_version
from gpucheck.compat.answers import newest_tensorflow, newest_torch
from gpucheck.compat.frameworks import code_for, cuda_of_local_tag, major_minor
from gpucheck.distributions import TF_DISTS
from gpucheck.snapshot import Distribution, FrameworkRuntime, PythonEnvironment

# --- environments ------------------------------------------------------------------------------


def many_envs(ctx: Context) -> bool:
    return len(ctx.snapshot.environments) > 1


def env_os(ctx: Context, env: PythonEnvironment) -> str:
    """linux | windows | darwin | ...: the environment's sys.platform, else the machine's OS."""
    platform = (env.platform or "").lower()
    if platform.startswith("win"):
        return "windows"
    if platform.startswith("linux"):
        return "linux"
    if platform:
        return platform
    return (ctx.snapshot.system.os or "linux").lower()


def compat_os(ctx: Context, env: PythonEnvironment) -> str:
    """The OS column of the driver tables: windows or linux."""
    return "windows" if env_os(ctx, env) == "windows" else "linux"


def linux_x86_64(ctx: Context, env: PythonEnvironment) -> bool:
    """The compat data's per-wheel facts (compiled architectures, pip pins) are for these."""
    return env_os(ctx, env) == "linux" and ctx.snapshot.system.arch.lower() in ("x86_64", "amd64")


def python_mm(env: PythonEnvironment) -> Version | None:
    return major_minor(env.version) if env.version else None


def in_range(py: Version, low: Version | None, high: Version | None) -> bool:
    lo, hi = major_minor(low), major_minor(high)
    return (lo is None or py >= lo) and (hi is None or py <= hi)


_PIP = re.compile(r"(?<![\w./\\-])(?<!-m )pip (?=install|uninstall)")


def pip(ctx: Context, env: PythonEnvironment, command: str) -> str:
    """A pip command as the user types it for this environment: plain `pip` when it is the only
    one (the active one), else that interpreter's own pip, so the fix lands where it should."""
    if not (many_envs(ctx) or env.origin == "--python"):
        return command
    python = f'"{env.python}"' if " " in env.python else env.python
    return _PIP.sub(lambda _: f"{python} -m pip ", command)


def runtime(env: PythonEnvironment, framework: str) -> FrameworkRuntime | None:
    """What the deep pass saw when importing `framework` here (None: not imported)."""
    found = [r for r in env.runtimes if r.framework == framework]
    return found[-1] if found else None


def version_key(text: str | None) -> Version:
    return parse_version(text or "") or Version("0")


# --- one verdict per environment, one finding per check -------------------------------------------

RANK = {Status.ERROR: -1, Status.FAIL: 0, Status.WARN: 1, Status.INFO: 2, Status.PASS: 3}


def merge(items: Iterable[tuple[str | None, Outcome | None]]) -> Outcome | None:
    """The worst outcome decides status, title and fix; the others' titles and everyone's
    evidence follow, each line prefixed with its label (where there is one)."""
    found = [(label, v) for label, v in items if v is not None]
    if not found:
        return None

    def tag(label: str | None, line: str) -> str:
        return f"{label}: {line}" if label else line

    found.sort(key=lambda item: RANK.get(item[1].status, 4))
    worst = found[0][1].status
    top = [v for _, v in found if v.status is worst]
    title = top[0].title + (f" (and {len(top) - 1} more)" if len(top) > 1 else "")
    first_label, first = found[0]
    evidence = [tag(first_label, line) for line in first.evidence]
    for label, v in found[1:]:
        evidence += [tag(label, v.title), *(tag(label, line) for line in v.evidence)]
    fixes = list(dict.fromkeys(v.fix for v in top if v.fix))
    return Outcome(worst, title, evidence, "; ".join(fixes) or None)


def env_label(ctx: Context, env: PythonEnvironment) -> str | None:
    return env.python if many_envs(ctx) else None


def combine(
    ctx: Context, verdicts: Iterable[tuple[PythonEnvironment, Outcome | None]]
) -> Outcome | None:
    """One finding from one verdict per environment (see merge); the interpreter is named on
    every evidence line when there is more than one environment."""
    return merge((env_label(ctx, env), v) for env, v in verdicts)


# --- the GPUs a build must run on ----------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    label: str
    cc: str
    index: int | None = None


def targets(ctx: Context) -> list[Target]:
    """The GPUs CUDA programs here would use (CUDA_VISIBLE_DEVICES honoured; all of them when it
    hides every GPU), with a known compute capability; from NVML, else from libcuda."""
    gpus = [g for g in (ctx.visibility.visible or ctx.gpus) if g.handle_error is None]
    if gpus:
        return [
            Target(gpu_label(g), g.compute_capability, g.index)
            for g in gpus
            if g.compute_capability and parse_version(g.compute_capability)
        ]
    drv = ctx.snapshot.cuda.driver
    if drv.init_result != 0:
        return []
    return [
        Target(f"CUDA device {d.index} ({d.name or 'unknown GPU'})", d.compute_capability, d.index)
        for d in drv.devices
        if d.compute_capability and parse_version(d.compute_capability)
    ]


def cc_list(found: list[Target]) -> list[str]:
    return sorted({t.cc for t in found}, key=version_key)


def arch_name(ctx: Context, cc: str) -> str:
    name = ctx.compat.architecture(cc)
    return f"compute capability {cc} ({name})" if name else f"compute capability {cc}"


def gpus_line(ctx: Context) -> str:
    found = targets(ctx)
    if found:
        return "NVIDIA GPU(s): " + "; ".join(f"{t.label}, compute {t.cc}" for t in found)
    return f"{ctx.pci_gpu_count} NVIDIA GPU(s) on the PCI bus"


# --- the driver ---------------------------------------------------------------------------------


def upgrade_driver(ctx: Context, cuda: str) -> str:
    mm = major_minor(cuda)
    need = ctx.compat.min_driver(cuda, ctx.os)
    if need is not None:
        return (
            f"upgrade the NVIDIA driver to {driver_text(need)} or newer "
            f"(CUDA {mm}'s minimum on {ctx.os.title()})"
        )
    floor = ctx.compat.minor_compat_floor(mm.major, ctx.os) if mm else None
    if floor is not None and mm is not None:
        return f"upgrade the NVIDIA driver to {driver_text(floor)} or newer (CUDA {mm.major}.x)"
    return f"upgrade the NVIDIA driver to one that supports CUDA {mm or cuda}"


def judge_driver(ctx: Context, cuda: str) -> tuple[Status, str] | None:
    """Does a build that brings CUDA `cuda` run on this driver? FAIL (no), INFO (yes, through
    minor version compatibility, PTX JIT aside), PASS, or None (unknown)."""
    driver = ctx.driver_version
    want = major_minor(cuda)
    if driver is None or want is None:
        return None
    runs = ctx.compat.cuda_runs_on_driver(cuda, driver, ctx.os)
    if runs is None:
        return None
    have = major_minor(ctx.driver_cuda)
    have_text = f" (CUDA {have})" if have else ""
    if not runs:
        need = ctx.compat.min_driver(cuda, ctx.os)
        floor = ctx.compat.minor_compat_floor(want.major, ctx.os) if want.major >= 11 else None
        needs = f"driver {driver_text(need)}" if need else f"a driver for CUDA {want}"
        if floor is not None:
            needs += f" (or {driver_text(floor)}+ through minor version compatibility)"
        return Status.FAIL, (
            f"CUDA {want} needs {needs}; this driver is {driver}{have_text}: CUDA fails to "
            "start (CUDA_ERROR_INSUFFICIENT_DRIVER, 'The NVIDIA driver on your system is too old')"
        )
    if have is not None and want > have:
        return Status.INFO, (
            f"CUDA {want} is newer than the driver's CUDA {have}: it runs through minor version "
            f"compatibility (driver {driver}), but PTX it JIT-compiles at run time fails "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)"
        )
    return Status.PASS, f"driver {driver}{have_text} runs CUDA {want}"


def driver_outcome(
    ctx: Context, name: str, cuda: str, fix: Callable[[], str], *evidence: str
) -> Outcome:
    """The verdict of a `*.cuda-driver` check on one build of `name` bringing CUDA `cuda`;
    `fix` is asked only when the driver is too old."""
    mm = major_minor(cuda) or cuda
    verdict = judge_driver(ctx, cuda)
    if verdict is None:
        return Outcome.skip(
            f"{name} (CUDA {mm}): not judged, the driver version is not known "
            "(see the driver checks)"
        )
    status, why = verdict
    driver = ctx.driver_version
    if status is Status.FAIL:
        return Outcome.fail(
            f"{name} (CUDA {mm}) needs a newer NVIDIA driver than {driver}",
            why,
            *evidence,
            fix=fix(),
        )
    if status is Status.INFO:
        return Outcome.info(
            f"{name} (CUDA {mm}) runs on driver {driver} through minor version compatibility",
            why,
            *evidence,
        )
    return Outcome.passed(f"{name} (CUDA {mm}) runs on driver {driver}", why, *evidence)


# --- compiled GPU architectures -------------------------------------------------------------------

_ARCH = re.compile(r"^(sm|compute)_([0-9]+)([0-9])([a-z]?)$")


@dataclass(frozen=True)
class Compiled:
    """The GPU code in a build: SASS (runs on the same major at an equal or higher minor; an
    arch-specific 'a' build only on that exact GPU) and PTX (JIT-compiled for that compute
    capability and every newer one)."""

    sass: tuple[tuple[Version, bool], ...]  # (compute capability, arch-specific)
    ptx: tuple[Version, ...]
    source: str

    def covers(self, cc: str) -> str | None:
        """'sass', 'ptx' or None (no code for this GPU)."""
        return code_for(cc, self.sass, self.ptx)

    def where(self, cc: str) -> str:
        """Why a GPU has no code: newer than everything in the build, or dropped from it."""
        want = parse_version(cc)
        known = [v for v, _ in self.sass] + list(self.ptx)
        if want is None or not known:
            return "not compiled in"
        if want > max(known):
            return "newer than every architecture in this build"
        if want < min(known):
            return "older than this build supports (dropped)"
        return "not compiled in"

    def text(self) -> str:
        items = [f"sm_{v.major}{v.minor}{'a' if exact else ''}" for v, exact in self.sass]
        items += [f"compute_{v.major}{v.minor}" for v in self.ptx]
        return " ".join(items) or "nothing"


def parse_arch_list(items: Iterable[str], source: str) -> Compiled | None:
    """`sm_80`, `sm_90a`, `compute_90` entries (torch's arch flags, TensorFlow's build_info);
    None when there is none, or an entry in another form (not guessed at)."""
    sass: list[tuple[Version, bool]] = []
    ptx: list[Version] = []
    for item in items:
        match = _ARCH.match(item.strip())
        if match is None:
            return None
        kind, major, minor, suffix = match.groups()
        version = Version(f"{int(major)}.{minor}")
        if kind == "sm":
            sass.append((version, suffix == "a"))
        else:
            ptx.append(version)
    if not sass and not ptx:
        return None
    return Compiled(tuple(sass), tuple(ptx), source)


def compiled_from(sm: Iterable[str], ptx: Iterable[str], source: str) -> Compiled:
    """From the compat data's form ("8.0" lists)."""
    return Compiled(
        tuple((v, False) for v in map(parse_version, sm) if v is not None),
        tuple(v for v in map(parse_version, ptx) if v is not None),
        source,
    )


@dataclass
class Coverage:
    """How a build's compiled code meets the GPUs: per GPU without usable code, its compute
    capability and a line saying why; per GPU served only by PTX JIT, a line."""

    missing: list[tuple[str, str]]
    jit: list[str]

    @property
    def missing_ccs(self) -> list[str]:
        return sorted({cc for cc, _ in self.missing}, key=version_key)


def coverage(
    ctx: Context, compiled: Compiled, gpus: list[Target], build_cuda: str | None
) -> Coverage:
    """PTX counts only where the driver can JIT-compile it: a driver older than the build's
    CUDA cannot, so such a GPU has no usable code."""
    build, driver_cuda = major_minor(build_cuda), major_minor(ctx.driver_cuda)
    result = Coverage([], [])
    for gpu in gpus:
        how = compiled.covers(gpu.cc)
        name = f"{gpu.label}: {arch_name(ctx, gpu.cc)}"
        if how is None:
            result.missing.append((gpu.cc, f"{name}, {compiled.where(gpu.cc)}"))
        elif how == "ptx" and build and driver_cuda and build > driver_cuda:
            result.missing.append(
                (
                    gpu.cc,
                    f"{name}, only as PTX, which driver {ctx.driver_version} (CUDA "
                    f"{driver_cuda}) cannot JIT-compile for CUDA {build}",
                )
            )
        elif how == "ptx":
            result.jit.append(f"{name}, through PTX JIT compilation")
    return result


# --- the build a fix installs --------------------------------------------------------------------


@dataclass(frozen=True)
class Pick:
    """A framework release for a fix: the newest that fits this machine (compat data)."""

    version: str  # the release line: "2.9"
    cuda: str  # the CUDA it is built with
    install: str  # the pip command, as compat.answers writes it


# --- PyTorch --------------------------------------------------------------------------------------

LOCAL_KINDS = ("cpu", "rocm", "xpu")  # local version tags of non-CUDA torch wheels
KIND_TEXT = {
    "cpu": "a CPU-only build",
    "rocm": "a ROCm (AMD GPU) build",
    "xpu": "an XPU (Intel GPU) build",
}


@dataclass(frozen=True)
class TorchFacts:
    version: str | None  # "2.5.1+cu124"
    kind: str | None  # cuda | cpu | rocm | xpu; None: unknown
    cuda: str | None  # "12.4"
    evidence: str  # where the kind comes from

    @property
    def name(self) -> str:
        return f"torch {self.version or '(version unknown)'}"


def torch_facts(env: PythonEnvironment) -> TorchFacts | None:
    dist, build, deep = env.dist("torch"), env.torch, runtime(env, "torch")
    if dist is None and build is None:
        return None
    version = (build.version if build else None) or (dist.version if dist else None)
    version = version or (deep.version if deep else None)
    local = version.split("+", 1)[1].lower() if version and "+" in version else ""
    tag_cuda = cuda_of_local_tag(version or "")
    kind = next((k for k in LOCAL_KINDS if local.startswith(k)), None)
    if build is not None:
        evidence = f"torch/version.py: cuda={build.cuda!r}, hip={build.hip!r}"
        if build.hip:
            kind = "rocm"
        elif kind is None:
            kind = "cuda" if build.cuda else "cpu"
        cuda = build.cuda or tag_cuda
    else:
        evidence = f"installed version {version}"
        cuda = tag_cuda or (deep.cuda_version if deep else None)
        if kind is None and cuda:
            kind = "cuda"
    return TorchFacts(version, kind, cuda if kind == "cuda" else None, evidence)


def torch_envs(ctx: Context) -> Iterator[tuple[PythonEnvironment, TorchFacts]]:
    for env in ctx.snapshot.environments:
        facts = torch_facts(env)
        if facts is not None:
            yield env, facts


def pick_torch(
    ctx: Context, env: PythonEnvironment, ccs: list[str], driver: str | None
) -> Pick | None:
    """compat.answers.newest_torch for this environment's OS and Python."""
    found = newest_torch(
        ctx.compat, driver=driver, ccs=ccs, os=compat_os(ctx, env), python=env.version
    )
    return Pick(found["version"], found["cuda"], found["install"]) if found else None


def _fits(ctx: Context, env: PythonEnvironment, ccs: list[str], driver: str | None) -> str:
    parts = [f"runs on driver {driver}"] if driver else []
    if ccs:
        parts.append(f"has code for compute capability {', '.join(ccs)}")
    py = python_mm(env)
    if py is not None:
        parts.append(f"has wheels for Python {py}")
    return " and ".join(parts)


def torch_switch(ctx: Context, env: PythonEnvironment, ccs: list[str]) -> str | None:
    """The command that replaces this environment's torch by the newest CUDA build that runs
    on this driver with these GPUs; None when the compat data has none."""
    driver = ctx.driver_version
    pick = pick_torch(ctx, env, ccs, driver)
    if pick is None:
        return None
    return (
        pip(ctx, env, f"pip uninstall -y torch && {pick.install}")
        + f" (PyTorch {pick.version} built with CUDA {pick.cuda}: the newest that "
        f"{_fits(ctx, env, ccs, driver)})"
    )


def torch_fix(ctx: Context, env: PythonEnvironment, ccs: list[str]) -> str:
    """torch_switch, else what it takes: a newer driver, or a build from source."""
    switch = torch_switch(ctx, env, ccs)
    if switch is not None:
        return switch
    driver = ctx.driver_version
    other = pick_torch(ctx, env, ccs, None) if driver else None
    if other is not None:
        return (
            f"No PyTorch build in gpucheck's compat data runs on driver {driver} with these "
            f"GPUs: {upgrade_driver(ctx, other.cuda)}, then "
            + pip(ctx, env, f"pip uninstall -y torch && {other.install}")
            + f" (PyTorch {other.version}, CUDA {other.cuda})"
        )
    if ccs:
        return (
            "No PyTorch release in gpucheck's compat data has code for compute capability "
            f"{', '.join(ccs)}: build PyTorch from source with "
            f'TORCH_CUDA_ARCH_LIST="{";".join(ccs)}"'
        )
    return "Install a CUDA build of PyTorch (https://pytorch.org/get-started/locally/)"


# --- TensorFlow ---------------------------------------------------------------------------------

TF_CPU_DISTS = (
    "tensorflow-cpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-cpu-aws",
    "tf-nightly-cpu",
)


def tf_cuda_text(text: str | None) -> str | None:
    """build_info's cuda_version: '12.2' on Linux, '64_112' on Windows."""
    if not text:
        return None
    match = re.fullmatch(r"64_([0-9]+)([0-9])", text.strip())
    value = f"{match.group(1)}.{match.group(2)}" if match else text.strip()
    return value if parse_version(value) else None


@dataclass(frozen=True)
class TfFacts:
    version: str | None
    dists: tuple[Distribution, ...]
    kind: str | None  # cuda | cpu | rocm; None: unknown
    cuda: str | None
    cudnn: str | None
    archs: tuple[str, ...]
    evidence: str

    @property
    def name(self) -> str:
        dist = next((d.name for d in self.dists), "tensorflow")
        return f"{dist} {self.version or '(version unknown)'}"


def tf_facts(env: PythonEnvironment) -> TfFacts | None:
    dists = tuple(d for name in TF_DISTS if (d := env.dist(name)) is not None)
    build, deep = env.tensorflow, runtime(env, "tensorflow")
    if not dists and build is None:
        return None
    version = dists[0].version if dists else (deep.version if deep else None)
    names = {d.name for d in dists}
    kind: str | None = None
    evidence = "installed: " + ", ".join(f"{d.name} {d.version}" for d in dists)
    if build is not None and (build.is_rocm_build or build.is_cuda_build is not None):
        evidence = (
            f"build_info.py: is_cuda_build={build.is_cuda_build}, "
            f"cuda_version={build.cuda_version!r}, cudnn_version={build.cudnn_version!r}"
        )
        kind = "rocm" if build.is_rocm_build else ("cuda" if build.is_cuda_build else "cpu")
    elif "tensorflow-rocm" in names:
        kind = "rocm"
    elif names & set(TF_CPU_DISTS) and not names & {"tensorflow", "tensorflow-gpu"}:
        kind = "cpu"
    elif deep is not None and deep.cuda_version:
        kind = "cuda"
    cuda = tf_cuda_text(build.cuda_version if build else None)
    cuda = cuda or tf_cuda_text(deep.cuda_version if deep else None)
    cudnn = (build.cudnn_version if build else None) or (deep.cudnn_version if deep else None)
    cudnn = cudnn.removeprefix("64_") if cudnn else None  # Windows build_info: '64_8'
    archs = tuple(build.cuda_compute_capabilities if build else ()) or tuple(
        deep.arch_list if deep else ()
    )
    return TfFacts(version, dists, kind, cuda, cudnn, archs, evidence)


def tf_envs(ctx: Context) -> Iterator[tuple[PythonEnvironment, TfFacts]]:
    for env in ctx.snapshot.environments:
        facts = tf_facts(env)
        if facts is not None:
            yield env, facts


def pick_tensorflow(
    ctx: Context,
    env: PythonEnvironment,
    ccs: list[str],
    driver: str | None,
    os: str = "linux",
    line: Version | None = None,
) -> Pick | None:
    """compat.answers.newest_tensorflow for this environment's Python (Linux builds: `os`
    names the driver table, windows for WSL2)."""
    found = newest_tensorflow(
        ctx.compat, driver=driver, ccs=ccs, os=os, python=env.version, line=line
    )
    return Pick(found["version"], found["cuda"], found["install"]) if found else None


# --- JAX and CuPy ---------------------------------------------------------------------------------

_JAX_PLUGIN = re.compile(r"^jax-cuda([0-9]+)-(plugin|pjrt)$")
_JAXLIB_CUDA = re.compile(r"\+cuda([0-9]+)")


@dataclass(frozen=True)
class JaxFacts:
    jaxlib: str | None
    plugins: tuple[Distribution, ...]  # jax-cudaNN-plugin / -pjrt
    monolithic: int | None  # CUDA major of a jaxlib+cudaNN.cudnnMM wheel

    @property
    def majors(self) -> list[int]:
        found = {int(m.group(1)) for d in self.plugins if (m := _JAX_PLUGIN.match(d.name))}
        if self.monolithic is not None:
            found.add(self.monolithic)
        return sorted(found)

    @property
    def name(self) -> str:
        return f"jaxlib {self.jaxlib}" if self.jaxlib else "jax (no jaxlib)"


def jax_facts(env: PythonEnvironment) -> JaxFacts | None:
    jax, jaxlib = env.dist("jax"), env.dist("jaxlib")
    plugins = tuple(d for d in env.distributions if _JAX_PLUGIN.match(d.name))
    if jax is None and jaxlib is None and not plugins:
        return None
    version = jaxlib.version if jaxlib else None
    match = _JAXLIB_CUDA.search(version or "")
    return JaxFacts(version, plugins, int(match.group(1)) if match else None)


_CUPY = re.compile(r"^cupy-cuda([0-9]+?)(x|[0-9])$")


def cupy_cuda(name: str) -> tuple[str, bool] | None:
    """cupy-cuda12x -> ('12.0', True: any 12.x); cupy-cuda102 -> ('10.2', False)."""
    match = _CUPY.match(name)
    if match is None:
        return None
    major, rest = match.groups()
    return (f"{int(major)}.0", True) if rest == "x" else (f"{int(major)}.{rest}", False)


# --- pip requirements ----------------------------------------------------------------------------

# Extras whose NVIDIA libraries a framework's GPU install brings (the rest are ignored).
GPU_EXTRAS = {
    "tensorflow": ("and-cuda",),
    "tensorflow-cpu": ("and-cuda",),
    "tf-nightly": ("and-cuda",),
    "jax-cuda12-plugin": ("with-cuda",),
    "jax-cuda13-plugin": ("with-cuda",),
}


def marker_environment(ctx: Context, env: PythonEnvironment) -> dict[str, str]:
    """PEP 508 marker values of the environment (Linux x86_64 where not known)."""
    values = {key: str(value) for key, value in default_environment().items()}
    os = env_os(ctx, env)
    system = {"linux": "Linux", "windows": "Windows", "darwin": "Darwin"}.get(os, "Linux")
    values.update(
        platform_system=system,
        sys_platform=env.platform or ("win32" if os == "windows" else os),
        os_name="nt" if os == "windows" else "posix",
        platform_machine=ctx.snapshot.system.arch or "x86_64",
    )
    if env.version and parse_version(env.version):
        py = major_minor(env.version)
        values.update(python_version=str(py), python_full_version=env.version)
    return values


def requirements_of(ctx: Context, env: PythonEnvironment, dist: Distribution) -> list[Requirement]:
    """The Requires-Dist lines that apply here: markers evaluated for this environment, extras
    ignored except the ones that bring the GPU libraries (tensorflow[and-cuda], ...)."""
    values = marker_environment(ctx, env)
    extras = GPU_EXTRAS.get(dist.name, ())
    found = []
    for line in dist.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is None or any(
            _evaluates(req, {**values, "extra": extra}) for extra in ("", *extras)
        ):
            found.append(req)
    return found


def _evaluates(req: Requirement, values: dict[str, str]) -> bool:
    try:
        return req.marker is not None and bool(req.marker.evaluate(values))
    except Exception:  # a marker the environment cannot answer: not applied
        return False


def satisfies(req: Requirement, version: str) -> bool | None:
    parsed = parse_version(version)
    return None if parsed is None else req.specifier.contains(parsed, prereleases=True)


# Shared-library stems and the part of NVIDIA's pip package name that ships them.
LIBRARY_PACKAGES = {
    "libcudnn": "cudnn",
    "libcublasLt": "cublas",
    "libcublas": "cublas",
    "libcudart": "cuda-runtime",
    "libcufft": "cufft",
    "libcurand": "curand",
    "libcusolver": "cusolver",
    "libcusparseLt": "cusparselt",
    "libcusparse": "cusparse",
    "libnccl": "nccl",
    "libnvJitLink": "nvjitlink",
    "libnvrtc": "cuda-nvrtc",
    "libcupti": "cuda-cupti",
    "libnvToolsExt": "nvtx",
    "libcufile": "cufile",
}


def package_key(soname: str) -> str | None:
    """libcudnn.so.9 -> 'cudnn'; libcuda.so.1 (the driver's) -> None."""
    stem = soname.split(".so", 1)[0]
    return LIBRARY_PACKAGES.get(stem)


def is_package_for(name: str, key: str) -> bool:
    """nvidia-cudnn-cu12 (and CUDA 13's nvidia-cudnn-cu13, nvidia-cuda-runtime) for 'cudnn'..."""
    return re.fullmatch(rf"nvidia-{re.escape(key)}(-cu[0-9]+)?", name) is not None


def soname_major(path: str) -> str | None:
    match = re.search(r"\.so\.([0-9]+)", path)
    return match.group(1) if match else None


def same_version(a: str, b: str) -> bool:
    """Equal as far as both are precise: 9.1.0 == 9.1.0.70; 12.4 == 12.4.127; 8.9 != 9.1."""
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return a == b
    n = min(len(va.release), len(vb.release), 3)
    return va.release[:n] == vb.release[:n]
