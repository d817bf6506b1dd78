"""One ordered plan from many findings' fixes: each fix's recommended steps, once each, in the
fix's own order (its steps are a sequence: drain a node before resetting its GPU), and across
fixes lowest layer first; two steps that want one package at different versions are merged into
the one that satisfies both, or left out together as a conflict (never both printed).

Which steps `--apply` may run is decided here too, from the step's data alone (its tool, its
layer, its command), so the dry run says the same thing the apply will do.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timezone
from itertools import pairwise

from msgspec import Struct, field

from gpucheck.model.finding import PROBLEM, Finding
from gpucheck.model.fix import Change, Step, StepKind, Tool
from gpucheck.model.layers import LAYER_ORDER, Layer
from gpucheck.model.types import GpuRef
from gpucheck.version import __version__

PLAN_KIND = "gpucheck-fix-plan"  # a file without this is not one of our plans
# 1.1 added the plan's notes and a finding's not_planned (fix --from a report: what this
# gpucheck did not derive again from the report's snapshot, never planned from its text);
# 1.2 the host's operating system (its commands are PowerShell's on Windows: fix --format ps1)
PLAN_SCHEMA_VERSION = "1.2"


class PlanHost(Struct):
    """The machine the findings are of: --apply runs a plan only there."""

    hostname: str = ""
    host_id: str | None = None
    host_id_source: str | None = None
    from_file: str | None = None  # the plan was made from this saved report or snapshot
    os: str | None = None  # the snapshot's system.os ("Linux", "Windows"); None: unknown


class PlanFinding(Struct):
    id: str
    status: str
    title: str
    fixed_by: list[int] = field(default_factory=list)  # step numbers; empty: no step applies
    # Why no step is planned for it, where not for want of a fix (written by a report, not
    # derived again here): shown, never a command.
    not_planned: str | None = None


class PlanStep(Struct):
    number: int  # 1-based, in the order to run
    kind: StepKind
    text: str
    command: str | None
    tool: Tool | None
    layer: Layer
    environment: str | None
    changes: list[Change]
    gpus: list[GpuRef]
    findings: list[str]  # the findings this step repairs
    local: bool  # --apply runs it: it changes the probed Python environment only
    why_not_local: str | None  # printed only, and why (sudo, a driver, a person's work)


class Conflict(Struct):
    """Steps that want one package at versions no one step gives: none of them is planned."""

    package: str
    environment: str | None
    wants: list[str]  # "framework.torch-cuda: pip install torch==2.5.1" each
    findings: list[str]


class Plan(Struct):
    kind: str = PLAN_KIND
    plan_schema_version: str = PLAN_SCHEMA_VERSION
    tool_version: str = __version__
    created_at: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    host: PlanHost = field(default_factory=PlanHost)
    environments: list[str] = field(default_factory=list)  # the interpreters probed
    findings: list[PlanFinding] = field(default_factory=list)
    steps: list[PlanStep] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines a reader sees before the steps

    @property
    def local_steps(self) -> list[PlanStep]:
        return [s for s in self.steps if s.local]


# --- which steps are local ----------------------------------------------------------------

_INSTALLERS = {Tool.PIP, Tool.UV, Tool.CONDA}


def installer_commands(command: str) -> list[list[str]] | None:
    """Each installer command of `command` (one, or several joined by `&&`), as the arguments
    after `pip` (install/uninstall ...), or `conda install/remove ...` whole; None where any
    part is something else (a pipe, `;`, sudo, another program)."""
    if command.startswith("& '"):  # PowerShell's call operator before a quoted interpreter
        command = command[2:]
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        elif word and set(word) <= set(";&|<>()"):
            return None  # a list, pipe, redirection or subshell: not one installer command
        else:
            parts[-1].append(word)
    found = [_installer_args(part) for part in parts]
    return None if any(args is None for args in found) else [a for a in found if a is not None]


def _installer_args(words: list[str]) -> list[str] | None:
    if not words or any(w in ("||", ";", "|", ">", "<", "&", "sudo") for w in words):
        return None
    if words[0] == "conda":
        return words if len(words) > 1 and words[1] in ("install", "remove", "uninstall") else None
    if "pip" not in words:
        return None
    at = words.index("pip")
    before = words[:at]
    # pip ..., uv pip ..., PYTHON -m pip ...
    if before not in ([], ["uv"]) and not (len(before) == 2 and before[1] == "-m"):
        return None
    rest = words[at + 1 :]
    return rest if rest and rest[0] in ("install", "uninstall") else None


def why_not_local(step: Step, layer: Layer) -> str | None:
    """None where --apply may run the step; else why it stays printed."""
    if step.kind is StepKind.REBOOT:
        return "a reboot: yours to schedule"
    if step.kind is StepKind.HARDWARE:
        return "physical work on the machine"
    if step.kind is StepKind.INFO:
        if step.command is not None:
            return "changes nothing: a check to run yourself"
        return "nothing to run: what to look at"
    if step.kind is StepKind.MANUAL or step.command is None:
        return "a person's change: no one command makes it"
    if step.tool is Tool.ENV:
        return None  # written to the environment file the user sources
    if step.tool in (Tool.APT, Tool.DNF):
        return "a system package: needs root (sudo), outside the Python environment"
    if layer in (Layer.SYSTEM, Layer.DRIVER, Layer.GPUS):
        return f"changes the {layer.value}, outside the Python environment"
    if step.tool not in _INSTALLERS:
        return (
            f"a {step.tool.value if step.tool else 'shell'} command, outside the Python environment"
        )
    if installer_commands(step.command) is None:
        return "not only pip/uv/conda installs into the environment"
    return None


# --- the plan ------------------------------------------------------------------------------


class _Planned:
    """A step while planning: the step, its layer and the findings it serves."""

    def __init__(self, step: Step, layer: Layer, finding: str) -> None:
        self.step, self.layer, self.findings = step, layer, [finding]


def _same(a: Step, b: Step) -> bool:
    if a.command is not None or b.command is not None:
        return a.command == b.command and a.environment == b.environment
    return a.kind == b.kind and a.text == b.text


def _wanted(change: Change) -> str:
    if change.remove:
        return "removed"
    if change.to_version:
        return f"=={change.to_version}"
    return change.requirement or "any"


def _satisfies(version: str | None, requirement: str | None) -> bool:
    """Whether `version` meets the requirement ("<2", ">=12.6"); unparsable counts as no."""
    if requirement is None:
        return True
    if version is None:
        return False
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) in SpecifierSet(requirement)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _covers(a: Change, b: Change) -> bool:
    """Step with change `a` also gives what `b` asks for."""
    if a.remove or b.remove:
        return a.remove and b.remove
    if b.to_version is not None:
        return a.to_version == b.to_version
    return a.to_version is not None and _satisfies(a.to_version, b.requirement)


def build_plan(findings: list[Finding], host: PlanHost, environments: list[str]) -> Plan:
    planned: list[_Planned] = []
    sequences: list[list[_Planned]] = []  # each fix's planned steps, in the fix's order
    for finding in findings:
        if finding.status not in PROBLEM or finding.fix is None:
            continue
        default = finding.section.step_layer  # where a step does not say
        sequence: list[_Planned] = []
        for step in finding.fix.steps:
            if step.option != 0:
                continue  # another way to the same end: the plan takes the recommended one
            # once across fixes; but a step a fix repeats (reboot after the key, again after the
            # driver) is planned again, after what its fix puts between
            same = next((p for p in planned if _same(p.step, step) and p not in sequence), None)
            if same is None:
                same = _Planned(step, step.layer or default, finding.id)
                planned.append(same)
            elif finding.id not in same.findings:
                same.findings.append(finding.id)
            sequence.append(same)
        sequences.append(sequence)
    planned, conflicts, merged_into = _resolve(planned)
    kept = {id(p) for p in planned}
    sequences = [
        [q for q in (merged_into.get(id(p), p) for p in seq) if id(q) in kept] for seq in sequences
    ]
    planned = _in_order(planned, sequences)
    steps = [
        PlanStep(
            number=n,
            kind=p.step.kind,
            text=p.step.text,
            command=p.step.command,
            tool=p.step.tool,
            layer=p.layer,
            environment=p.step.environment,
            changes=list(p.step.changes),
            gpus=list(p.step.gpus),
            findings=p.findings,
            local=why_not_local(p.step, p.layer) is None,
            why_not_local=why_not_local(p.step, p.layer),
        )
        for n, p in enumerate(planned, 1)
    ]
    plan_findings = [
        PlanFinding(f.id, f.status.value, f.title, [s.number for s in steps if f.id in s.findings])
        for f in findings
        if f.status in PROBLEM
    ]
    return Plan(
        host=host,
        environments=environments,
        findings=plan_findings,
        steps=steps,
        conflicts=conflicts,
    )


def _in_order(planned: list[_Planned], sequences: list[list[_Planned]]) -> list[_Planned]:
    """A stable merge of the fixes' sequences: a step comes only after the steps its own fixes
    put before it; among the steps free to come next, the lowest layer first, then the one
    planned first. Where every fix's order already runs lowest layer first this is a plain sort
    by layer; where one does not (drain the node [job], then reset the GPU [gpus]), its order
    wins. Two fixes that share steps in opposite orders (a cycle) give way at the lowest step."""
    order = {layer: i for i, layer in enumerate(LAYER_ORDER)}
    rank = {id(p): (order[p.layer], i) for i, p in enumerate(planned)}
    after: dict[int, set[int]] = {id(p): set() for p in planned}  # steps that must come first
    for sequence in sequences:
        for before, step in pairwise(sequence):
            if before is not step:
                after[id(step)].add(id(before))
    placed: set[int] = set()
    waiting = list(planned)
    out: list[_Planned] = []
    while waiting:
        free = [p for p in waiting if after[id(p)] <= placed] or waiting
        step = min(free, key=lambda p: rank[id(p)])
        out.append(step)
        placed.add(id(step))
        waiting.remove(step)
    return out


def _resolve(
    planned: list[_Planned],
) -> tuple[list[_Planned], list[Conflict], dict[int, _Planned]]:
    """Steps changing one package in one environment: the one that covers the others stays
    (the others' findings, and their places in their fixes, move to it: the third result maps
    each merged step to it); where none does, all are left out as one conflict."""
    groups: dict[tuple[str | None, str], list[tuple[_Planned, Change]]] = {}
    for p in planned:
        for change in p.step.changes:
            groups.setdefault((p.step.environment, change.name.lower()), []).append((p, change))
    dropped: set[int] = set()
    merged_into: dict[int, _Planned] = {}
    conflicts: list[Conflict] = []
    for (env, name), wants in groups.items():
        if len({id(p) for p, _ in wants}) < 2:
            continue
        cover = next((p for p, c in wants if all(_covers(c, other) for _, other in wants)), None)
        if cover is not None:
            for p, _ in wants:
                if p is not cover:
                    dropped.add(id(p))
                    merged_into[id(p)] = cover
                    cover.findings += [f for f in p.findings if f not in cover.findings]
            continue
        conflicts.append(
            Conflict(
                package=name,
                environment=env,
                wants=[
                    f"{', '.join(p.findings)}: {p.step.command or p.step.text} ({_wanted(c)})"
                    for p, c in wants
                ],
                findings=sorted({f for p, _ in wants for f in p.findings}),
            )
        )
        dropped.update(id(p) for p, _ in wants)
    return [p for p in planned if id(p) not in dropped], conflicts, merged_into
