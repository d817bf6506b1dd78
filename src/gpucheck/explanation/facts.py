"""Where the text alone cannot decide, facts can: the GPUs' compute capability and the
framework's compiled architectures decide which build has code for the GPU ("no kernel
image"), the driver version decides the newest CUDA it runs ("driver insufficient"). The facts
come from a snapshot (--from) or, where the message itself names them, from the text; without
them a finding says which fact would decide and how to get it."""

from __future__ import annotations

import re
import shutil
import subprocess

from msgspec import Struct, field

from gpucheck.checks.frameworks.arch import Compiled, compiled_from, parse_arch_list
from gpucheck.compat import Compat, driver_text
from gpucheck.compat.answers import Pick
from gpucheck.compat.matching import Lines, Match
from gpucheck.install.picks import torch_pick
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.fix import Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot

GET_FACTS = "gpucheck snapshot -o snapshot.json"
AGAIN = "gpucheck explain FILE --from snapshot.json"
# torch's own warning names the GPU's capability and what the build carries:
# "... with CUDA capability sm_120 is not compatible ... supports CUDA capabilities sm_50 sm_60"
_CAPABILITY = re.compile(r"with CUDA capability sm_(\d+)")
_SUPPORTED = re.compile(r"supports CUDA capabilities ((?:(?:sm|compute)_\d+a? ?)+)")
_DEMANGLE_SECONDS = 2.0
# A pasted nvidia-smi header ("Driver Version: 535.104.05") or collect_env's line ("Nvidia
# driver version: 535.104.05") states the driver where no snapshot does.
_DRIVER = re.compile(r"(?:Driver Version|Nvidia driver version): (\d+\.\d+(?:\.\d+)?)")


FACT_DECISIONS = ("arch", "driver", "wsl")  # the decisions that read a snapshot's facts


class Decision(Struct):
    """What the facts added to a finding: evidence lines, and fix steps (those of option 0
    before the catalog's own step, other ways after it)."""

    evidence: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def cc_of_sm(sm: str) -> str:
    """'120' -> '12.0', '86' -> '8.6': the last digit is the minor."""
    return f"{int(sm[:-1])}.{sm[-1]}"


def _torch_env(snapshot: Snapshot) -> PythonEnvironment | None:
    return next((e for e in snapshot.environments if e.torch and e.torch.version), None)


def _compiled_torch(env: PythonEnvironment, compat: Compat) -> Compiled | None:
    """The torch build's architectures: as it reported them (--deep), else the data's row."""
    runtime = next((r for r in env.runtimes if r.framework == "torch" and r.arch_list), None)
    if runtime is not None:
        return parse_arch_list(runtime.arch_list, "torch.cuda.get_arch_list()")
    build = env.torch
    if build is None or not build.version or not build.cuda:
        return None
    row = compat.torch.arch(build.version, build.cuda)
    return compiled_from(row.sm, row.ptx, row.source) if row else None


def _env_os(env: PythonEnvironment | None, snapshot: Snapshot | None) -> str:
    """The OS column of the driver tables: the environment's platform, else the machine's."""
    platform = (env.platform if env is not None else None) or (
        snapshot.system.os if snapshot is not None else None
    )
    return "windows" if (platform or "").lower().startswith("win") else "linux"


def install_answer(
    compat: Compat, snapshot: Snapshot | None, ccs: list[str], driver: str | None
) -> Pick | None:
    """The torch build `gpucheck install torch` names for these GPUs and driver and the
    snapshot's Python: explain's advice is install's answer, never a wheel the Python lacks."""
    env = _torch_env(snapshot) if snapshot is not None else None
    python = env.version if env is not None else None
    return torch_pick(compat, ccs, driver, python, _env_os(env, snapshot))


def driver_of(lines: Lines, snapshot: Snapshot | None) -> tuple[str | None, str]:
    """The driver version and where it was read: the snapshot, else the pasted text."""
    if snapshot is not None and snapshot.nvml.driver_version:
        return snapshot.nvml.driver_version, ""
    found = _DRIVER.search(lines.text)
    if found is None:
        return None, ""
    return found.group(1), f" (line {lines.number(found.start())} of the text)"


