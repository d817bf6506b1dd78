"""The live view of `gpucheck watch` on a terminal: one row per GPU with sparklines of
utilisation and memory over the last samples. Only ever shown on a terminal: pipes and files
get CSV or JSON lines."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from rich.table import Table
from rich.text import Text

from gpucheck.model.plural import counted
from gpucheck.watch.log import Sample
from gpucheck.watch.summary import THROTTLE_BITS

BARS = "▁▂▃▄▅▆▇█"
HISTORY = 40  # samples shown in a sparkline


# Why watch and procs disagree on used memory (procs says the same from its side).
MEMORY_CAPTION = (
    "MEMORY: used as nvidia-smi counts it, the driver's reservation left out "
    "(`gpucheck procs` counts it in)"
)


def sparkline(values: list[float | None], top: float = 100.0) -> str:
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        else:
            level = min(len(BARS) - 1, max(0, int(v / top * (len(BARS) - 1) + 0.5)))
            out.append(BARS[level])
    return "".join(out)


@dataclass
class LiveView:
    history: dict[int, tuple[deque[float | None], deque[float | None]]] = field(
        default_factory=dict
    )
    samples: int = 0

    def add(self, sample: Sample) -> None:
        self.samples += 1
        for g in sample.gpus:
            util, mem = self.history.setdefault(
                g.index, (deque(maxlen=HISTORY), deque(maxlen=HISTORY))
            )
            u = g.value("utilization.gpu")
            used, total = g.value("memory.used"), g.value("memory.total")
            util.append(float(u) if isinstance(u, int | float) else None)
            share = (
                100.0 * used / total
                if isinstance(used, int | float) and isinstance(total, int | float) and total
                else None
            )
            mem.append(share)

    def table(self, sample: Sample) -> Table:
        table = Table(box=None, padding=(0, 1), pad_edge=False, title_justify="left")
        table.title = f"gpucheck watch · {counted(self.samples, 'sample')} · Ctrl-C ends"
        table.caption = MEMORY_CAPTION
        for name in ("GPU", "UTIL", "", "MEMORY", "", "TEMP", "POWER", "SM", "NOTE"):
            table.add_column(name, no_wrap=True)
        for g in sample.gpus:
            util, mem = self.history.get(g.index, (deque(), deque()))
            if g.error:
                table.add_row(str(g.index), "", "", "", "", "", "", "", Text(g.error, style="red"))
                continue
            u = g.value("utilization.gpu")
            used, total = g.value("memory.used"), g.value("memory.total")
            temp, power, sm = (
                g.value("temperature.gpu"),
                g.value("power.draw"),
                g.value("clocks.current.sm"),
            )
            bits = g.value("clocks_event_reasons.active")
            note = ""
            if isinstance(bits, int):
                note = ", ".join(n for b, n in THROTTLE_BITS.items() if bits & b)
            table.add_row(
                str(g.index),
                Text(sparkline(list(util)), style="green"),
                f"{u}%" if u is not None else "?",
                Text(sparkline(list(mem)), style="cyan"),
                f"{_gib(used)}/{_gib(total)} GiB",
                f"{temp}°C" if temp is not None else "",
                f"{power:.0f} W" if isinstance(power, int | float) else "",
                f"{sm} MHz" if sm is not None else "",
                Text(note, style="yellow"),
            )
        return table


def _gib(mib: object) -> str:
    return f"{mib / 1024:.1f}" if isinstance(mib, int | float) else "?"
