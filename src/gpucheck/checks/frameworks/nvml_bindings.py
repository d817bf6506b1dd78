"""NVML's Python bindings, per Python environment. NVIDIA's own binding is `nvidia-ml-py`; older
copies (`nvidia-ml-py3`, `pynvml` before it became a wrapper of nvidia-ml-py) install the same
`pynvml` module: whichever was installed last wins, and uninstalling one deletes the file the
others need. Monitoring tools (nvitop, gpustat) and gpucheck's own NVML probe then fail or show
N/A. nvidia-ml-py is versioned after the driver branch it was made from (12.535.133: R535);
one older than the driver lacks the newer functions, and one newer than the driver may call
versioned functions (`..._v2`, `..._v3`) the driver's libnvidia-ml lacks
(compat/nvml_bindings.toml)."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.per_environment import change, environment_check, merge, pip_step
from gpucheck.compat import parse_version
from gpucheck.compat.nvml_bindings import BindingCall
from gpucheck.model.environments import Distribution, PythonEnvironment
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Change, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

OFFICIAL = "nvidia-ml-py"
# Distributions that ship their own `pynvml` module (pynvml only until it became a wrapper).
COPIES = ("nvidia-ml-py3", "pynvml")
OTHER = ("py3nvml",)  # its own module (py3nvml), an old copy of the binding


def _wrapper(dist: Distribution) -> bool:
    """pynvml releases that depend on nvidia-ml-py only wrap it: no module of their own."""
    return any(line.lower().startswith(OFFICIAL) for line in dist.requires)


def _branch(dist: Distribution) -> int | None:
    """12.535.133 -> 535: the driver branch the binding was made from."""
    version = parse_version(dist.version)
    return version.release[1] if version is not None and len(version.release) >= 3 else None


@environment_check("frameworks.nvml-bindings", "one NVML Python binding, not older than the driver")
def nvml_bindings(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    official = env.dist(OFFICIAL)
    copies = [d for n in COPIES if (d := env.dist(n)) is not None and not _wrapper(d)]
    others = [d for n in OTHER if (d := env.dist(n)) is not None]
    if official is None and not copies and not others:
        return None
    listed = [
        f"{d.name} {d.version}" for d in [*([official] if official else []), *copies, *others]
    ]
    items: list[tuple[str | None, Outcome | None]] = []
    driver = parse_version(ctx.driver_version or "")
    bindings = ctx.compat.nvml_bindings
    unserved = bindings.first_unserved(OFFICIAL, driver.major) if driver else None
    # The replacement must serve this driver too: the newest binding calls functions an old
    # driver lacks, so it goes below the first release that calls one.
    wanted = join([f"{OFFICIAL}<{unserved.since}" if unserved else OFFICIAL])
    replace: Step | None = None
    if copies and (official or len(copies) > 1):
        names = join(d.name for d in [*copies, *others])
        replace = pip_step(
            ctx,
            env,
            "keep the official binding only",
            f"pip uninstall -y {names} && pip install --force-reinstall {wanted}",
            _replaced(env, [*copies, *others]),
        )
        items.append(
            (
                None,
                Outcome.warn(
                    f"{len(copies) + (1 if official else 0)} NVML bindings install the same "
                    "`pynvml` module: the last installed wins, and removing one breaks the others",
                    *listed,
                    fix=Fix.of(replace),
                ),
            )
        )
    elif copies or others:
        names = join(d.name for d in [*copies, *others])
        replace = pip_step(
            ctx,
            env,
            "install the official binding instead",
            f"pip uninstall -y {names} && pip install {wanted}",
            _replaced(env, [*copies, *others]),
        )
        items.append(
            (
                None,
                Outcome.warn(
                    f"{names}: an old copy of NVML's binding, no longer updated",
                    *listed,
                    fix=Fix.of(replace),
                ),
            )
        )
    # An old copy's own pynvml/nvml.py calls versioned functions too (pynvml 11.x): judged
    # against the driver like the official binding, first among the warnings.
    for copy in copies if driver is not None and replace is not None else []:
        version = parse_version(copy.version)
        lacking = bindings.missing(copy.name, version, driver.major) if version and driver else None
        if lacking is not None and replace is not None:
            what = f"{copy.name} {copy.version}"
            items.insert(0, (None, _lacks(ctx, what, lacking, listed, replace)))
    branch = _branch(official) if official else None
    if official is not None and driver is not None and branch is not None:
        items.append((None, _age(ctx, env, official, branch, driver.major, listed)))
    if not items:
        items.append((None, Outcome.passed(f"{listed[0]}: the only NVML binding", *listed)))
    return merge(items)


def _replaced(env: PythonEnvironment, removed: list[Distribution]) -> list[Change]:
    """The copies removed, and the official binding (re)installed."""
    return [*(change(env, d.name, remove=True) for d in removed), change(env, OFFICIAL)]


def _lacks(ctx: Context, what: str, lacking: BindingCall, listed: list[str], step: Step) -> Outcome:
    """A binding (`what`: name and version) whose unversioned calls need functions the
    driver's branch predates; `step` installs one that does not call them."""
    function = lacking.functions[0]
    return Outcome.warn(
        f"{what} calls {function}, which driver {ctx.driver_version} lacks (it came with "
        f"R{lacking.driver_branch}): process lists fail with NVMLError_FunctionNotFound in "
        "pynvml, nvitop and gpustat",
        *listed,
        f"{lacking.binding} {lacking.since} and newer call {', '.join(lacking.functions)} "
        f"(source: {lacking.source})",
        fix=Fix.of(
            step,
            OR,
            Step.manual(f"upgrade the driver to R{lacking.driver_branch} or newer", Layer.DRIVER),
        ),
    )


def _age(
    ctx: Context,
    env: PythonEnvironment,
    official: Distribution,
    branch: int,
    driver_branch: int,
    listed: list[str],
) -> Outcome:
    """A binding of an older CUDA major than the driver's lacks whole generations of NVML
    (warn); one of an older branch of the same major only the newest functions (info)."""
    version = parse_version(official.version)
    lacking = (
        ctx.compat.nvml_bindings.missing(OFFICIAL, version, driver_branch) if version else None
    )
    if lacking is not None:
        step = pip_step(
            ctx,
            env,
            f"install a binding that predates R{lacking.driver_branch}'s functions",
            f"pip install 'nvidia-ml-py<{lacking.since}'",
            [change(env, OFFICIAL)],
        )
        return _lacks(ctx, f"nvidia-ml-py {official.version}", lacking, listed, step)
    if branch >= driver_branch:
        return Outcome.passed(
            f"nvidia-ml-py {official.version} covers driver {ctx.driver_version}", *listed
        )
    version = parse_version(official.version)
    cuda = parse_version(ctx.driver_cuda or "")
    said = (
        f"nvidia-ml-py {official.version} was made for driver branch R{branch}; the driver is "
        f"{ctx.driver_version}: NVML functions newer than R{branch} are missing from it"
    )
    if version is not None and cuda is not None and version.major < cuda.major:
        return Outcome.warn(
            f"{said} (tools show N/A or fail)",
            *listed,
            fix=Fix.of(
                pip_step(
                    ctx,
                    env,
                    "upgrade it",
                    "pip install -U nvidia-ml-py",
                    [change(env, OFFICIAL)],
                )
            ),
        )
    return Outcome.info(said, *listed)
