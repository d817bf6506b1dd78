"""The facts `gpucheck explain` joins where the text cannot decide: by default this machine's,
probed now without the slow probes (no framework import, no GPU work) and within a bound; a
saved snapshot (--from); or none (--no-probe). The answer names where its facts came from and
which it joined."""

from __future__ import annotations

import time

from gpucheck.compat import Compat
from gpucheck.explanation import Explanation, explain
from gpucheck.explanation.facts import FACT_DECISIONS
from gpucheck.model.snapshot import Snapshot
from gpucheck.probes.run import ProbeOptions, collect

LIVE_TIMEOUT = 5.0  # seconds per probe; the probes run side by side
HERE = "this machine, probed now"


def probe_here(timeout: float = LIVE_TIMEOUT) -> tuple[Snapshot, str]:
    """This machine's snapshot without --deep, and how it is named in the answer."""
    start = time.monotonic()
    snapshot = collect(ProbeOptions(timeout=timeout))
    return snapshot, f"{HERE} ({time.monotonic() - start:.1f} s)"


def needs_facts(result: Explanation, compat: Compat) -> bool:
    """Whether a finding's message is one a fact decides (arch: the GPUs and the build;
    driver: the driver version)."""
    for finding in result.findings:
        message = compat.messages.get(finding.id.removeprefix("explain."))
        if message is not None and message.decide in FACT_DECISIONS:
            return True
    return False


def explain_here(
    text: str, compat: Compat, name: str, probe: bool = True, timeout: float = LIVE_TIMEOUT
) -> tuple[Explanation, Snapshot | None]:
    """The text explained with this machine's facts, probed only where a finding needs them
    (most texts need none: no probe, no time), and not at all with probe=False; and the
    snapshot joined, if any."""
    result = explain(text, compat, name=name)
    if not probe or not needs_facts(result, compat):
        return result, None
    snapshot, named = probe_here(timeout)
    return explain(text, compat, snapshot, name=name, facts_from=named), snapshot
