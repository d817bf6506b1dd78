"""Run gpucheck bench's measurements: the CPU figure, then one child per GPU, one after the
other (side by side they would share the host's memory and PCIe and skew each other), each
with CUDA_VISIBLE_DEVICES naming only that GPU and bounded in time, while NVML is sampled so
that throttling or a link downgrade during the run can be named; then each pair of GPUs."""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from gpucheck.bench.measurements import (
    BenchRun,
    DuringRun,
    GpuRun,
    Sample,
    absorb,
    allreduce_from,
    cpu_from,
    peers_from,
)
from gpucheck.child.run import run_script, script
from gpucheck.model.frameworks import TORCH
from gpucheck.model.snapshot import GpuFacts
from gpucheck.probes.nvml import probe_nvml

SCRIPT = script("gpucheck.bench", "bench.py")
ALLREDUCE_SCRIPT = script("gpucheck.bench", "allreduce.py")
# All-reduce sizes: nccl-tests' range tops out in the hundreds of MiB, where busbw plateaus.
ALLREDUCE_SIZES = {False: [2**20, 2**24, 2**28], True: [2**20, 2**24]}
SAMPLE_EVERY = 1.0  # seconds between NVML samples during a GPU's run
LOADED = 50  # percent utilisation from which a sample counts as "under load"
IGNORED_REASONS = ("gpu_idle", "applications_clocks_setting", "display_clock_setting")


