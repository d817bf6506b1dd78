"""The check registry: every check's id, section and function, selection by id/prefix/section
(`--only`, `--skip`), and the runner that turns outcomes into findings."""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct
from msgspec.structs import replace

from gpucheck.model.finding import CheckCrash, Finding, Frame, Outcome, Section, Status
from gpucheck.model.fix import Fix, Layer, Step
from gpucheck.model.frameworks import FRAMEWORKS

FRAMEWORK_KEYS = tuple(fw.key for fw in FRAMEWORKS)

if TYPE_CHECKING:
    from gpucheck.checks.context import Context
    from gpucheck.model.snapshot import Snapshot

_PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding gpucheck/

CheckFunc = Callable[["Context"], "Outcome | None"]


# The snapshot's fact groups each layer's checks read: a saved snapshot without one of them
# (a partial file, an older version) leaves those checks unjudged, never failed.
READS: dict[Section, tuple[str, ...]] = {
    Section.SYSTEM: ("system",),
    Section.DRIVER: ("system", "nvml"),
    Section.GPUS: ("nvml",),
    Section.CUDA: ("cuda",),
    Section.CUDNN: ("cudnn",),
    Section.FRAMEWORKS: ("environments",),
    Section.REQUIREMENTS: ("nvml",),
}
# The checks a layer's verdicts rest on. With --only, a selected check that has nothing to
# judge says which of these failed, and their failures are reported with it.
PREREQUISITES: dict[Section, tuple[str, ...]] = {
    Section.SYSTEM: (),
    Section.DRIVER: ("system.gpu-present",),
    Section.GPUS: ("system.gpu-present", "driver.kernel-module", "driver.nvml"),
    Section.CUDA: ("system.gpu-present", "driver.kernel-module"),
    Section.CUDNN: (),
    Section.FRAMEWORKS: ("system.gpu-present",),
    Section.REQUIREMENTS: ("system.gpu-present", "driver.kernel-module", "driver.nvml"),
}


# The layer a fix's step changes when its check does not say (a framework check's extension
# steps say so; a requirement's fix changes the job).
LAYER_OF: dict[Section, Layer] = {
    Section.SYSTEM: Layer.SYSTEM,
    Section.DRIVER: Layer.DRIVER,
    Section.GPUS: Layer.GPUS,
    Section.CUDA: Layer.CUDA,
    Section.CUDNN: Layer.CUDNN,
    Section.FRAMEWORKS: Layer.FRAMEWORKS,
    Section.REQUIREMENTS: Layer.JOB,
    Section.BENCH: Layer.GPUS,
}

# What a snapshot holds that a framework check can judge (see held): an environment at all, a
# framework (its key) in some environment, or system TensorRT libraries.
ANY_ENVIRONMENT = "environment"
SYSTEM_TENSORRT = "libnvinfer"
# The modules of checks/frameworks/ that register checks, each with what a snapshot must hold
# (any one of) for one of them to judge anything: each is a framework_check (environments.py),
# silent for an environment without its framework, but tensorrt.libraries (system copies) and
# frameworks.smoke-test (environments holding any framework). A doctor of a saved snapshot
# imports only those its snapshot can use (start-up, issue #24): the rest would say nothing.
FRAMEWORK_MODULES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "extensions": ("torch",),
    "tensorflow": ("tensorflow",),
    "tensorflow_libraries": ("tensorflow",),
    "jax_cupy": ("jax", "cupy"),
    "environment": (ANY_ENVIRONMENT,),
    "loader_cache": (ANY_ENVIRONMENT,),
    "tensorrt": ("tensorrt", SYSTEM_TENSORRT),
    "xla": (ANY_ENVIRONMENT,),
    "numpy_abi": (ANY_ENVIRONMENT,),
    "nvml_bindings": (ANY_ENVIRONMENT,),
    "runtime": (ANY_ENVIRONMENT,),
}

