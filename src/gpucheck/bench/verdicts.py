"""Findings from a bench run: each figure next to the GPU's spec and the CPU, a warning below
the documented fraction (spec.py) naming the likely cause from the facts at hand, and a fail
for a wrong answer or no GPU to measure. Pure: no I/O."""

from __future__ import annotations

import shlex
import statistics

from gpucheck.bench.measurements import DTYPES, BenchRun, GpuRun, Matmul
from gpucheck.bench.multi import multi_gpu_findings
from gpucheck.bench.spec import (
    MEMORY_FRACTION,
    PCIE_FRACTION,
    Comparison,
    Link,
    best_link,
    matmul_expectation,
)
from gpucheck.bench.unmeasured import cpu_finding, unmeasured
from gpucheck.compat.gpus import GpuIndex, GpuSpec
from gpucheck.model.finding import Finding, GpuRef, Status, Subjects
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.plural import counted, plural

SLOWDOWNS = {
    "sw_power_cap": "the power cap held the clocks down (sw_power_cap)",
    "hw_slowdown": "hardware slowdown was active (HW_SLOWDOWN: power or temperature protection)",
    "hw_thermal_slowdown": "the GPU was too hot: hardware thermal slowdown",
    "sw_thermal_slowdown": "software thermal slowdown (the driver cut clocks for temperature)",
    "hw_power_brake_slowdown": "the power supply's brake signal slowed the GPU (power brake)",
}
LABEL = {"fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16", "fp8": "FP8"}


def shape(m: Matmul) -> str:
    """FP16 8192³ (square), or FP16 16×8192×8192 (skinny: m rows times an n x n weight)."""
    return f"{LABEL[m.dtype]} {m.n}³" if m.m is None else f"{LABEL[m.dtype]} {m.m}×{m.n}×{m.n}"


def label(run: GpuRun) -> str:
    g = run.facts
    return f"GPU {g.index} ({g.name or 'unknown GPU'})"


def subjects(run: GpuRun) -> Subjects:
    g = run.facts
    return Subjects(gpus=[GpuRef(g.index, g.uuid, g.pci_bus_id)])


def finding(
    id_: str,
    status: Status,
    title: str,
    evidence: list[str],
    fix: Fix | None = None,
    run: GpuRun | None = None,
) -> Finding:
    return Finding(
        id_,
        Layer.BENCH,
        status,
        title,
        evidence,
        fix,
        subjects(run) if run is not None else Subjects(),
    )


def likely_causes(run: GpuRun, transfers: bool = False) -> list[tuple[str, list[Step]]]:
    """(cause, fix steps) pairs the facts support, most decisive first."""
    g, during = run.facts, run.during
    gpu = subjects(run).gpus
    causes: list[tuple[str, list[Step]]] = []
    if g.mig_enabled:
        causes.append(
            (
                "MIG mode is on: a MIG slice has only part of the GPU's SMs and bandwidth",
                [
                    Step.run(
                        "measure the whole GPU with MIG off (no process may use it)",
                        f"sudo nvidia-smi -i {g.index} -mig 0",
                        gpus=gpu,
                    )
                ],
            )
        )
    others = [p for p in (g.processes or [])]
    if others:
        pids = ", ".join(str(p.pid) + (f" {p.name}" if p.name else "") for p in others[:5])
        causes.append(
            (
                f"{counted(len(others), 'other process', 'other processes')} "
                f"{plural(len(others), 'was')} on the GPU when the run started ({pids})",
                [
                    Step.run("see who uses it", f"nvidia-smi -i {g.index}", gpus=gpu),
                    Step.manual("run bench on an idle GPU", Layer.JOB),
                ],
            )
        )
    for reason, text in SLOWDOWNS.items():
        if reason in during.clock_event_reasons:
            limit = (
                f" (limit {g.power_limit_w:g} W)"
                if reason == "sw_power_cap" and g.power_limit_w
                else ""
            )
            causes.append(
                (
                    f"{text}{limit} during the run",
                    [
                        Step.run(
                            "check cooling and power",
                            f"nvidia-smi -q -i {g.index} -d PERFORMANCE,POWER,TEMPERATURE",
                            gpus=gpu,
                        )
                    ],
                )
            )
    if transfers and g.pcie_gen_max and g.pcie_width_max:
        gen, width = during.pcie_gen_loaded, during.pcie_width_loaded
        if (gen is not None and gen < g.pcie_gen_max) or (
            width is not None and width < g.pcie_width_max
        ):
            causes.append(
                (
                    f"the PCIe link ran at gen {gen} x{width} under load, below its maximum "
                    f"gen {g.pcie_gen_max} x{g.pcie_width_max} (see the doctor's gpus.pcie-link)",
                    [
                        Step.run("see the link", f"nvidia-smi -q -i {g.index} -d PCI", gpus=gpu),
                        Step.hardware(
                            "reseat the card, use a x16 slot wired to the CPU, check the BIOS "
                            "PCIe generation setting",
                            gpu,
                        ),
                    ],
                )
            )
    return causes


