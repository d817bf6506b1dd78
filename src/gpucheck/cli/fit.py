"""`gpucheck fit`: estimate the memory a model needs per GPU to train or serve, and say whether
it fits this machine's GPUs (or a given size, or every GPU in the compat data)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from gpucheck.cli import completion
from gpucheck.cli.common import (
    JsonOpt,
    OutputOpt,
    PythonOpt,
    TimeoutOpt,
    UserError,
    one_python,
    python_inputs,
    refuse_input_as_output,
    write_output,
)
from gpucheck.exit_status import ExitStatus
from gpucheck.model.frameworks import TORCH

if TYPE_CHECKING:
    from gpucheck.fit.shape import ModelShape


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "it fits every GPU judged (or --all-gpus: a survey)",
    ExitStatus.FAILED: (
        'it does not fit one, only a lower bound was counted ("may fit"), no GPU was judged, '
        "or --gpus asks for more GPUs than the machine has"
    ),
    ExitStatus.UNKNOWN: (
        "could not tell: a GPU NVML cannot open (lost), or a driver that is not loaded"
    ),
}


def fit(
    model: Annotated[
        str | None,
        typer.Argument(
            metavar="[MODEL]",
            help="A local config.json, *.safetensors, *.safetensors.index.json, or a folder "
            "holding them. Nothing is downloaded.",
        ),
    ] = None,
    params: Annotated[
        str | None,
        typer.Option("--params", metavar="N", help="Parameter count with a suffix: 7B, 125M."),
    ] = None,
    torch_module: Annotated[
        str | None,
        typer.Option(
            "--torch-module",
            metavar="MOD:FN",
            help="A function returning a torch.nn.Module, traced on the meta device.",
        ),
    ] = None,
    input_shape: Annotated[
        str | None,
        typer.Option("--input", metavar="SHAPE", help="Input of --torch-module without batch."),
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            metavar="DTYPE",
            help="fp32, fp16, bf16, fp8, int8, int4 or nf4 (default: the checkpoint's "
            "quantisation, else bf16).",
            autocompletion=completion.fit_dtypes,
        ),
    ] = None,
    train: Annotated[
        bool, typer.Option("--train/--infer", help="A training step (default) or serving.")
    ] = True,
    optimizer: Annotated[
        str | None,
        typer.Option(
            "--optimizer",
            metavar="NAME",
            help="adamw (default), adam, sgd, adafactor or 8bit.",
            autocompletion=completion.fit_optimizers,
        ),
    ] = None,
    optimizer_states: Annotated[
        str | None,
        typer.Option(
            "--optimizer-states", metavar="DTYPE", help="fp32 (default) or bf16 optimizer states."
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            metavar="LAYOUT",
            help="zero (16 B/param, default) or trainer (HF Trainer's 18 B/param).",
        ),
    ] = None,
    master_weights: Annotated[
        bool | None,
        typer.Option(
            "--master-weights/--no-master-weights",
            help="Keep an fp32 copy of 16-bit weights (mixed precision; default).",
        ),
    ] = None,
    checkpointing: Annotated[
        bool | None,
        typer.Option("--checkpointing/--no-checkpointing", help="Full activation checkpointing."),
    ] = None,
    lora: Annotated[
        int | None,
        typer.Option("--lora", metavar="RANK", help="LoRA (QLoRA with --dtype nf4) of rank R."),
    ] = None,
    lora_targets: Annotated[
        str | None,
        typer.Option(
            "--lora-targets",
            metavar="LIST",
            help="Adapted layers: q,k,v,o,gate,up,down or all-linear (default q,v).",
        ),
    ] = None,
    loss: Annotated[
        str | None,
        typer.Option(
            "--loss", metavar="KIND", help="unfused (default: fp32 logits kept) or fused."
        ),
    ] = None,
    batch: Annotated[int, typer.Option("--batch", metavar="N", help="Batch per GPU.")] = 1,
    seq: Annotated[
        int | None, typer.Option("--seq", metavar="TOKENS", help="Sequence length (tokens).")
    ] = None,
    gpus: Annotated[
        int,
        typer.Option(
            "--gpus",
            metavar="N",
            help="GPUs: data parallel for --train, --parallel split for --infer.",
        ),
    ] = 1,
    zero: Annotated[
        int | None,
        typer.Option(
            "--zero", metavar="STAGE", help="ZeRO stage over --gpus (FSDP FULL_SHARD = 3)."
        ),
    ] = None,
    parallel: Annotated[
        str | None,
        typer.Option(
            "--parallel",
            metavar="KIND",
            help="Serving over --gpus: tensor (default) or pipeline parallel.",
        ),
    ] = None,
    attention: Annotated[
        str,
        typer.Option(
            "--attention",
            metavar="KIND",
            help="flash/sdpa (fused, the default) or eager.",
            autocompletion=completion.fit_attention,
        ),
    ] = "flash",
    kv_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-dtype",
            metavar="DTYPE",
            help="KV cache dtype: fp16, bf16, fp8, int8 (--infer).",
            autocompletion=completion.fit_kv_dtypes,
        ),
    ] = None,
    gpu_memory: Annotated[
        str | None,
        typer.Option("--gpu-memory", metavar="SIZE", help="Judge against this size (80GiB)."),
    ] = None,
    all_gpus: Annotated[
        bool, typer.Option("--all-gpus", help="Judge against every GPU in the compat data.")
    ] = False,
    measure: Annotated[
        bool,
        typer.Option("--measure", help="With --torch-module and a GPU: run one real step."),
    ] = False,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    timeout: TimeoutOpt = 120.0,
    pythons: PythonOpt = None,
) -> None:
    """Will this model train (or serve) on these GPUs at this batch size?"""
    python = one_python(pythons)
    from gpucheck.fit.report import FitReport, Target, render_text
    from gpucheck.fit.request import Request, setup_from
    from gpucheck.fit.shape import ModelError
    from gpucheck.fit.units import DTYPE_BYTES, UnitError, parse_dtype, parse_size

    request = Request(
        train=train, dtype=dtype, batch=batch, seq=seq, gpus=gpus, zero=zero, parallel=parallel,
        optimizer=optimizer, optimizer_states=optimizer_states, layout=layout,
        master_weights=master_weights, checkpointing=checkpointing, attention=attention,
        kv_dtype=kv_dtype, lora=lora, lora_targets=lora_targets, loss=loss, timeout=timeout,
    )  # fmt: skip
    try:
        refuse_input_as_output(output, [model, *python_inputs(python)])
        if dtype is not None:
            parse_dtype(dtype)
        if measure and torch_module is None:
            raise UserError("--measure runs a --torch-module model; pass one")
        memory = parse_size(gpu_memory, "--gpu-memory", require_unit=True) if gpu_memory else None
        if memory is not None and memory > 1 << 50:
            raise UserError(f"--gpu-memory: {gpu_memory!r} is more than any GPU has")
        if memory is not None and all_gpus:
            raise UserError("--gpu-memory and --all-gpus: choose one")
        shape = _shape(model, params, torch_module, input_shape)
        notes: list[str] = []
        if shape.params == 0 and shape.param_bytes:
            # An index without its shards and no config: a count from the bytes and a dtype.
            per = DTYPE_BYTES[parse_dtype(dtype) if dtype else "bf16"]
            shape = shape.with_params(int(shape.param_bytes / per), shape.source)
            notes.append(f"parameters: metadata.total_size / {per:g} B (no config.json beside)")
        default_seq = None
        if seq is None and shape.is_transformer:
            default_seq = min(shape.max_positions or 2048, 2048)
            notes.append(f"--seq not given: {default_seq} tokens assumed (pass --seq to change)")
        setup = setup_from(request, shape, default_seq)
        measured = None
        if torch_module is not None:
            from gpucheck.fit.trace import parse_input, trace

            assert input_shape is not None
            shape, measured = trace(
                torch_module,
                parse_input(input_shape),
                _python_with_torch(python, timeout),
                timeout,
                os.environ,
                "cuda" if measure else None,
                batch,
            )
    except (UnitError, ModelError) as exc:
        raise UserError(str(exc)) from None
    from gpucheck.fit.estimate import estimate

    if shape.param_dtypes and shape.param_bytes:
        stored = ", ".join(f"{n:,} {d}" for d, n in shape.param_dtypes.items())
        counted = "as stored" if setup.stored_bytes else f"in --dtype {setup.dtype}"
        notes.append(
            f"the files store {shape.param_bytes / 1024**3:.2f} GiB ({stored}); weights are "
            f"counted {counted}"
        )
    est = estimate(shape, setup)
    if measured is not None and measured.peak_allocated is not None:
        notes.append(
            f"measured on {measured.device_name or measured.device}, batch {measured.batch}: "
            f"peak allocated {measured.peak_allocated / 1024**3:.2f} GiB, reserved "
            f"{(measured.peak_reserved or 0) / 1024**3:.2f} GiB (estimate of the tensors: "
            f"{est.tensors / 1024**3:.2f} GiB; the CUDA context is outside the allocator)"
        )
    why: str | None = None
    status: ExitStatus | None = None
    if memory is not None:
        targets = [Target(f"--gpu-memory {gpu_memory}", memory)]
    elif all_gpus:
        from gpucheck.cli.common import load_compat
        from gpucheck.fit.targets import compat_targets

        targets = compat_targets(load_compat(None))
    else:
        from gpucheck.fit.targets import machine_targets

        machine = machine_targets(timeout)
        targets, why, status = machine.targets, machine.why, machine.status
        notes.extend(machine.notes)
        if why:
            notes.append(why)
        elif gpus > machine.gpu_count:
            # The job asks for GPUs this machine does not have: each GPU is judged as one of
            # --gpus of its kind, not as a job that can run here.
            notes.append(
                f"--gpus {gpus}: judged for {gpus} GPUs of this kind; this machine has "
                f"{machine.gpu_count}, so the job cannot run here as asked"
            )
            status = ExitStatus.FAILED if status is None else status
    report = FitReport(shape, setup, est, targets, notes, gate=not all_gpus)
    if json_out:
        from gpucheck.model.decoding import to_json

        write_output(output, lambda s: s.write(to_json(report.to_dict()).decode() + "\n"))
    else:
        write_output(output, lambda s: render_text(report, s))
    if why:
        # Nothing was judged: a script must not read this as "fits" (as the doctor's 1; 5
        # where the driver could not be asked).
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(f"gpucheck: no GPU judged: {why}\n")
            sys.stderr.flush()
        raise typer.Exit(status or ExitStatus.FAILED)
    # A GPU that does not fit decides (1); else one that could not be read (5), or a job
    # asking for more GPUs than the machine has (1).
    code = report.exit_code
    raise typer.Exit(code if code != ExitStatus.OK or status is None else status)


def _shape(
    model: str | None, params: str | None, torch_module: str | None, input_shape: str | None
) -> ModelShape:
    from gpucheck.fit.shape import ModelShape
    from gpucheck.fit.sources import local_model
    from gpucheck.fit.units import parse_count

    given = [x for x in (model, params, torch_module) if x is not None]
    if len(given) != 1:
        raise UserError(
            "say what to fit: a local config.json / safetensors file, --params N, or "
            "--torch-module MOD:FN (exactly one)"
        )
    if torch_module is not None:
        if input_shape is None:
            raise UserError("--torch-module needs --input (the shape of one sample, 3x224x224)")
        return ModelShape(source=torch_module, params=0)  # replaced by the trace
    if params is not None:
        return ModelShape(source=f"--params {params}", params=parse_count(params))
    assert model is not None
    try:
        return local_model(model)
    except OSError as exc:  # a name the system refuses (too long), a file not readable
        raise UserError(f"{model}: {exc.strerror}") from None


def _python_with_torch(python: str | None, timeout: float) -> str:
    from gpucheck.probes.framework_python import find
    from gpucheck.probes.frameworks import PythonNotFound

    try:
        found = find(os.environ, python, (TORCH.key,), min(timeout, 30))
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    if found.python is None:
        raise UserError(
            f"--torch-module: no torch installed in {', '.join(found.looked_at)}; pass "
            "--python PATH of the environment that has it"
        )
    return found.python
