"""Each framework's installed build as facts the checks share (PyTorch, TensorFlow, JAX, CuPy),
and the build a fix should install: the newest that fits this driver, these GPUs and this
Python, from the compat data."""

from __future__ import annotations

from msgspec import Struct
from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.driver_fit import gpus_line, upgrade_driver
from gpucheck.checks.frameworks.jax_builds import jax_facts
from gpucheck.checks.frameworks.packages import canonical, requirements_of
from gpucheck.checks.frameworks.per_environment import (
    change,
    compat_os,
    pip_step,
    python_mm,
    runtime,
)
from gpucheck.compat import parse_version
from gpucheck.compat.answers import TORCH_INDEX, Pick, newest_tensorflow
from gpucheck.compat.frameworks import conda_cpu, conda_cuda, cuda_of_local_tag, major_minor
from gpucheck.install.picks import torch_pick
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import Change, Fix, Step
from gpucheck.model.frameworks import ON_TORCH_INDEX, TENSORFLOW, TORCH
from gpucheck.model.shell import join, quote

# --- the build a fix installs --------------------------------------------------------------------


# --- PyTorch --------------------------------------------------------------------------------------

LOCAL_KINDS = ("cpu", "rocm", "xpu")  # local version tags of non-CUDA torch wheels
KIND_TEXT = {
    "cpu": "a CPU-only build",
    "rocm": "a ROCm (AMD GPU) build",
    "xpu": "an XPU (Intel GPU) build",
}


class TorchFacts(Struct, frozen=True):
    version: str | None  # "2.5.1+cu124"
    kind: str | None  # cuda | cpu | rocm | xpu; None: unknown
    cuda: str | None  # "12.4"
    evidence: str  # where the kind comes from

    @property
    def name(self) -> str:
        return f"torch {self.version or '(version unknown)'}"


def torch_facts(env: PythonEnvironment) -> TorchFacts | None:
    dist, build, deep = env.dist(TORCH.dist), env.torch, runtime(env, TORCH.key)
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
        # conda's pytorch has no local tag; its build string names the variant
        built = dist.build if dist else None
        cuda = tag_cuda or conda_cuda(built) or (deep.cuda_version if deep else None)
        if built and (conda_cuda(built) or conda_cpu(built)):
            evidence += f", conda build {built}"
            kind = kind or ("cpu" if conda_cpu(built) else None)
        if kind is None and cuda:
            kind = "cuda"
    return TorchFacts(version, kind, cuda if kind == "cuda" else None, evidence)


def pick_torch(
    ctx: Context,
    env: PythonEnvironment,
    ccs: list[str],
    driver: str | None,
    line: str | None = None,
) -> Pick | None:
    """The build `gpucheck install torch` names for this environment's OS and Python, these
    GPUs and this driver (and release line): one answer wherever the doctor installs torch."""
    return torch_pick(ctx.compat, ccs, driver, env.version, compat_os(ctx, env), line)


def _fits(ctx: Context, env: PythonEnvironment, ccs: list[str], driver: str | None) -> str:
    parts = [f"runs on driver {driver}"] if driver else []
    if ccs:
        parts.append(f"has code for compute capability {', '.join(ccs)}")
    py = python_mm(env)
    if py is not None:
        parts.append(f"has wheels for Python {py}")
    return " and ".join(parts)


def pick_change(env: PythonEnvironment, name: str, pick: Pick) -> Change:
    """The distribution a pick's install moves, from what is installed here to its line."""
    return change(env, name, requirement=f"=={pick.version}.*")


# Installed packages built for one torch, which must move with it (their wheels pin torch).
TORCH_COMPANIONS = ("torchvision", "torchaudio")


def pinners(
    ctx: Context, env: PythonEnvironment, target: str, skip: tuple[str, ...] = ()
) -> list[tuple[Distribution, str]]:
    """Other installed distributions whose Requires-Dist pins `target` (torch: xformers, vLLM,
    flash-attn, bitsandbytes; tensorflow: tf-keras, tensorflow-text), with the specifier: a
    `target` outside it breaks them."""
    found = []
    for dist in env.distributions:
        if canonical(dist.name) in (target, *skip) or not dist.requires:
            continue
        for req in requirements_of(ctx, env, dist):
            if canonical(req.name) == target and str(req.specifier):
                found.append((dist, str(req.specifier)))
    return found