def _no_cause(run: GpuRun) -> tuple[str, list[Step]]:
    return (
        "nothing in the facts at hand explains it (no slowdown reason, other process, MIG or "
        "link downgrade seen during the run)",
        [
            Step.run(
                "rule out the method on this GPU",
                "python benchmarks/bench_vs_reference.py",
                gpus=subjects(run).gpus,
            ),
            Step.manual("compare with another GPU of the same model"),
        ],
    )


def _warn_or_pass(
    id_: str, run: GpuRun, low: list[str], ok_title: str, evidence: list[str], transfers: bool
) -> Finding:
    if not low:
        return finding(id_, Status.PASS, ok_title, evidence, run=run)
    causes = likely_causes(run, transfers) or [_no_cause(run)]
    title = f"{label(run)}: {', '.join(low)} below the expected share of spec"
    lines = [*evidence, *(f"likely cause: {c}" for c, _ in causes)]
    steps = [step for _, fix in causes for step in fix]
    return finding(id_, Status.WARN, title, lines, Fix.of(*steps), run)


def matmul_findings(run: GpuRun, spec: GpuSpec | None, cpu_tflops: float | None) -> list[Finding]:
    out = []
    wrong = [m for m in run.matmuls if not m.correct]
    if wrong:
        lines = [
            f"{shape(m)}: relative error "
            + (f"{m.rel_error:.2e}" if m.rel_error is not None else "NaN/Inf")
            + f" against the CPU reference (tolerance {m.tolerance:g})"
            for m in wrong
        ]
        out.append(
            finding(
                "bench.correctness",
                Status.FAIL,
                f"{label(run)} computed a wrong matmul result: its answers cannot be trusted",
                lines,
                Fix.of(
                    Step.run("check the whole stack", "gpucheck doctor --deep"),
                    Step.run(
                        "check its memory",
                        f"nvidia-smi -q -i {run.facts.index} -d ECC,PAGE_RETIREMENT",
                    ),
                    Step.hardware(
                        "a GPU that computes wrong results needs service, whatever its speed",
                        subjects(run).gpus,
                    ),
                ),
                run,
            )
        )
    elif run.matmuls:
        checked = ", ".join(dict.fromkeys(LABEL[m.dtype] for m in run.matmuls))
        out.append(
            finding(
                "bench.correctness",
                Status.PASS,
                f"{label(run)}: matmul results match the CPU reference ({checked})",
                [],
                run=run,
            )
        )
    evidence: list[str] = []
    low: list[str] = []
    lowered: dict[tuple[float, str], list[str]] = {}
    for dtype in DTYPES:
        m = run.matmul(dtype)
        if m is None:
            if dtype in run.skipped:
                evidence.append(f"{LABEL[dtype]}: not measured: {run.skipped[dtype]}")
            continue
        ref = spec.tflops(dtype) if spec is not None else None
        expected = matmul_expectation(dtype, run.facts)
        if expected.why is not None and ref is not None:
            lowered.setdefault((expected.fraction, expected.why), []).append(LABEL[dtype])
        cmp = Comparison(m.tflops, ref, expected.fraction)
        line = f"{LABEL[dtype]} {m.n}³: {m.tflops:,.1f} TFLOPS"
        if cmp.fraction is not None:
            line += f" = {cmp.fraction:.0%} of {ref:,.1f} (spec, dense)"
        else:
            line += " (no spec figure for this dtype)"
        if cpu_tflops:
            line += f"; {m.tflops / cpu_tflops:,.0f}x the CPU's FP32"
        evidence.append(line)
        for skinny in run.skinny(dtype):
            # An LLM's decode step: bound by reading the n x n weight, not by the math.
            weight_gbs = skinny.n * skinny.n * 2 / (skinny.median_ms / 1000) / 1e9
            evidence.append(
                f"{shape(skinny)} (LLM decode, {skinny.m} tokens): {skinny.tflops:,.1f} TFLOPS, "
                f"the weight read at {weight_gbs:,.0f} GB/s"
            )
        if cmp.low:
            low.append(f"{LABEL[dtype]} matmul")
    for (fraction, why), labels in lowered.items():
        which = ", ".join(labels)
        evidence.append(f"expected here: {fraction:.0%} of spec or more ({which}): {why}")
    squares = [m for m in run.matmuls if m.m is None]
    if squares:
        best = max(squares, key=lambda m: m.tflops)
        title = f"{label(run)}: up to {best.tflops:,.1f} TFLOPS ({LABEL[best.dtype]} matmul)"
        if spec is None:
            evidence.append("no spec figures for this GPU in compat/gpus.toml: not judged")
        out.append(_warn_or_pass("bench.matmul", run, low, title, evidence, False))
    return out


