"""The check registry: every check's id, layer and function, selection by id/prefix/layer
(`--only`, `--skip`), and the runner that turns outcomes into findings.

What it knows of the checks it reads from the layer packages' declarations (each package's
DECLARED, see declarations.py): the report order, the module that registers each id, the layer
an id belongs to, the facts a layer reads and its prerequisites."""

from __future__ import annotations

import difflib
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct
from msgspec.structs import replace

from gpucheck.checks import (
    cuda,
    cudnn,
    driver,
    frameworks,
    gpus,
    network,
    requirements,
    system,
)
from gpucheck.checks.context import on_windows
from gpucheck.checks.declarations import ANY_ENVIRONMENT, SYSTEM_TENSORRT, LayerChecks
from gpucheck.checks.renamed import current_pattern
from gpucheck.model.finding import CheckCrash, Finding, Frame, Outcome, Status
from gpucheck.model.fix import Fix, Step
from gpucheck.model.frameworks import FRAMEWORKS
from gpucheck.model.layers import Layer
from gpucheck.model.shell import powershell_words

if TYPE_CHECKING:
    from gpucheck.checks.context import Context
    from gpucheck.model.snapshot import Snapshot

_PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding gpucheck/

CheckFunc = Callable[["Context"], "Outcome | None"]

# The layers that hold checks, in the report's order (Layer's).
DECLARED: tuple[LayerChecks, ...] = tuple(
    sorted(
        (
            system.DECLARED,
            driver.DECLARED,
            gpus.DECLARED,
            network.DECLARED,
            cuda.DECLARED,
            cudnn.DECLARED,
            frameworks.DECLARED,
            requirements.DECLARED,
        ),
        key=lambda d: list(Layer).index(d.layer),
    )
)
_OF_LAYER = {d.layer: d for d in DECLARED}
# Every check, in report order: the layers in Layer's order, each in its declaration's order.
# This list, not the order modules are imported in, decides the order; a check missing from
# it cannot register.
ORDER: tuple[str, ...] = tuple(id for d in DECLARED for id, _ in d.checks)
# The module whose import registers each check, and the layer each check belongs to.
MODULE_OF: dict[str, str] = {id: d.module(name) for d in DECLARED for id, name in d.checks}
LAYER_OF_ID: dict[str, Layer] = {id: d.layer for d in DECLARED for id, _ in d.checks}
READS: dict[Layer, tuple[str, ...]] = {d.layer: d.reads for d in DECLARED}
PREREQUISITES: dict[Layer, tuple[str, ...]] = {d.layer: d.prerequisites for d in DECLARED}
# The modules whose import registers each layer's checks: a doctor with --only imports the
# modules of the layers it names (and of their prerequisites), no more.
SECTION_MODULES: dict[Layer, tuple[str, ...]] = {
    d.layer: tuple(dict.fromkeys(d.module(name) for _, name in d.checks)) for d in DECLARED
}
# The layer an id's first word names ("gpus.ecc-errors": gpus).
ID_SECTIONS: dict[str, Layer] = {id.split(".")[0]: layer for id, layer in LAYER_OF_ID.items()}
# The framework modules, each with what a snapshot must hold for its checks to judge anything.
FRAMEWORK_MODULES: dict[str, tuple[str, ...]] = frameworks.DECLARED.module_needs


class Check(Struct, frozen=True):
    id: str
    section: Layer
    summary: str  # what it looks at, for `gpucheck checks` and docs/checks.md
    func: CheckFunc
    reads: tuple[str, ...] = ()  # snapshot fact groups: its layer's (READS)


REGISTRY: list[Check] = []