def torch_pinners(ctx: Context, env: PythonEnvironment) -> list[tuple[Distribution, str]]:
    return pinners(ctx, env, "torch", TORCH_COMPANIONS)


def torch_switch(ctx: Context, env: PythonEnvironment, ccs: list[str]) -> Step | None:
    """The step that replaces this environment's torch by a CUDA build that runs on this
    driver with these GPUs: the same torch version where the compat data has a CUDA build of
    its line that fits (the smallest change: torchvision and torchaudio keep their versions,
    from the same index), else the newest that fits, with the companions it pairs with. None
    when the compat data has none."""
    driver = ctx.driver_version
    installed = torch_facts(env)
    public = (installed.version or "").split("+", 1)[0] if installed else ""
    parsed = parse_version(public) if public else None
    # A pre-release (a nightly) has no build on the release indexes: the newest release then.
    final = parsed is not None and not parsed.is_prerelease and not parsed.is_devrelease
    mm = major_minor(parsed) if final else None
    same = pick_torch(ctx, env, ccs, driver, line=str(mm)) if mm else None
    if same is not None:
        # The exact local version (2.5.1+cu124) from that variant's index: a plain ==2.5.1 is
        # already satisfied by 2.5.1+cpu, and pip would change nothing.
        digits = same.cuda.replace(".", "")
        tag = f"cu{digits}"
        wanted = [quote(f"torch=={public}+{tag}")]
        changes = [change(env, "torch", f"{public}+{tag}")]
        kept = []
        for name in TORCH_COMPANIONS:
            dist = env.dist(name)
            if dist is not None:
                version = dist.version.split("+", 1)[0]
                wanted.append(quote(f"{name}=={version}+{tag}"))
                changes.append(change(env, name, f"{version}+{tag}"))
                kept.append(f"{name} {version}")
        # A local tag still satisfies the pins of what requires torch (==2.5.1 holds for
        # 2.5.1+cu124): they stay, and the step says so.
        kept += [
            f"{d.name} {d.version} (torch{spec})"
            for d, spec in torch_pinners(ctx, env)
            if satisfies_text(spec, public)
        ]
        index = TORCH_INDEX.format(tag=digits)
        return pip_step(
            ctx,
            env,
            f"install the same PyTorch {public}, built with CUDA {same.cuda}: it "
            f"{_fits(ctx, env, ccs, driver)}"
            + (f"; {', '.join(kept)} keep their versions" if kept else ""),
            f"pip install {' '.join(wanted)} --index-url {index}",
            changes,
        )
    pick = pick_torch(ctx, env, ccs, driver)
    if pick is None:
        return None
    companions = []
    changes = [pick_change(env, "torch", pick)]
    for name in TORCH_COMPANIONS:
        if env.dist(name) is None:
            continue
        row = ctx.compat.extensions.pairing(name, pick.version)
        if row and row.versions:
            v = row.versions[0]  # a prefix: "0.20" is any 0.20.x
            spec = f"=={v}.*" if v.count(".") < 2 else f"=={v}"
            companions.append(f"{name}{spec}")
            changes.append(change(env, name, requirement=spec))
        else:
            companions.append(name)
            changes.append(change(env, name))
    elsewhere = []  # pinners the PyTorch index does not carry: named, not in the command
    for dist, spec in torch_pinners(ctx, env):
        if satisfies_text(spec, pick.version):
            continue
        # Its pin excludes the new torch: in the same command pip picks the version of it
        # that pins this torch (the compat data has no pairing for it).
        changes.append(change(env, dist.name))
        if " --index-url " in pick.install and canonical(dist.name) not in ON_TORCH_INDEX:
            elsewhere.append(f"{dist.name} {dist.version} (torch{spec})")
        else:
            companions.append(dist.name)
    install = pick.install
    if companions:
        # Same command, same index: pip resolves torch and what pins it together.
        head, sep, tail = install.partition(" --index-url ")
        install = f"{head} {join(companions)}{sep}{tail}"
    named = ", ".join(companions)
    return pip_step(
        ctx,
        env,
        f"install PyTorch {pick.version} built with CUDA {pick.cuda}: the newest that "
        f"{_fits(ctx, env, ccs, driver)}"
        + (f"; {named} move with it" if companions else "")
        + (
            f"; {', '.join(elsewhere)} pin the old torch: upgrade them to a release built for "
            f"PyTorch {pick.version}"
            if elsewhere
            else ""
        ),
        f"pip uninstall -y torch && {install}",
        changes,
    )