# A sustained run whose last quarter is this much slower than its first has throttled.
SUSTAINED_DROP = 0.10


def sustained_findings(run: GpuRun) -> list[Finding]:
    """bench --duration: the matmul's rate over time, with NVML's clock, power and
    temperature beside it; a drop from the first quarter to the last is throttling."""
    points = run.sustained
    if len(points) < 2:
        return []
    quarter = max(1, len(points) // 4)
    first = statistics.median(p.tflops for p in points[:quarter])
    last = statistics.median(p.tflops for p in points[-quarter:])
    dtype, seconds = LABEL[points[0].dtype], points[-1].t
    lines = [
        f"{dtype} {points[0].n}³ for {seconds:,.0f} s: {first:,.1f} TFLOPS in the first "
        f"quarter, {last:,.1f} in the last ({last / first - 1:+.0%}); lowest "
        f"{min(p.tflops for p in points):,.1f}"
    ]
    timeline = run.during.timeline
    clocks = [s.clock_sm_mhz for s in timeline if s.clock_sm_mhz is not None]
    if clocks:
        lines.append(
            f"SM clock {clocks[0]:,} MHz at the start, {clocks[-1]:,} at the end, lowest "
            f"{min(clocks):,}"
        )
    power = [s.power_draw_w for s in timeline if s.power_draw_w is not None]
    temps = [s.temperature_c for s in timeline if s.temperature_c is not None]
    if power or temps:
        parts = [f"power up to {max(power):g} W" if power else ""]
        if run.facts.power_limit_w and power:
            parts[0] += f" (limit {run.facts.power_limit_w:g} W)"
        parts.append(f"temperature up to {max(temps)} °C" if temps else "")
        lines.append(", ".join(p for p in parts if p))
    if last >= first * (1 - SUSTAINED_DROP):
        title = f"{label(run)}: held {last:,.1f} TFLOPS ({dtype}) for {seconds:,.0f} s"
        return [finding("bench.sustained", Status.PASS, title, lines, run=run)]
    causes = likely_causes(run) or [_no_cause(run)]
    title = (
        f"{label(run)}: {dtype} matmul fell {1 - last / first:.0%} over {seconds:,.0f} s "
        "(throttling)"
    )
    lines += [f"likely cause: {c}" for c, _ in causes]
    return [
        finding(
            "bench.sustained",
            Status.WARN,
            title,
            lines,
            Fix.of(*(step for _, fix in causes for step in fix)),
            run,
        )
    ]


def memory_findings(run: GpuRun, spec: GpuSpec | None) -> list[Finding]:
    d2d = run.copy("d2d")
    if d2d is None:
        return []
    ref = spec.memory_bandwidth_gbs if spec is not None else None
    cmp = Comparison(d2d.gbs, ref, MEMORY_FRACTION)
    line = (
        f"device-to-device copy {d2d.bytes // 2 // 2**20} MiB: {d2d.gbs:,.0f} GB/s (read + write)"
    )
    if cmp.fraction is not None:
        line += f" = {cmp.fraction:.0%} of {ref:,.0f} GB/s (spec)"
    else:
        line += " (no spec bandwidth for this GPU)"
    low = ["memory bandwidth"] if cmp.low else []
    title = f"{label(run)}: memory bandwidth {d2d.gbs:,.0f} GB/s"
    return [_warn_or_pass("bench.memory", run, low, title, [line], False)]


def pcie_findings(run: GpuRun, spec: GpuSpec | None) -> list[Finding]:
    copies = {c.path: c for c in run.copies if c.path != "d2d"}
    if not copies:
        return []
    link: Link | None = best_link(run.facts, spec)
    evidence, low = [], []
    if link is not None:
        evidence.append(f"link: {link.text} ({link.source}): {link.gbs:.1f} GB/s each way")
    for path in ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable"):
        c = copies.get(path)
        if c is None:
            continue
        direction, memory = path.split("_")
        text = {"h2d": "host to device", "d2h": "device to host"}[direction]
        line = f"{text}, {memory}: {c.gbs:,.1f} GB/s"
        if link is not None:
            cmp = Comparison(c.gbs, link.gbs, PCIE_FRACTION)
            line += f" = {cmp.fraction:.0%} of the link" if cmp.fraction is not None else ""
            # Pageable copies go through a staging buffer: never judged against the link.
            if memory == "pinned" and cmp.low:
                low.append(f"{text} (pinned)")
        evidence.append(line)
    nodes = {c.numa_node for c in copies.values() if c.numa_node is not None}
    if nodes:
        evidence.append(f"host buffers on NUMA node {min(nodes)}, the GPU's")
    during = run.during
    if during.pcie_gen_loaded is not None:
        evidence.append(
            f"link under load: gen {during.pcie_gen_loaded} x{during.pcie_width_loaded}"
        )
    h2d = copies.get("h2d_pinned")
    title = f"{label(run)}: host transfers" + (
        f" {h2d.gbs:,.1f} GB/s (pinned, to device)" if h2d else ""
    )
    return [_warn_or_pass("bench.pcie", run, low, title, evidence, True)]


def _unfinished_fix(run: GpuRun, bench: BenchRun) -> Fix:
    cpu_build = (bench.framework_version or "").endswith("+cpu")
    if cpu_build or "not compiled with CUDA" in (run.problem or ""):
        # doctor's frameworks.torch.cpu-build knows the CUDA build that fits this driver, GPU and
        # environment (and what pins torch): point there rather than guess it here.
        python = f" --python {shlex.quote(bench.python)}" if bench.python else ""
        return Fix.of(
            Step.run(
                "this torch is a CPU build: frameworks.torch.cpu-build names the CUDA build to "
                "install",
                f"gpucheck doctor{python} --only frameworks.torch.cpu-build",
            )
        )
    return Fix.of(Step.run("see whether this GPU works at all", "gpucheck doctor --deep"))


def run_findings(run: GpuRun, bench: BenchRun) -> list[Finding]:
    if run.problem is not None:
        return [
            finding(
                "bench.run",
                Status.FAIL,
                f"{label(run)}: the measurement did not finish: {run.problem}",
                run.errors,
                _unfinished_fix(run, bench),
                run,
            )
        ]
    if run.errors:
        return [
            finding(
                "bench.run",
                Status.WARN,
                f"{label(run)}: {counted(len(run.errors), 'measurement')} failed",
                run.errors,
                Fix.of(
                    Step.info("see the errors"),
                    Step.run(
                        "out of memory means another process holds the GPU's memory",
                        f"nvidia-smi -i {run.facts.index}",
                        gpus=subjects(run).gpus,
                    ),
                ),
                run,
            )
        ]
    return []


def findings(bench: BenchRun, index: GpuIndex) -> list[Finding]:
    out = [cpu_finding(bench)]
    nothing = unmeasured(bench)
    if nothing is not None:
        return [*out, nothing]
    cpu_tflops = bench.cpu.matmul.tflops if bench.cpu.matmul else None
    for run in bench.gpus:
        spec = index.spec(run.facts.name or "")
        out += run_findings(run, bench)
        out += matmul_findings(run, spec, cpu_tflops)
        out += sustained_findings(run)
        out += memory_findings(run, spec)
        out += pcie_findings(run, spec)
    out += multi_gpu_findings(bench, index)
    return out
