"""`gpucheck install --apply`: the install answer's commands as a one-finding plan, so that it
runs through the same journal as `gpucheck fix --apply` (pip freeze recorded first, each step
recorded, `gpucheck fix --undo RECORD` restores the environment), and the doctor again after."""

from __future__ import annotations

import socket

from gpucheck.fixplan import diagnose
from gpucheck.fixplan.plan import Plan, PlanHost, build_plan
from gpucheck.inputs import load_compat, probe_here
from gpucheck.install.answer import InstallAnswer
from gpucheck.model.finding import PROBLEM, Finding, Status
from gpucheck.model.fix import Fix, Step, Tool
from gpucheck.model.layers import Layer

FINDING = "install.requested"
# conda is not here: the record is the environment's pip freeze list, which cannot undo it
TOOLS = {"pip": Tool.PIP, "uv-pip": Tool.UV}


class NotAppliable(ValueError):
    """The answer cannot be applied here: one line (usage)."""


def install_plan(answer: InstallAnswer) -> Plan:
    if answer.machine != "this machine":
        raise NotAppliable(f"--apply installs on this machine, not the {answer.machine}")
    if not answer.commands or not answer.ok:
        raise NotAppliable("--apply: nothing to install (no build fits, or a conflict: see above)")
    tool = TOOLS.get(answer.installer)
    if answer.installer in ("conda", "mamba"):
        raise NotAppliable(
            f"--apply cannot undo a {answer.installer} install (its record is pip's freeze "
            "list): run the commands above yourself, or --installer pip"
        )
    if tool is None:
        raise NotAppliable(
            f"--apply runs pip and uv pip commands; with {answer.installer}, run the "
            "commands above yourself (or --installer pip)"
        )
    if answer.environment is None:
        raise NotAppliable("--apply: no Python environment was probed to install into")
    steps = [
        Step.run(
            f"install {', '.join(p.name for p in answer.packages)}",
            line,
            tool,
            environment=answer.environment,
            layer=Layer.FRAMEWORKS,
        )
        for line in answer.commands
    ]
    finding = Finding(
        FINDING,
        Layer.FRAMEWORKS,
        Status.WARN,
        "install the builds that run on this machine",
        [f"{p.name}: {p.requirement}" for p in answer.packages],
        Fix.of(*steps),
    )
    return build_plan([finding], PlanHost(socket.gethostname(), None, None), [answer.environment])


def after_install(python: str, timeout: float) -> str:
    """The doctor again on the environment installed into: its framework problems, if any."""
    snapshot = probe_here(timeout, python)
    found = diagnose(snapshot, load_compat(None))
    problems = [f.id for f in found if f.status in PROBLEM and f.section is Layer.FRAMEWORKS]
    if not problems:
        return "Doctor again: no framework problems"
    return f"Doctor again: framework problems remain: {', '.join(sorted(set(problems)))}"