def check(id: str, summary: str) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check declared in its layer's declaration (which gives its layer and its
    place in the report), from the module the declaration names."""

    def register(func: CheckFunc) -> CheckFunc:
        if id not in MODULE_OF:
            raise ValueError(f"check {id} is not declared in its layer's package (checks/*/)")
        if func.__module__ != MODULE_OF[id]:
            raise ValueError(f"check {id} is declared in {MODULE_OF[id]}, not {func.__module__}")
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id}")
        layer = LAYER_OF_ID[id]
        REGISTRY.append(Check(id, layer, summary, func, READS[layer]))
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


def _modules(section: Layer, holds: set[str] | None) -> tuple[str, ...]:
    """The modules of `section` whose checks can judge something where `holds` (None: all)."""
    declared = _OF_LAYER.get(section)
    if declared is None:
        return ()  # a layer only fix steps change: it holds no checks
    modules = SECTION_MODULES[section]
    if holds is None:
        return modules
    needs = declared.module_needs
    return tuple(
        m
        for m in modules
        if (need := needs.get(m.rsplit(".")[-1])) is None or holds.intersection(need)
    )


_LOADED: set[str] = set()


def load(sections: Iterable[Layer], holds: set[str] | None = None) -> None:
    """Register the checks of `sections` (importing their modules), once; of the framework
    modules, with `holds` (see held), only those with something to judge."""
    for section in sections:
        for module in _modules(section, holds):
            if module not in _LOADED:
                # (__import__, not importlib's: -X importtime profiles only the former.)
                __import__(module)
                _LOADED.add(module)


def all_checks() -> list[Check]:
    load(list(Layer))
    return _registered()


def _registered() -> list[Check]:
    """The checks registered so far, in report order (ORDER)."""
    return sorted(REGISTRY, key=lambda c: ORDER.index(c.id))


def sections_named(patterns: Iterable[str]) -> set[Layer] | None:
    """The sections --only/--skip patterns can match, told from the patterns alone (a section's
    name, or an id or prefix whose first part is in ID_SECTIONS); None where one cannot be."""
    found: set[Layer] = set()
    for pattern in patterns:
        p = pattern.rstrip("*")
        if p in {s.value for s in SECTION_MODULES}:
            found.add(Layer(p))
        elif p.split(".")[0] in ID_SECTIONS:
            found.add(ID_SECTIONS[p.split(".")[0]])
        else:
            return None
    # The checks their verdicts rest on run too (see run()).
    found |= {LAYER_OF_ID[i] for s in list(found) for i in PREREQUISITES[s]}
    return found


class SelectionError(ValueError):
    pass


def _matches(pattern: str, check: Check) -> bool:
    # An id, an id prefix ("gpus.", "gpus.*", "frameworks.torch"), or a layer's name ("gpus").
    p = pattern.rstrip("*")
    if p == check.section.value:
        return True
    return check.id == p or check.id.startswith(p if p.endswith(".") else p + ".")


def select(only: list[str], skip: list[str], holds: set[str] | None = None) -> list[Check]:
    """The checks --only and --skip leave; with --only, only the sections they can match are
    imported (a pattern that names none loads every section, for the error's suggestions).
    Without --only, `holds` (see held) leaves out the framework checks with nothing to judge
    (with --only, a check asked for is reported even then: all are kept). A 3.x check id or
    prefix selects what it names now (checks/renamed.py)."""
    asked = {current_pattern(p): p for p in only + skip}  # (the errors name these)
    only = [current_pattern(p) for p in only]
    skip = [current_pattern(p) for p in skip]
    named = sections_named(only + skip) if only else None
    if named is not None:
        load(named)
        checks = _registered()
    elif holds is None or only:
        checks = all_checks()
    else:
        load(list(Layer), holds)
        modules = set(_modules(Layer.FRAMEWORKS, holds))
        checks = [
            c
            for c in _registered()
            if c.section is not Layer.FRAMEWORKS or c.func.__module__ in modules
        ]
    ids = [c.id for c in checks]
    for pattern in only + skip:
        if not any(_matches(pattern, c) for c in checks):
            if holds is not None:  # (a --skip of a check left out: known, with them all)
                return select(only, skip)
            close = difflib.get_close_matches(pattern, ids, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            shown = asked.get(pattern, pattern)
            raise SelectionError(f"no check matches {shown!r}{hint}; see: gpucheck checks")
    if only:
        checks = [c for c in checks if any(_matches(p, c) for p in only)]
    return [c for c in checks if not any(_matches(p, c) for p in skip)]


def _evaluate(ctx: Context, chk: Check) -> Finding | None:
    from gpucheck.compat import CompatError

    missing = [group for group in chk.reads if group in ctx.snapshot.absent_sections]
    crash = None
    try:
        if missing and chk.section is Layer.REQUIREMENTS and chk.func(ctx) is None:
            # A requirement is a check only when asked for (--min-*): unasked, it stays absent
            # whatever facts are missing (it answers None before reading any).
            outcome: Outcome | None = None
        elif missing:
            outcome = Outcome.skip(
                f"Not judged: the snapshot has no {' or '.join(missing)} facts",
                "missing facts are unknown, not a problem",
            )
        else:
            with powershell_words(on_windows(ctx)):  # a Windows machine's commands: PowerShell's
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
        layer = chk.section.step_layer
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
    load(LAYER_OF_ID[p] for p in wanted)
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