# The modules whose import registers each section's checks (their order in the report is
# ORDER's), and the sections each id's first part belongs to: a doctor with --only imports
# the modules of the sections it names (and of their prerequisites), no more.
SECTION_MODULES: dict[Section, tuple[str, ...]] = {
    Section.SYSTEM: ("gpucheck.checks.system",),
    Section.DRIVER: (
        "gpucheck.checks.driver",
        "gpucheck.checks.driver_services",
        "gpucheck.checks.fabric",
    ),
    Section.GPUS: (
        "gpucheck.checks.gpus",
        "gpucheck.checks.gpus_sharing",
        "gpucheck.checks.fabric",
    ),
    Section.CUDA: ("gpucheck.checks.cuda", "gpucheck.checks.toolkit"),
    Section.CUDNN: ("gpucheck.checks.cudnn",),
    Section.FRAMEWORKS: tuple(f"gpucheck.checks.frameworks.{m}" for m in FRAMEWORK_MODULES),
    Section.REQUIREMENTS: ("gpucheck.checks.requirements",),
    Section.BENCH: (),  # gpucheck bench's verdicts: not checks of the doctor
}
ID_SECTIONS: dict[str, Section] = {
    "system": Section.SYSTEM,
    "driver": Section.DRIVER,
    "gpu": Section.GPUS,
    "cuda": Section.CUDA,
    "cudnn": Section.CUDNN,
    # The framework checks' ids begin with the framework's key (model/frameworks.py), or
    # "frameworks" / "xla" for those about several.
    **{first: Section.FRAMEWORKS for first in ("frameworks", "xla", *FRAMEWORK_KEYS)},
    "require": Section.REQUIREMENTS,
}


class Check(Struct, frozen=True):
    id: str
    section: Section
    summary: str  # what it looks at, for `gpucheck checks` and the README
    func: CheckFunc
    reads: tuple[str, ...] = ()  # snapshot fact groups; default: the section's (READS)


REGISTRY: list[Check] = []
# Every check, in report order (sections in Section's order, then within each the order a
# reader follows: root causes first). This list, not the order modules are imported in,
# decides the order; a check missing from it cannot register.
ORDER: tuple[str, ...] = (
    "system.gpu-present",
    "system.container-gpu-access",
    "system.nouveau",
    "system.cuda-visible-devices",
    "system.cuda-launch-blocking",
    "system.probes",
    "driver.kernel-module",
    "driver.nvml",
    "driver.device-nodes",
    "driver.uvm",
    "driver.persistence-mode",
    "driver.fabric-manager",
    "gpu.lost",
    "gpu.ecc-errors",
    "gpu.memory-remapping",
    "gpu.throttling",
    "gpu.pcie-link",
    "gpu.nvlink",
    "gpu.p2p",
    "gpu.compute-mode",
    "gpu.mig",
    "gpu.memory-in-use",
    "cuda.driver-api",
    "cuda.toolkit",
    "cuda.runtime-libraries",
    "cudnn.libraries",
    "torch.cpu-build",
    "torch.cuda-driver",
    "torch.arch-support",
    "torch.python",
    "torch.extension-toolkit",
    "torch.extensions",
    "tensorflow.cpu-build",
    "tensorflow.legacy-gpu-package",
    "tensorflow.windows-native",
    "tensorflow.cuda-driver",
    "tensorflow.arch-support",
    "tensorflow.python",
    "tensorflow.keras",
    "tensorflow.cuda-libraries",
    "jax.cpu-build",
    "jax.cuda-driver",
    "cupy.cuda-driver",
    "frameworks.library-shadowing",
    "frameworks.loader-cache",
    "frameworks.nvidia-conflicts",
    "tensorrt.support",
    "tensorrt.libraries",
    "xla.compiler",
    "frameworks.numpy-abi",
    "frameworks.nvml-bindings",
    "frameworks.device-count",
    "frameworks.smoke-test",
    "require.min-gpus",
    "require.min-memory",
    "require.min-compute-capability",
)