def satisfies_text(spec: str, version: str) -> bool:
    """Whether `version` (a release or a line such as 2.9) meets a specifier's text."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        specifier = SpecifierSet(spec)
    except InvalidSpecifier:
        return True
    parsed = parse_version(version)
    return parsed is None or specifier.contains(parsed, prereleases=True)


def torch_fix(ctx: Context, env: PythonEnvironment, ccs: list[str]) -> Fix:
    """torch_switch, else what it takes: a newer driver, or a build from source."""
    switch = torch_switch(ctx, env, ccs)
    if switch is not None:
        return Fix.of(switch)
    driver = ctx.driver_version
    other = pick_torch(ctx, env, ccs, None) if driver else None
    if other is not None:
        upgrade = upgrade_driver(ctx, other.cuda)
        upgrade.text = (
            f"no PyTorch build in gpucheck's compat data runs on driver {driver} with these "
            f"GPUs: {upgrade.text}"
        )
        return Fix.of(
            upgrade,
            pip_step(
                ctx,
                env,
                f"then install PyTorch {other.version} (CUDA {other.cuda})",
                f"pip uninstall -y torch && {other.install}",
                [pick_change(env, "torch", other)],
            ),
        )
    if ccs:
        return Fix.of(
            Step.manual(
                "no PyTorch release in gpucheck's compat data has code for compute capability "
                f"{', '.join(ccs)}: build PyTorch from source with "
                f'TORCH_CUDA_ARCH_LIST="{";".join(ccs)}"'
            )
        )
    return Fix.of(
        Step.manual("install a CUDA build of PyTorch (https://pytorch.org/get-started/locally/)")
    )


# --- TensorFlow ---------------------------------------------------------------------------------


def tf_cuda_text(text: str | None) -> str | None:
    """TensorFlow's CUDA version, where it is one (the probes write Windows builds' DLL
    suffixes as versions already)."""
    value = (text or "").strip()
    return value if value and parse_version(value) else None


class TfFacts(Struct, frozen=True):
    version: str | None
    dists: tuple[Distribution, ...]
    kind: str | None  # cuda | cpu | rocm; None: unknown
    cuda: str | None
    cudnn: str | None
    archs: tuple[str, ...]
    evidence: str
    cuda_from: str = "its build_info"  # where `cuda` was read

    @property
    def name(self) -> str:
        dist = next((d.name for d in self.dists), TENSORFLOW.module)
        return f"{dist} {self.version or '(version unknown)'}"


def tf_facts(env: PythonEnvironment) -> TfFacts | None:
    dists = tuple(d for name in TENSORFLOW.dists if (d := env.dist(name)) is not None)
    build, deep = env.tensorflow, runtime(env, TENSORFLOW.key)
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
    elif names & set(TENSORFLOW.rocm_dists):
        kind = "rocm"
    elif names & set(TENSORFLOW.cpu_dists) and not names - set(TENSORFLOW.cpu_dists):
        kind = "cpu"
    elif (conda := _conda_variant(dists)) is not None:
        kind, conda_text = conda  # conda-forge's tensorflow: cuda120py311h... / cpu_py311h...
        evidence += f" (conda build {conda_text})"
    elif deep is not None and deep.cuda_version:
        kind = "cuda"
    cuda = tf_cuda_text(build.cuda_version if build else None)
    cuda = cuda or tf_cuda_text(deep.cuda_version if deep else None)
    cuda_from = "its build_info"
    if cuda is None and kind == "cuda":
        cuda = next((c for d in dists if (c := conda_cuda(d.build))), None)
        cuda_from = "its conda build string"
    cudnn = (build.cudnn_version if build else None) or (deep.cudnn_version if deep else None)
    archs = tuple(build.cuda_compute_capabilities if build else ()) or tuple(
        deep.arch_list if deep else ()
    )
    return TfFacts(version, dists, kind, cuda, cudnn, archs, evidence, cuda_from)


def _conda_variant(dists: tuple[Distribution, ...]) -> tuple[str, str] | None:
    """('cuda' or 'cpu', the build string) where conda installed TensorFlow and its build string
    names the variant."""
    for dist in dists:
        if conda_cuda(dist.build):
            return "cuda", dist.build or ""
        if conda_cpu(dist.build):
            return "cpu", dist.build or ""
    return None


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
    return newest_tensorflow(
        ctx.compat, driver=driver, ccs=ccs, os=os, python=env.version, line=line
    )


# --- several frameworks in one environment --------------------------------------------------


def gpu_frameworks_beside(env: PythonEnvironment, framework: str) -> list[str]:
    """The other frameworks of this environment that are CUDA builds (and, where --deep imported
    them, saw a GPU): with one of them working, a CPU-only build of `framework` (a jaxlib another
    package pulled in) costs only the code that uses it, not the machine's GPUs."""
    found = []
    torch, tf, jax = torch_facts(env), tf_facts(env), jax_facts(env)
    builds = {
        "torch": (torch.name if torch and torch.kind == "cuda" else None),
        "tensorflow": (tf.name if tf and tf.kind == "cuda" else None),
        "jax": (jax.name if jax and jax.majors else None),
    }
    for name, described in builds.items():
        if name == framework or described is None:
            continue
        deep = runtime(env, name)
        if deep is not None and (deep.status != "ok" or not deep.device_count):
            continue  # imported and saw no GPU: not a working GPU framework
        found.append(described)
    return found