def decide_arch(match: Match, lines: Lines, snapshot: Snapshot | None, compat: Compat) -> Decision:
    decision = Decision()
    gpus: list[tuple[str, str]] = []  # (label, compute capability)
    if snapshot is not None:
        gpus = [
            (f"GPU {g.index} ({g.name or 'unnamed'})", g.compute_capability)
            for g in snapshot.nvml.gpus
            if g.compute_capability
        ]
    if not gpus:
        found = _CAPABILITY.search(lines.text)
        if found:
            gpus = [("the GPU the message names", cc_of_sm(found.group(1)))]
    compiled: Compiled | None = None
    build_name = "the framework build"
    env = _torch_env(snapshot) if snapshot is not None else None
    if env is not None and env.torch is not None:
        build_name = f"torch {env.torch.version}"
        compiled = _compiled_torch(env, compat)
    if compiled is None:
        listed = _SUPPORTED.search(lines.text)
        if listed:
            compiled = parse_arch_list(listed.group(1).split(), "the message's own list")
            build_name = "the installed torch"
    if not gpus:
        decision.evidence.append(
            "undecided: the GPU's compute capability decides which build has code for it; "
            f"save the facts with `{GET_FACTS}` and run `{AGAIN}` again"
        )
        return decision
    for label, cc in gpus:
        name = compat.architecture(cc)
        arch = f"compute capability {cc}" + (f", {name}" if name else "")
        if compiled is None:
            decision.evidence.append(f"{label}: {arch}")
        else:
            how = compiled.covers(cc)
            verdict = f"has no code for it ({compiled.where(cc)})" if how is None else f"has {how}"
            decision.evidence.append(
                f"{label}: {arch}; {build_name} carries {compiled.text()}: {verdict}"
            )
    driver, _ = driver_of(lines, snapshot)
    pick = install_answer(compat, snapshot, [cc for _, cc in gpus], driver)
    if pick is not None:
        why = f"torch {pick.version} built with CUDA {pick.cuda} carries code for it"
        if driver:
            why += f" and runs on driver {driver}"
        decision.steps.append(Step.run(why, pick.install, Tool.PIP, layer=Layer.FRAMEWORKS))
    if not driver:
        decision.evidence.append(
            "the driver version decides which CUDA variant runs here: "
            f"`{GET_FACTS}` records it (then --from snapshot.json)"
        )
    return decision


def decide_driver(lines: Lines, snapshot: Snapshot | None, compat: Compat) -> Decision:
    decision = Decision()
    driver, where = driver_of(lines, snapshot)
    if not driver:
        decision.evidence.append(
            "undecided: the driver version decides the newest CUDA it runs; save the facts "
            f"with `{GET_FACTS}` and run `{AGAIN}` again"
        )
        return decision
    newest = compat.max_cuda_for_driver(driver)
    decision.evidence.append(
        f"driver {driver}{where} runs CUDA up to {newest}"
        if newest
        else f"driver {driver}{where}: older than every CUDA release the data knows"
    )
    env = _torch_env(snapshot) if snapshot is not None else None
    if env is not None and env.torch is not None and env.torch.cuda:
        need = compat.min_driver(env.torch.cuda)
        decision.evidence.append(
            f"torch {env.torch.version} is built with CUDA {env.torch.cuda}"
            + (f", which needs driver {driver_text(need)} or newer" if need else "")
        )
    gpus = snapshot.nvml.gpus if snapshot is not None else []
    ccs = [g.compute_capability for g in gpus if g.compute_capability]
    pick = install_answer(compat, snapshot, ccs, driver)
    if pick is not None and newest is not None:
        keep = Step.run(
            f"keep driver {driver}: torch {pick.version} built with CUDA {pick.cuda} runs on it",
            pick.install,
            Tool.PIP,
            layer=Layer.FRAMEWORKS,
        )
        keep.option = 1  # another way to the same end than the catalog's (a newer driver)
        decision.steps.append(keep)
    return decision


def demangled(symbol: str) -> str | None:
    """A C++ symbol as c++filt prints it, where c++filt is installed and answers in time."""
    tool = shutil.which("c++filt")
    if tool is None:
        return None
    try:
        done = subprocess.run(
            [tool, symbol],
            capture_output=True,
            text=True,
            timeout=_DEMANGLE_SECONDS,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    name = done.stdout.strip()
    return name if done.returncode == 0 and name and name != symbol else None


def decide_symbol(match: Match) -> Decision:
    decision = Decision()
    symbols = dict.fromkeys(
        found.group(0) for hit in match.hits for found in re.finditer(r"_Z\w+", hit.text)
    )
    for symbol in list(symbols)[:3]:
        name = demangled(symbol)
        decision.evidence.append(f"missing: {name}" if name else f"missing: {symbol}")
    return decision


def decide(match: Match, lines: Lines, snapshot: Snapshot | None, compat: Compat) -> Decision:
    how = match.message.decide
    if how == "arch":
        return decide_arch(match, lines, snapshot, compat)
    if how == "driver":
        return decide_driver(lines, snapshot, compat)
    if how == "symbol":
        return decide_symbol(match)
    return Decision()


def joined_facts(snapshot: Snapshot) -> list[str]:
    """The facts explain's decisions read from a snapshot: the driver, each GPU's compute
    capability, the torch builds; as the answer lists them."""
    facts = []
    if snapshot.nvml.driver_version:
        facts.append(f"driver {snapshot.nvml.driver_version}")
    facts += [
        f"GPU {g.index}: {g.name or 'unnamed'}, compute capability {g.compute_capability}"
        for g in snapshot.nvml.gpus
        if g.compute_capability
    ]
    facts += [
        f"torch {e.torch.version}" + (f" (CUDA {e.torch.cuda})" if e.torch.cuda else "")
        for e in snapshot.environments
        if e.torch is not None and e.torch.version
    ]
    return facts or ["none of those it needs: no driver version, no GPU, no torch build"]
