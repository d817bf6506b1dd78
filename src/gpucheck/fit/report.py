"""The fit report: the breakdown per GPU, a verdict per GPU considered, the largest batch that
fits, and every assumption; as text for a person and as JSON (keys stable)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

from gpucheck.fit.estimate import Estimate, Setup, largest_batch, verdict
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.units import gib, human_count
from gpucheck.version import __version__

FIT_SCHEMA_VERSION = "1.0"


@dataclass
class Target:
    """A GPU the estimate is judged against."""

    label: str  # "GPU 0 (NVIDIA H100 80GB HBM3)", "--gpu-memory 80GiB", "NVIDIA A100 (80 GB)"
    memory: int  # bytes
    index: int | None = None  # this machine's GPU index


@dataclass
class FitReport:
    shape: ModelShape
    setup: Setup
    estimate: Estimate
    targets: list[Target]
    notes: list[str] = field(default_factory=list)  # why there are no targets, and such
    gate: bool = True  # False for --all-gpus: a survey, not a verdict on this job

    def verdicts(self) -> list[dict[str, Any]]:
        total = self.estimate.total
        return [
            {
                "gpu": t.label,
                "index": t.index,
                "memory_bytes": t.memory,
                "verdict": verdict(total, t.memory),
                "share": round(total / t.memory, 3),
                "largest_batch": largest_batch(self.estimate, t.memory),
            }
            for t in self.targets
        ]

    @property
    def exit_code(self) -> int:
        """0 when every GPU judged fits (tight included), 1 when one does not; 0 with none, and
        for a survey of every GPU (--all-gpus)."""
        if not self.gate:
            return 0
        return 1 if any(v["verdict"] == "does not fit" for v in self.verdicts()) else 0

    def to_dict(self) -> dict[str, Any]:
        s, e = self.setup, self.estimate
        return {
            "schema_version": FIT_SCHEMA_VERSION,
            "tool": {"name": "gpucheck", "version": __version__},
            "model": {
                "source": self.shape.source,
                "params": self.shape.params,
                "param_bytes": self.shape.param_bytes,
                "param_dtypes": self.shape.param_dtypes,
                "architecture": self.shape.architecture,
                "layers": self.shape.layers,
                "hidden": self.shape.hidden,
                "heads": self.shape.heads,
                "kv_heads": self.shape.kv_heads,
                "head_dim": self.shape.head_dim,
                "intermediate": self.shape.intermediate,
                "vocab": self.shape.vocab,
                "traced_activation_bytes": self.shape.traced_activation_bytes,
            },
            "setup": {
                "mode": s.mode,
                "dtype": s.dtype,
                "batch": s.batch,
                "seq": s.seq,
                "optimizer": s.optimizer if s.mode == "train" else None,
                "master_weights": s.master_weights if s.mode == "train" else None,
                "checkpointing": s.checkpointing if s.mode == "train" else None,
                "gpus": s.gpus,
                "zero": s.zero,
                "flash_attention": s.flash_attention,
            },
            "per_gpu": {
                "parts": [{"name": p.name, "bytes": int(p.bytes), "how": p.how} for p in e.parts],
                "total_bytes": int(e.total),
                "per_sample_bytes": int(e.per_sample) if e.per_sample is not None else None,
            },
            "verdicts": self.verdicts(),
            "assumptions": [*self.shape.notes, *e.assumptions],
            "notes": self.notes,
            "exit_code": self.exit_code,
        }


def render_text(report: FitReport, stream: IO[str]) -> None:
    shape, setup, est = report.shape, report.setup, report.estimate
    w = stream.write
    mode = "training" if setup.mode == "train" else "inference"
    w(f"gpucheck {__version__} fit: {human_count(shape.params)} parameters ({shape.source})\n")
    what = f"{mode}, {setup.dtype}, batch {setup.batch} per GPU"
    if setup.seq:
        what += f", sequence {setup.seq}"
    if setup.mode == "train":
        what += f", {setup.optimizer}"
        what += ", activation checkpointing" if setup.checkpointing else ""
    if setup.gpus > 1:
        what += f", {setup.gpus} GPUs" + (f" ZeRO stage {setup.zero}" if setup.zero else " DDP")
    w(f"  {what}\n\nPer GPU\n")
    for part in est.parts:
        w(f"  {part.name:<14}{gib(part.bytes):>12}   {part.how}\n")
    w(f"  {'total':<14}{gib(est.total):>12}\n")
    if report.targets:
        w("\nVerdict\n")
        for v in report.verdicts():
            batch = v["largest_batch"]
            tail = "" if batch is None else f"; largest batch that fits: {batch}"
            w(
                f"  {v['verdict']:<13} {v['gpu']}: {gib(est.total)} of {gib(v['memory_bytes'])}"
                f" ({v['share']:.0%}){tail}\n"
            )
    for note in report.notes:
        w(f"\n  {note}\n")
    w("\nAssumptions\n")
    for line in [*shape.notes, *est.assumptions]:
        w(f"  - {line}\n")