def build_settled(
    ctx: Context, name: str, kind: str | None, cuda_build: str, what: str, evidence: str
) -> Outcome | None:
    """The verdict on a framework's build where its kind or the machine settles it: not known
    (skip), a CUDA build (pass: `cuda_build` says which), or `what` it is instead on a machine
    with no NVIDIA GPU (no_gpu_here); None where a build that is not CUDA meets NVIDIA GPUs."""
    if kind is None:
        return Outcome.skip(f"{name}: whether it is a CUDA build is not known", evidence)
    if kind == "cuda":
        return Outcome.passed(f"{name} is {cuda_build}")
    return no_gpu_here(ctx, f"{name} is {what}", evidence)


def no_gpu_here(ctx: Context, subject: str, evidence: str) -> Outcome | None:
    """A build that cannot use NVIDIA GPUs on a machine without one (nothing to fix), or where
    whether it has one is not known; None where GPUs are there to use."""
    if ctx.has_gpu is False:
        return Outcome.info(
            f"{subject}; this machine has no NVIDIA GPU, so there is nothing to fix", evidence
        )
    if ctx.has_gpu is None:
        return Outcome.skip(
            f"{subject}; whether this machine has an NVIDIA GPU is not known", evidence
        )
    return None


def cannot_use_gpus(
    ctx: Context, env: PythonEnvironment, framework: str, title: str, evidence: str, fix: Fix | None
) -> Outcome:
    """A build that cannot use this machine's GPUs: a failure, or a warning where another GPU
    framework of the environment can (gpu_frameworks_beside)."""
    beside = gpu_frameworks_beside(env, framework)
    verdict = Outcome.warn if beside else Outcome.fail
    return verdict(
        title + (f" (code using {', '.join(beside)} here can)" if beside else ""),
        evidence,
        gpus_line(ctx),
        fix=fix,
    )