def check(
    id: str, section: Section, summary: str, reads: tuple[str, ...] | None = None
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check (its place in the report is its place in ORDER)."""

    def register(func: CheckFunc) -> CheckFunc:
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id}")
        if id not in ORDER:
            raise ValueError(f"check {id} is not in registry.ORDER (the report order)")
        REGISTRY.append(Check(id, section, summary, func, reads or READS[section]))
        return func

    return register


def held(snapshot: Snapshot) -> set[str] | None:
    """What `snapshot` holds for the framework checks (FRAMEWORK_MODULES' words): each
    framework some environment has a distribution (or plugin), build facts or a runtime of.
    None where a fact group is missing: a check reading it is reported unjudged, not silent."""
    if snapshot.absent_sections:
        return None
    found = {SYSTEM_TENSORRT} if snapshot.cuda.tensorrt else set()
    for env in snapshot.environments:
        found.add(ANY_ENVIRONMENT)
        names = [d.name for d in env.distributions]
        found |= {fw.key for fw in FRAMEWORKS if any(fw.related(n) for n in names)}
        found |= {rt.framework for rt in env.runtimes}
        found |= {
            key for key, build in (("torch", env.torch), ("tensorflow", env.tensorflow)) if build
        }
    return found


def _modules(section: Section, holds: set[str] | None) -> tuple[str, ...]:
    """The modules of `section` whose checks can judge something where `holds` (None: all)."""
    modules = SECTION_MODULES[section]
    if section is not Section.FRAMEWORKS or holds is None:
        return modules
    return tuple(m for m in modules if holds.intersection(FRAMEWORK_MODULES[m.rsplit(".")[-1]]))


_LOADED: set[str] = set()


def load(sections: Iterable[Section], holds: set[str] | None = None) -> None:
    """Register the checks of `sections` (importing their modules), once; of the framework
    modules, with `holds` (see held), only those with something to judge."""
    for section in sections:
        for module in _modules(section, holds):
            if module not in _LOADED:
                # (__import__, not importlib's: -X importtime profiles only the former.)
                __import__(module)
                _LOADED.add(module)


def all_checks() -> list[Check]:
    load(list(Section))
    return _registered()


def _registered() -> list[Check]:
    """The checks registered so far, in report order (ORDER)."""
    return sorted(REGISTRY, key=lambda c: ORDER.index(c.id))


def sections_named(patterns: Iterable[str]) -> set[Section] | None:
    """The sections --only/--skip patterns can match, told from the patterns alone (a section's
    name, or an id or prefix whose first part is in ID_SECTIONS); None where one cannot be."""
    found: set[Section] = set()
    for pattern in patterns:
        p = pattern.rstrip("*")
        if p in {s.value for s in Section}:
            found.add(Section(p))
        elif p.split(".")[0] in ID_SECTIONS:
            found.add(ID_SECTIONS[p.split(".")[0]])
        else:
            return None
    # The checks their verdicts rest on run too (see run()).
    found |= {ID_SECTIONS[i.split(".")[0]] for s in list(found) for i in PREREQUISITES[s]}
    return found


class SelectionError(ValueError):
    pass


def _matches(pattern: str, check: Check) -> bool:
    # An id, an id prefix ("gpu", "gpu.", "gpu.*"), or a section name ("gpus", "cudnn").
    p = pattern.rstrip("*")
    if p == check.section.value:
        return True
    return check.id == p or check.id.startswith(p if p.endswith(".") else p + ".")


def select(only: list[str], skip: list[str], holds: set[str] | None = None) -> list[Check]:
    """The checks --only and --skip leave; with --only, only the sections they can match are
    imported (a pattern that names none loads every section, for the error's suggestions).
    Without --only, `holds` (see held) leaves out the framework checks with nothing to judge
    (with --only, a check asked for is reported even then: all are kept)."""
    named = sections_named(only + skip) if only else None
    if named is not None:
        load(named)
        checks = _registered()
    elif holds is None or only:
        checks = all_checks()
    else:
        load(list(Section), holds)
        modules = set(_modules(Section.FRAMEWORKS, holds))
        checks = [
            c
            for c in _registered()
            if c.section is not Section.FRAMEWORKS or c.func.__module__ in modules
        ]
    ids = [c.id for c in checks]
    for pattern in only + skip:
        if not any(_matches(pattern, c) for c in checks):
            if holds is not None:  # (a --skip of a check left out: known, with them all)
                return select(only, skip)
            close = difflib.get_close_matches(pattern, ids, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise SelectionError(f"no check matches {pattern!r}{hint}; see: gpucheck checks")
    if only:
        checks = [c for c in checks if any(_matches(p, c) for p in only)]
    return [c for c in checks if not any(_matches(p, c) for p in skip)]


def _evaluate(ctx: Context, chk: Check) -> Finding | None:
    from gpucheck.compat import CompatError

    missing = [group for group in chk.reads if group in ctx.snapshot.absent_sections]
    crash = None
    try:
        if missing and chk.section is Section.REQUIREMENTS and chk.func(ctx) is None:
            # A requirement is a check only when asked for (--min-*): unasked, it stays absent
            # whatever facts are missing (it answers None before reading any).
            outcome: Outcome | None = None
        elif missing:
            outcome = Outcome.skip(
                f"Not judged: the snapshot has no {' or '.join(missing)} facts",
                "missing facts are unknown, not a problem",
            )
        else:
            outcome = chk.func(ctx)
    except CompatError:
        raise  # bad compat data (a user's --compat-dir, say) is bad input: exit 2
    except Exception as exc:
        crash = crash_of(exc)
        outcome = Outcome(Status.ERROR, f"gpucheck's check {chk.id} failed: {crash.type}: {exc}")
        outcome.fix = bug_report_fix(chk.id)
    if outcome is None:
        return None
    fix = outcome.fix
    if fix is not None:  # a step's layer, where the check left it: the check's own
        layer = LAYER_OF[chk.section]
        fix = Fix(fix.text, [s if s.layer else replace(s, layer=layer) for s in fix.steps])
    return Finding(
        chk.id,
        chk.section,
        outcome.status,
        outcome.title,
        outcome.evidence,
        fix,
        outcome.subjects,
        crash,
    )


def crash_of(exc: BaseException) -> CheckCrash:
    """The exception and its frames, gpucheck's own files named from the package root (not
    from where it is installed, which may name the user)."""
    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename)
        try:
            shown = str(path.resolve().relative_to(_PACKAGE_PARENT))
        except ValueError:
            shown = path.name
        frames.append(Frame(shown, frame.lineno or 0, frame.name, frame.line or None))
    return CheckCrash(type(exc).__name__, str(exc), frames)


def bug_report_fix(check_id: str) -> Fix:
    """How to report a check that crashed: the JSON report keeps its traceback."""
    return Fix.of(
        Step.run(
            "this is a gpucheck bug: report it with the JSON report (it holds the traceback, "
            "under the finding's error)",
            f"gpucheck doctor --json --only {check_id} -o gpucheck-report.json",
        ),
        Step.run("and a snapshot", "gpucheck snapshot --redact -o gpucheck-snapshot.json"),
    )


_BLOCKING = (Status.FAIL, Status.SKIP, Status.ERROR)


def run(ctx: Context, checks: list[Check] | None = None, only: bool = False) -> list[Finding]:
    """Findings of `checks` (default: all) in report order. `only`: the checks were asked for
    by name (--only), so each is reported even with nothing to judge (as a skip saying why),
    and a failing prerequisite of theirs is reported with them."""
    chosen = checks if checks is not None else all_checks()
    wanted = {p for c in chosen for p in PREREQUISITES[c.section]} if only else set()
    load(ID_SECTIONS[p.split(".")[0]] for p in wanted)
    registered_now = _registered()  # (what select() loaded: the chosen and their prerequisites)
    prereqs = {
        c.id: f for c in registered_now if c.id in wanted and (f := _evaluate(ctx, c)) is not None
    }
    by_id = {c.id: c for c in chosen}
    findings = []
    for registered in registered_now:
        chk = by_id.get(registered.id)
        if chk is None:
            found = prereqs.get(registered.id)
            if found is not None and found.status in (Status.FAIL, Status.ERROR):
                findings.append(found)  # why the selected checks could not judge
            continue
        finding = prereqs.get(chk.id) or _evaluate(ctx, chk)
        if finding is None and only:
            before = [prereqs[p] for p in PREREQUISITES[chk.section] if p in prereqs]
            finding = _unjudged(chk, before)
        if finding is not None:
            findings.append(finding)
    return findings


def _unjudged(chk: Check, prerequisites: list[Finding]) -> Finding:
    blocked = next((p for p in prerequisites if p.status in _BLOCKING), None)
    if blocked is not None:
        said = {Status.FAIL: "failed", Status.SKIP: "was not judged", Status.ERROR: "broke"}
        why = f"Not judged: {blocked.id} {said[blocked.status]}"
        evidence = [f"{blocked.id}: {blocked.title}"]
    else:
        why = f"Not judged ({chk.summary}): nothing it looks at is present here"
        evidence = [f"{chk.id} looks at: {chk.summary}"]
    return Finding(chk.id, chk.section, Status.SKIP, why, evidence)
