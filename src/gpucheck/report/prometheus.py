"""The report as Prometheus metrics, in the text exposition format, for node_exporter's textfile
collector (`doctor --format prometheus -o /var/lib/node_exporter/gpucheck.prom`).

Names follow Prometheus's conventions (https://prometheus.io/docs/practices/naming/): one
`gpucheck_` prefix, base units with their suffix (`_seconds`), `_info` for pseudo-metrics whose
labels carry versions, and no `_total` because nothing here is a counter: every value is what
this one report found. A check's status is a label on a series of value 1, one series per
check (per GPU where the finding names GPUs): a fleet of thousands of nodes keeps one series a
check rather than one per possible status, and a status change replaces the series when the
textfile is rewritten.

Per-GPU series also carry NVIDIA dcgm-exporter's labels (`gpu` index, `UUID`, `modelName`,
`Hostname`, as its metrics name them), so that a query joins a verdict to DCGM's telemetry with
`on(Hostname, UUID)` (the two exporters' `instance` labels differ: different ports).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO

from gpucheck.model.frameworks import PROBED
from gpucheck.model.snapshot import Snapshot
from gpucheck.report.core import Report
from gpucheck.report.text import printable
from gpucheck.version import __version__

PREFIX = "gpucheck_"

Labels = tuple[tuple[str, str], ...]


@dataclass
class Family:
    """One metric family: its help, and its samples keyed by label set (no duplicate series,
    which would make the textfile collector reject the whole file)."""

    name: str
    help: str
    samples: dict[Labels, float] = field(default_factory=dict)

    def add(self, value: float, **labels: str | None) -> None:
        key = tuple((k, v) for k, v in labels.items() if v is not None and v != "")
        self.samples.setdefault(key, value)

    def render(self) -> Iterable[str]:
        if not self.samples:
            return
        yield f"# HELP {self.name} {_escape_help(self.help)}"
        yield f"# TYPE {self.name} gauge"
        for labels, value in self.samples.items():
            inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
            yield (
                f"{self.name}{{{inner}}} {_number(value)}"
                if inner
                else f"{self.name} {_number(value)}"
            )


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    # Label values come from the machine (GPU names, paths, versions): control characters are
    # shown escaped (text.printable, as in every output), then the format's own escapes.
    return printable(text).replace("\\", "\\\\").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class PrometheusFormat:
    """Renders one report as the families below, in this order."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def families(self) -> list[Family]:
        return [
            self._checks(),
            self._scalar(
                "ready",
                "1 when no check failed (with --strict: none warned either).",
                1 if self.report.ready else 0,
            ),
            self._scalar(
                "exit_code",
                "The exit code of this report: 0 ready, 1 a check failed, 3 gpucheck itself broke, "
                "5 could not tell.",
                self.report.exit_code,
            ),
            self._counts(),
            self._fix_steps(),
            self._scalar(
                "report_timestamp_seconds",
                "When the facts of this report were gathered (Unix time; for --from, when the "
                "snapshot was taken, not when it was read): alert when it stops moving.",
                _timestamp(self.report.snapshot.created_at),
            ),
            *self._probes(),
            self._build_info(),
            self._driver_info(self.report.snapshot),
            self._gpu_info(self.report.snapshot),
            self._framework_info(self.report.snapshot),
        ]

    def _scalar(self, name: str, help: str, value: float | None) -> Family:
        family = Family(PREFIX + name, help)
        if value is not None:
            family.add(value)
        return family

    def _checks(self) -> Family:
        family = Family(
            PREFIX + "check_status",
            "One series per check (and per GPU it names), value 1; its status is the status "
            "label: pass, warn, fail, skip (not judged), info, error (a gpucheck bug).",
        )
        names = {g.uuid: g.name for g in self.report.snapshot.nvml.gpus if g.uuid}
        hostname = self.report.snapshot.system.hostname
        for f in self.report.findings:
            base = {"check": f.id, "section": f.section.value, "status": f.status.value}
            if not f.subjects.gpus:
                family.add(1, **base)
            for gpu in f.subjects.gpus:
                family.add(
                    1,
                    **base,
                    **_dcgm_labels(str(gpu.index), gpu.uuid, names.get(gpu.uuid or ""), hostname),
                )
        return family

    def _fix_steps(self) -> Family:
        family = Family(
            PREFIX + "fix_steps",
            "Steps of each problem's recommended fix, by kind: command (a script can run it); "
            "manual, reboot, hardware (a person must act); info.",
        )
        for f in self.report.problems:
            kinds = Counter(s.kind.value for s in (f.fix.steps if f.fix else []) if s.option == 0)
            for kind, count in sorted(kinds.items()):
                family.add(count, check=f.id, kind=kind)
        return family

    def _counts(self) -> Family:
        family = Family(PREFIX + "findings", "How many checks ended with each status.")
        for status, count in self.report.counts.items():
            family.add(count, status=status)
        return family

    def _probes(self) -> list[Family]:
        duration = Family(PREFIX + "probe_duration_seconds", "How long each probe ran.")
        success = Family(
            PREFIX + "probe_success",
            "1 when the probe gathered its facts; 0 when it failed, timed out, crashed or was "
            "skipped (the status label says which).",
        )
        for probe in self.report.snapshot.probes:
            duration.add(probe.duration_ms / 1000, probe=probe.name)
            success.add(1 if probe.status == "ok" else 0, probe=probe.name, status=probe.status)
        return [duration, success]

    def _build_info(self) -> Family:
        family = Family(PREFIX + "build_info", "The gpucheck that made this report.")
        family.add(1, version=__version__, strict=str(self.report.strict).lower())
        return family

    def _driver_info(self, snap: Snapshot) -> Family:
        family = Family(
            PREFIX + "driver_info",
            "The NVIDIA driver: kernel module, user-space (NVML) and its CUDA version.",
        )
        cuda = snap.nvml.cuda_driver_version
        labels = {
            "kernel_module": snap.system.nvidia_module_version,
            "driver_version": snap.nvml.driver_version,
            "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
        }
        if any(labels.values()):
            family.add(1, **labels)
        return family

    def _gpu_info(self, snap: Snapshot) -> Family:
        family = Family(PREFIX + "gpu_info", "Each GPU the driver answered for.")
        for gpu in snap.nvml.gpus:
            family.add(
                1,
                **_dcgm_labels(str(gpu.index), gpu.uuid, gpu.name, snap.system.hostname),
                name=gpu.name,
                pci_bus_id=gpu.pci_bus_id,
                compute_capability=gpu.compute_capability,
            )
        return family

    def _framework_info(self, snap: Snapshot) -> Family:
        family = Family(
            PREFIX + "framework_info",
            "Each deep-learning framework distribution installed in a probed Python environment.",
        )
        for env in snap.environments:
            for dist in env.distributions:
                if any(fw.owns(dist.name) for fw in PROBED):
                    family.add(1, python=env.python, package=dist.name, version=dist.version)
        return family


def _dcgm_labels(
    index: str, uuid: str | None, model: str | None, hostname: str | None
) -> dict[str, str | None]:
    """A GPU's labels: ours (gpu, gpu_uuid) and dcgm-exporter's names for the same facts."""
    return {
        "gpu": index,
        "gpu_uuid": uuid,
        "UUID": uuid,
        "modelName": model,
        "Hostname": hostname,
    }


def _timestamp(iso: str) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return None


def render_prometheus(report: Report, stream: IO[str], verbose: bool = False) -> None:
    for family in PrometheusFormat(report).families():
        for line in family.render():
            stream.write(line + "\n")
