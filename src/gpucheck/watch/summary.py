"""What a watch saw, per GPU: min/mean/max of each number, the share of samples throttled
(and why), the samples the GPU was lost in, and the share it sat idle while its memory was
held: a job starved by its input pipeline, said in words with the usual remedies. Pure: a
fold of samples, live or read back from a log, one at a time: what it keeps per GPU is a few
numbers per field, whatever the number of samples."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpucheck.model.plural import counted
from gpucheck.probes.scripts.nvml_names import CLOCK_EVENT_BITS
from gpucheck.report.text import printable
from gpucheck.watch.log import FIELDS, IDENTITY, TEXT_FIELDS, LogError, Sample

# Clock event bits that mean "slowed down", not "idle" or "by request" (nvml.h's names, kept
# once in the probe scripts' table).
SLOWDOWN = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
THROTTLE_BITS = {bit: name for bit, name in CLOCK_EVENT_BITS.items() if bit & SLOWDOWN}
IDLE_UTILIZATION = 5  # percent: below this the GPU is doing (almost) nothing
BUSY_UTILIZATION = 50
HELD_FLOOR_MIB = 1024  # an idle GPU with nothing loaded shows under this (H100: 479 MiB)
STARVED_SHARE = 0.2  # idle-while-holding in a fifth of the samples of a working job
MAX_GPUS = 4096  # distinct GPU indices in one log: far above any machine; bounds the memory
NUMBERS = frozenset(
    f
    for f in FIELDS
    if f not in TEXT_FIELDS and f not in IDENTITY and f != "clocks_event_reasons.active"
)


@dataclass
class Stat:
    minimum: float
    mean: float
    maximum: float


@dataclass
class GpuSummary:
    index: int
    uuid: str | None
    name: str | None
    samples: int  # samples with this GPU answering
    failed: int = 0  # samples in which the GPU did not answer (lost, hung)
    first_failure: str | None = None  # why, the first time
    stats: dict[str, Stat] = field(default_factory=dict)
    throttled: int = 0
    throttle_reasons: dict[str, int] = field(default_factory=dict)  # reason -> samples
    busy: int = 0  # samples at or above BUSY_UTILIZATION
    idle_holding: int = 0  # samples idle while memory was held
    verdict: list[str] = field(default_factory=list)  # in words, for a person


@dataclass
class Summary:
    samples: int
    seconds: float
    gpus: list[GpuSummary]


def held(memory_used: float, memory_total: float | None) -> bool:
    floor = max(HELD_FLOOR_MIB, 0.05 * memory_total) if memory_total else HELD_FLOOR_MIB
    return memory_used >= floor


class Summarizer:
    """The summary folded one sample at a time."""

    def __init__(self) -> None:
        self.per: dict[int, GpuSummary] = {}
        # per GPU, per field: [minimum, maximum, total, count] so far
        self.numbers: dict[int, dict[str, list[float]]] = {}
        self.samples = 0
        self.first: float | None = None
        self.last = 0.0

    def add(self, sample: Sample) -> None:
        self.samples += 1
        if self.first is None:
            self.first = sample.time
        self.last = sample.time
        for g in sample.gpus:
            s = self.per.get(g.index)
            if s is None:
                if len(self.per) >= MAX_GPUS:
                    raise LogError(f"more than {MAX_GPUS} GPU indices: not one machine's log")
                s = self.per[g.index] = GpuSummary(g.index, None, None, 0)
                self.numbers[g.index] = {}
            s.uuid = s.uuid or _text(g.value("uuid"))
            s.name = s.name or _text(g.value("name"))
            if g.error:
                s.failed += 1
                s.first_failure = s.first_failure or g.error
                continue
            s.samples += 1
            series = self.numbers[g.index]
            values = g.values
            for name, value in values.items():
                if (type(value) is int or type(value) is float) and name in NUMBERS:
                    number = float(value)
                    running = series.get(name)
                    if running is None:
                        series[name] = [number, number, number, 1]
                    else:
                        if number < running[0]:
                            running[0] = number
                        if number > running[1]:
                            running[1] = number
                        running[2] += number
                        running[3] += 1
            _judge_sample(s, values)

    def result(self) -> Summary:
        for index, s in self.per.items():
            s.stats = {
                name: Stat(r[0], r[2] / r[3], r[1]) for name, r in self.numbers[index].items()
            }
            s.verdict = _verdict(s)
        seconds = self.last - self.first if self.first is not None and self.samples > 1 else 0.0
        return Summary(self.samples, seconds, [self.per[i] for i in sorted(self.per)])


def summarize(samples: Iterable[Sample]) -> Summary:
    folded = Summarizer()
    for sample in samples:
        folded.add(sample)
    return folded.result()


def _judge_sample(s: GpuSummary, values: Mapping[str, object]) -> None:
    bits = values.get("clocks_event_reasons.active")
    if isinstance(bits, int):
        reasons = [n for b, n in THROTTLE_BITS.items() if bits & b]
        if reasons:
            s.throttled += 1
            for r in reasons:
                s.throttle_reasons[r] = s.throttle_reasons.get(r, 0) + 1
    util = values.get("utilization.gpu")
    used = values.get("memory.used")
    total = values.get("memory.total")
    if isinstance(util, int | float):
        if util >= BUSY_UTILIZATION:
            s.busy += 1
        if (
            util < IDLE_UTILIZATION
            and isinstance(used, int | float)
            and held(used, total if isinstance(total, int | float) else None)
        ):
            s.idle_holding += 1


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "0%"


def _verdict(s: GpuSummary) -> list[str]:
    out = []
    if s.failed:
        out.append(
            f"did not answer in {counted(s.failed, 'sample')} ({s.first_failure}): a GPU that "
            "falls off the bus needs a reset or a reboot (`gpucheck doctor` says which)"
        )
    if s.throttled:
        why = ", ".join(
            f"{r} {_share(n, s.samples)}"
            for r, n in sorted(s.throttle_reasons.items(), key=lambda x: -x[1])
        )
        out.append(f"throttled in {_share(s.throttled, s.samples)} of samples ({why})")
    if s.samples and s.idle_holding / s.samples >= STARVED_SHARE:
        idle = _share(s.idle_holding, s.samples)
        if s.busy:
            out.append(
                f"idle in {idle} of samples while a process held its memory, and busy in "
                f"{_share(s.busy, s.samples)}: the job waits for its input. The usual remedies: "
                "more data-loader workers (PyTorch `DataLoader(num_workers=...)`, tf.data "
                "`num_parallel_calls`), pinned memory (`pin_memory=True`), prefetching "
                "(`prefetch_factor`, `dataset.prefetch(tf.data.AUTOTUNE)`), and data on local "
                "fast storage"
            )
        else:
            out.append(
                f"idle in {idle} of samples while memory was held, never busy: a process holds "
                "the GPU without computing (a stopped job, an open notebook kernel, a job waiting "
                "on something else); see who with `gpucheck procs`"
            )
    return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def render_text(summary: Summary) -> str:
    """The summary for a person, as plain lines; a control character read from a log (a GPU
    name is the driver's text) is shown as an escape, never sent to the terminal."""
    lines = [f"Summary: {counted(summary.samples, 'sample')} over {summary.seconds:.0f} s"]
    for s in summary.gpus:
        lines.append(f"GPU {s.index}  {s.name or ''}".rstrip())
        for name in FIELDS:  # every number the log has, in nvidia-smi's order
            st = s.stats.get(name)
            if st is not None:
                unit = f" {FIELDS[name]}" if FIELDS[name] else ""
                lines.append(
                    f"  {name:<38} min {st.minimum:g}  mean {st.mean:.1f}  max {st.maximum:g}{unit}"
                )
        if "memory.used" in s.stats:
            lines.append(
                "  (memory.used as nvidia-smi counts it, the driver's reservation left out; "
                "`gpucheck procs` counts it in)"
            )
        lines += [f"  ! {v}" for v in s.verdict] or [
            "  no throttling, no idle time with memory held"
        ]
    return "\n".join(printable(line) for line in lines) + "\n"