def child_env(env: Mapping[str, str], devices: list[GpuFacts]) -> dict[str, str]:
    """The child sees exactly these GPUs, in this order, as devices 0, 1, ..."""
    names = []
    for g in devices:
        mig = [m.uuid for m in g.mig_devices if m.uuid]
        names.append(mig[0] if g.mig_enabled and mig else (g.uuid or str(g.index)))
    return {**env, "CUDA_VISIBLE_DEVICES": ",".join(names), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def numa_node(gpu: GpuFacts, root: Path | None = None) -> int | None:
    """The NUMA node of the GPU's PCI device, from sysfs (None: unknown, or one node: -1)."""
    if not gpu.pci_bus_id:
        return None
    # NVML writes "00000000:18:00.0"; sysfs "0000:18:00.0".
    domain, _, rest = gpu.pci_bus_id.lower().partition(":")
    address = f"{domain[-4:]}:{rest}"
    base = root or Path(os.environ.get("GPUCHECK_ROOT") or "/")
    try:
        node = int((base / "sys/bus/pci/devices" / address / "numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def merge_sample(during: DuringRun, gpu: GpuFacts, t: float | None = None) -> None:
    """Fold one NVML reading into `during`; with `t` (seconds since the run began) it is kept
    in the timeline too (bench --duration)."""
    during.samples += 1
    if t is not None:
        during.timeline.append(
            Sample(
                round(t, 2),
                gpu.clock_sm_mhz,
                gpu.power_draw_w,
                gpu.temperature_c,
                gpu.utilization_gpu,
                [r for r in gpu.clock_event_reasons or [] if r not in IGNORED_REASONS],
            )
        )
    for reason in gpu.clock_event_reasons or []:
        if reason not in IGNORED_REASONS and reason not in during.clock_event_reasons:
            during.clock_event_reasons.append(reason)
    if gpu.utilization_gpu is not None and gpu.utilization_gpu >= LOADED:
        # The best link seen under load: a link that never reaches its maximum while busy did
        # not train up (at idle a lower generation is normal power saving).
        if gpu.pcie_gen_current is not None:
            during.pcie_gen_loaded = max(during.pcie_gen_loaded or 0, gpu.pcie_gen_current)
        if gpu.pcie_width_current is not None:
            during.pcie_width_loaded = max(during.pcie_width_loaded or 0, gpu.pcie_width_current)
    if gpu.temperature_c is not None:
        during.temperature_max_c = max(during.temperature_max_c or 0, gpu.temperature_c)
    if gpu.power_draw_w is not None:
        during.power_draw_max_w = max(during.power_draw_max_w or 0.0, gpu.power_draw_w)


class Sampler:
    """NVML, read every SAMPLE_EVERY seconds in a thread until stopped."""

    def __init__(
        self, target: GpuFacts, env: Mapping[str, str], init: bool, timeline: bool = False
    ) -> None:
        self.target, self.env, self.init = target, env, init
        self.timeline = timeline  # keep every sample (bench --duration), not only the merge
        self.during = DuringRun()
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            facts, _ = probe_nvml(5.0, self.env, self.init)
            t = time.monotonic() - self._start if self.timeline else None
            for g in facts.gpus:
                if (g.uuid and g.uuid == self.target.uuid) or (
                    not self.target.uuid and g.index == self.target.index
                ):
                    merge_sample(self.during, g, t)


def measure_cpu(
    python: str | None, framework: str | None, quick: bool, timeout: float, env: Mapping[str, str]
) -> BenchRun:
    args = {"device": "cpu", "quick": quick, "framework": framework or TORCH.key}
    # The CPU figure needs no GPU: hide them, so that no CUDA context is made.
    result = run_script(
        SCRIPT,
        [json.dumps(args)],
        timeout,
        python=python or sys.executable,
        env={**env, "CUDA_VISIBLE_DEVICES": ""},
    )
    cpu = cpu_from(result.records)
    if cpu.matmul is None and cpu.problem is None:
        cpu.problem = result.describe(timeout) or "no figure came back"
    return BenchRun(quick, python, framework, None, cpu)


def measure_gpus(
    bench: BenchRun,
    gpus: list[GpuFacts],
    timeout: float,
    env: Mapping[str, str],
    init: bool,
    progress: Callable[[str], None] = lambda _: None,
) -> None:
    assert bench.python is not None and bench.framework is not None
    for gpu in gpus:
        progress(f"measuring GPU {gpu.index} ({gpu.name or 'unknown'})")
        args = {
            "device": "cuda",
            "quick": bench.quick,
            "framework": bench.framework,
            "duration": bench.duration,
            "numa_node": numa_node(gpu),
        }
        with Sampler(gpu, env, init, timeline=bench.duration > 0) as sampler:
            result = run_script(
                SCRIPT,
                [json.dumps(args)],
                timeout + bench.duration,  # (the sustained run is on top of the burst)
                python=bench.python,
                env=child_env(env, [gpu]),
            )
        run = GpuRun(facts=gpu, during=sampler.during)
        absorb(run, result.records)
        if not result.ok:
            run.problem = result.describe(timeout) or "it failed"
            failure = result.failure
            if failure is not None and failure.how == "exited" and run.errors:
                # The error the child reported, not stderr's last line (which can be a stray
                # warning's source line, as NumPy's from a CPU-only torch).
                stage, _, said = run.errors[-1].partition(": ")
                run.problem = f"exited with status {failure.exit_code} in {stage}: {said}"
        elif not run.matmuls and not run.copies and not run.errors:
            run.problem = "no figure came back"
        bench.framework_version = bench.framework_version or run.framework_version
        bench.gpus.append(run)
    if len(gpus) >= 2 and bench.framework == TORCH.key:
        for a, b in itertools.combinations(gpus, 2):
            progress(f"measuring GPU {a.index} <-> GPU {b.index}")
            args = {"device": "peers", "quick": bench.quick, "framework": TORCH.key}
            result = run_script(
                SCRIPT, [json.dumps(args)], timeout, python=bench.python, env=child_env(env, [a, b])
            )
            bench.peers += peers_from(result.records, (a.index, b.index))
            errors = [r for r in result.records if r.get("kind") == "error"]
            if errors or not result.ok:
                problem = result.describe(timeout) or str(errors[0].get("message"))
                bench.peer_problem = f"GPU {a.index} <-> GPU {b.index}: {problem}"
        progress(f"all-reduce across {len(gpus)} GPUs (NCCL)")
        measure_allreduce(bench, len(gpus), timeout, child_env(env, gpus))


def measure_allreduce(
    bench: BenchRun,
    world: int,
    timeout: float,
    env: Mapping[str, str],
    backend: str = "nccl",
    device: str = "cuda",
) -> None:
    """All-reduce across `world` ranks in one child (its own worker processes): NCCL on the
    GPUs the env's CUDA_VISIBLE_DEVICES names, or gloo on CPU processes (the same harness
    without a GPU)."""
    assert bench.python is not None
    args = {
        "world": world,
        "backend": backend,
        "device": device,
        "sizes": ALLREDUCE_SIZES[bench.quick],
        "iterations": 5 if bench.quick else 20,
    }
    result = run_script(
        ALLREDUCE_SCRIPT, [json.dumps(args)], timeout, python=bench.python, env=dict(env)
    )
    bench.allreduce, problem = allreduce_from(result.records)
    if problem is None and not result.ok:
        problem = result.describe(timeout) or "it failed"
    bench.allreduce_problem = problem
