"""The fit report: the breakdown per GPU, a verdict per GPU considered, the largest batch that
fits, and every assumption; as text for a person and as JSON (keys stable)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import IO, Any

from gpucheck.exit_status import ExitStatus
from gpucheck.fit.html import render_html
from gpucheck.fit.parts import Estimate, Setup, compute_dtype, largest_batch, verdict
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.units import DTYPE_BYTES, gib, human_count
from gpucheck.report.output_format import Format, FunctionFormat, format_table, write_json
from gpucheck.report.text import printable
from gpucheck.version import __version__

# 1.1: active params, lower_bound, "may fit", serving split; 1.2: the checkpoint's quantization,
# attention and Mamba layers, the recurrent state per sequence
FIT_SCHEMA_VERSION = "1.2"


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
                "verdict": verdict(total, t.memory, self.estimate.lower_bound),
                "share": round(total / t.memory, 3),
                "largest_batch": largest_batch(self.estimate, t.memory),
            }
            for t in self.targets
        ]

    @property
    def exit_code(self) -> ExitStatus:
        """OK when every GPU judged fits (tight included); FAILED when one does not, or only a
        lower bound was counted ("may fit"); OK for a survey of every GPU (--all-gpus). With no
        GPU judged the command exits USAGE (cli/fit.py)."""
        if not self.gate:
            return ExitStatus.OK
        bad = ("does not fit", "may fit")
        return (
            ExitStatus.FAILED
            if any(v["verdict"] in bad for v in self.verdicts())
            else (ExitStatus.OK)
        )

    def to_dict(self) -> dict[str, Any]:
        s, e = self.setup, self.estimate
        return {
            "schema_version": FIT_SCHEMA_VERSION,
            "tool": {"name": "gpucheck", "version": __version__},
            "model": {
                "source": self.shape.source,
                "params": self.shape.params,
                "active_params": self.shape.active,
                "family": self.shape.family,
                "experts": self.shape.experts,
                "experts_per_token": self.shape.experts_per_token,
                "kv_elements_per_token": self.shape.kv_bytes_per_token_element,
                "mla": self.shape.mla,
                "sliding_window": self.shape.sliding_window,
                "encoder_layers": self.shape.encoder_layers,
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
                "quantization": _quantization(self.shape),
                "attention_layers": self.shape.kv_layers if self.shape.layers else None,
                "mamba_layers": self.shape.mamba_layers,
                "recurrent_state_elements": self.shape.recurrent_elements,
                "tower_params": self.shape.tower_params,
                "mtp_params": self.shape.mtp_params,
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
                "parallel": s.parallel if s.gpus > 1 else None,
                "kv_dtype": s.kv_dtype,
                "layout": s.layout if s.mode == "train" else None,
                "optimizer_states": s.optimizer_states if s.mode == "train" else None,
                "lora_rank": s.lora_rank,
                "lora_targets": list(s.lora_targets) if s.lora_rank else None,
                "fused_loss": s.fused_loss if s.mode == "train" else None,
            },
            "per_gpu": {
                "parts": [{"name": p.name, "bytes": int(p.bytes), "how": p.how} for p in e.parts],
                "total_bytes": int(e.total),
                "lower_bound": e.lower_bound,
                "per_sample_bytes": int(e.per_sample) if e.per_sample is not None else None,
            },
            "verdicts": self.verdicts(),
            "assumptions": [*self.shape.notes, *e.assumptions],
            "notes": self.notes,
            "exit_code": self.exit_code,
        }


def render_text(report: FitReport, stream: IO[str]) -> None:
    shape, setup, est = report.shape, report.setup, report.estimate

    def w(text: str) -> None:
        # A model's name, path or family from its config file, a GPU's name from a snapshot:
        # control characters escaped (printable), the lines this function ends kept.
        stream.write("\n".join(printable(line) for line in text.split("\n")))

    mode = "training" if setup.mode == "train" else "inference"
    count = f"{human_count(shape.params)} parameters"
    if shape.active_params is not None:
        count += f" ({human_count(shape.active_params)} active: {shape.experts_per_token} of "
        count += f"{shape.experts} experts)"
    w(f"gpucheck {__version__} fit: {count} ({shape.source})\n")
    if shape.kv_bytes_per_token_element and shape.decoder:
        kind = (
            "MLA latent"
            if shape.mla
            else (
                "MQA" if shape.kv_heads == 1 else "GQA" if shape.kv_heads != shape.heads else "MHA"
            )
        )
        b = DTYPE_BYTES[setup.kv_dtype or compute_dtype(setup.dtype)]
        w(f"  {shape.family or 'transformer'}, {shape.kv_layers} attention layers, {kind} "
          f"({shape.kv_heads} KV of {shape.heads} heads): KV cache "
          f"{shape.kv_bytes_per_token_element * b:,.0f} B a token at {b:g} B\n")  # fmt: skip
    what = f"{mode}, {setup.dtype}, batch {setup.batch} per GPU"
    if setup.seq:
        what += f", sequence {setup.seq}"
    if setup.mode == "train":
        what += f", {setup.optimizer}"
        what += ", activation checkpointing" if setup.checkpointing else ""
        what += f", LoRA rank {setup.lora_rank}" if setup.lora_rank else ""
    if setup.gpus > 1 and setup.mode == "train":
        what += f", {setup.gpus} GPUs" + (f" ZeRO stage {setup.zero}" if setup.zero else " DDP")
    elif setup.gpus > 1:
        what += f", {setup.gpus} GPUs {setup.parallel} parallel"
    if shape.mamba_layers:
        b = DTYPE_BYTES[compute_dtype(setup.dtype)]
        w(f"  {shape.mamba_layers} Mamba and {shape.kv_layers} attention layers of "
          f"{shape.layers}: recurrent state {shape.recurrent_elements * b:,.0f} B a sequence, "
          "at any length\n")  # fmt: skip
    fmt = shape.weight_format
    if fmt is not None:
        w(f"  stored as {fmt.method} ({fmt.how}, {fmt.bits:.3f} bits a weight)\n")
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


def _quantization(shape: ModelShape) -> dict[str, Any] | None:
    fmt = shape.weight_format
    if fmt is None:
        return None
    return {"method": fmt.method, "dtype": fmt.dtype, "bits_per_weight": round(fmt.bits, 3),
            "not_converted": list(fmt.skip)}  # fmt: skip


def render_json(report: FitReport, stream: IO[str]) -> None:
    write_json(report.to_dict(), stream)


def _render_html(report: FitReport, stream: IO[str]) -> None:
    said = io.StringIO()
    render_text(report, said)
    render_html(report.to_dict(), said.getvalue(), stream)


# The formats of `fit --format`, by name; text is the default.
FORMATS: dict[str, Format[FitReport]] = format_table(
    FunctionFormat("text", render_text),
    FunctionFormat("json", render_json),
    FunctionFormat("html", _render_html),
)
