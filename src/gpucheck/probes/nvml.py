"""Driver and GPU facts through NVML, gathered in a child process (see scripts/nvml.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from gpucheck.child.run import ChildResult, run_script, script
from gpucheck.model.decoding import DecodeError, from_dict
from gpucheck.model.fabric import GpuPair
from gpucheck.model.snapshot import GpuFacts, NvmlError, NvmlFacts, ProbeRun
from gpucheck.model.types import RunStatus

SCRIPT = script("gpucheck.probes", "nvml.py")
MAX_ATTEMPTS = 3


def probe_nvml(
    timeout: float, env: Mapping[str, str] | None = None, init: bool = True
) -> tuple[NvmlFacts, ProbeRun]:
    """Gather NVML facts within `timeout` seconds in all.

    A call that crashes the child is skipped on a retry (within the same time bound), so one
    bad driver function costs one field, not every GPU's facts.
    """
    start = time.monotonic()
    skipped: list[str] = []
    errors: list[str] = []
    facts = NvmlFacts()
    result = ChildResult()
    crash = None  # the first child's failure: a retry that completes does not erase it
    for _ in range(MAX_ATTEMPTS):
        remaining = timeout - (time.monotonic() - start)
        if remaining <= 0.2:
            break
        result = run_script(
            SCRIPT,
            [json.dumps({"skip": skipped, "init": init})],
            remaining,
            env=dict(env) if env is not None else None,
        )
        facts = assemble(result.records)
        problem = result.describe(timeout)
        if problem is None:
            break
        errors.append(problem)
        crash = crash or result.failure
        fn = (result.last_step or "").split(" ")[0]
        if result.status != "crashed" or not fn.startswith("nvmlDevice") or fn in skipped:
            break
        skipped.append(fn)
    duration = round((time.monotonic() - start) * 1000, 1)
    if not errors:
        return facts, ProbeRun("nvml", "ok", duration)
    status: RunStatus = "timeout" if result.timed_out else ("crashed" if skipped else result.status)
    if skipped and result.ok:
        errors.append(f"retried without {', '.join(skipped)}; the other facts are complete")
    failure = result.failure or crash
    return facts, ProbeRun("nvml", status, duration, "; ".join(errors), failure)


def assemble(records: list[dict[str, object]]) -> NvmlFacts:
    """Turn the child's records into NvmlFacts; malformed records are dropped, not fatal."""
    facts = NvmlFacts()
    for record in records:
        kind = record.get("kind")
        try:
            if kind == "header":
                err = record.get("init_error")
                facts.init_error = from_dict(NvmlError, err) if err else None
                facts.binding_version = _opt_str(record.get("binding_version"))
                facts.library_path = _opt_str(record.get("library_path"))
                facts.driver_version = _opt_str(record.get("driver_version"))
                facts.cuda_driver_version = _opt_int(record.get("cuda_driver_version"))
                facts.nvml_version = _opt_str(record.get("nvml_version"))
                facts.device_count = _opt_int(record.get("device_count"))
                facts.init_skipped_reason = _opt_str(record.get("init_skipped_reason"))
            elif kind == "gpu":
                facts.gpus.append(from_dict(GpuFacts, record.get("facts")))
            elif kind == "pairs":
                pairs = record.get("pairs")
                if isinstance(pairs, list):
                    facts.pairs = [from_dict(GpuPair, pair) for pair in pairs]
        except DecodeError:
            continue
    return facts


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
