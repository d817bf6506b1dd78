"""`gpucheck fit`: estimate the memory a model needs per GPU to train or serve, and say whether
it fits this machine's GPUs (or a given size, or every GPU in the compat data)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from gpucheck.cli.common import (
    JsonOpt,
    OutputOpt,
    PythonOpt,
    TimeoutOpt,
    UserError,
    number_option,
    write_output,
)

if TYPE_CHECKING:
    from gpucheck.fit.shape import ModelShape


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
        str | None, typer.Option("--params", metavar="N", help="Parameter count: 7B, 125M.")
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
        str, typer.Option("--dtype", help="fp32, fp16, bf16, fp8, int8 or int4.")
    ] = "bf16",
    train: Annotated[
        bool, typer.Option("--train/--infer", help="A training step (default) or serving.")
    ] = True,
    optimizer: Annotated[
        str, typer.Option("--optimizer", help="adam, adamw, sgd, adafactor or 8bit.")
    ] = "adamw",
    master_weights: Annotated[
        bool,
        typer.Option(
            "--master-weights/--no-master-weights",
            help="Keep an fp32 copy of 16-bit weights (mixed precision).",
        ),
    ] = True,
    checkpointing: Annotated[
        bool,
        typer.Option("--checkpointing/--no-checkpointing", help="Full activation checkpointing."),
    ] = False,
    batch: Annotated[int, number_option("--batch", low=1, high=2**31, help="Batch per GPU.")] = 1,
    seq: Annotated[
        int | None, number_option("--seq", low=1, high=2**31, help="Sequence length (tokens).")
    ] = None,
    gpus: Annotated[
        int, number_option("--gpus", low=1, high=2**20, help="Data-parallel GPUs.")
    ] = 1,
    zero: Annotated[
        int,
        typer.Option("--zero", min=0, max=3, help="ZeRO stage over --gpus (FSDP FULL_SHARD = 3)."),
    ] = 0,
    attention: Annotated[
        str, typer.Option("--attention", help="flash (fused, the default) or eager.")
    ] = "flash",
    kv_dtype: Annotated[
        str | None, typer.Option("--kv-dtype", help="KV cache dtype (default: compute dtype).")
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
    python: PythonOpt = None,
) -> None:
    """Will this model train (or serve) on these GPUs at this batch size?

    Exit codes: 0 it fits every GPU judged (or none was judged, or --all-gpus), 1 it does not
    fit one, 2 usage error or an unreadable model file.
    """
    from gpucheck.fit.estimate import OPTIMIZERS, Setup, estimate
    from gpucheck.fit.report import FitReport, render_text
    from gpucheck.fit.shape import ModelError
    from gpucheck.fit.units import UnitError, parse_dtype, parse_size

    try:
        dtype = parse_dtype(dtype)
        kv = parse_dtype(kv_dtype, "--kv-dtype") if kv_dtype else None
        if optimizer.lower() not in OPTIMIZERS:
            raise UserError(f"--optimizer: {optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
        if attention not in ("flash", "eager"):
            raise UserError(f"--attention: {attention!r} is not flash or eager")
        if train and dtype in ("int8", "int4"):
            raise UserError(
                f"--train with --dtype {dtype}: quantised weights are not trained directly "
                "(QLoRA trains adapters); estimate --infer, or train in bf16"
            )
        if zero and gpus == 1:
            raise UserError("--zero shards over several GPUs: pass --gpus N as well")
        if measure and torch_module is None:
            raise UserError("--measure runs a --torch-module model; pass one")
        memory = parse_size(gpu_memory, "--gpu-memory") if gpu_memory else None
        if memory is not None and all_gpus:
            raise UserError("--gpu-memory and --all-gpus: choose one")
        shape = _shape(model, params, torch_module, input_shape)
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
        if shape.params == 0 and shape.param_bytes:
            # An index without its shards: bytes, and a count from the dtype given.
            from gpucheck.fit.units import DTYPE_BYTES

            shape = shape.with_params(int(shape.param_bytes / DTYPE_BYTES[dtype]), shape.source)
    except (UnitError, ModelError) as exc:
        raise UserError(str(exc)) from None
    notes: list[str] = []
    if shape.param_dtypes and shape.param_bytes:
        stored = ", ".join(f"{n:,} {d}" for d, n in shape.param_dtypes.items())
        notes.append(
            f"the file stores {shape.param_bytes / 1024**3:.2f} GiB ({stored}); weights are "
            f"counted in --dtype {dtype}"
        )
    if seq is None and shape.is_transformer:
        seq = min(shape.max_positions or 2048, 2048)
        notes.append(f"--seq not given: {seq} tokens assumed (pass --seq to change)")
    setup = Setup(
        mode="train" if train else "infer",
        dtype=dtype,
        batch=batch,
        seq=seq,
        optimizer=optimizer.lower(),
        master_weights=master_weights,
        checkpointing=checkpointing,
        gpus=gpus,
        zero=zero,
        flash_attention=attention == "flash",
        kv_dtype=kv,
    )
    est = estimate(shape, setup)
    if measured is not None and measured.peak_allocated is not None:
        notes.append(
            f"measured on {measured.device_name or measured.device}, batch {measured.batch}: "
            f"peak allocated {measured.peak_allocated / 1024**3:.2f} GiB, reserved "
            f"{(measured.peak_reserved or 0) / 1024**3:.2f} GiB (estimate of the tensors: "
            f"{est.tensors / 1024**3:.2f} GiB; the CUDA context is outside the allocator)"
        )
    if memory is not None:
        from gpucheck.fit.report import Target

        targets = [Target(f"--gpu-memory {gpu_memory}", memory)]
    elif all_gpus:
        from gpucheck.cli.common import load_compat
        from gpucheck.fit.targets import compat_targets

        targets = compat_targets(load_compat(None))
    else:
        from gpucheck.fit.targets import machine_targets

        targets, why = machine_targets(timeout)
        if why:
            notes.append(why)
    report = FitReport(shape, setup, est, targets, notes, gate=not all_gpus)
    if json_out:
        from gpucheck.model.decoding import to_json

        write_output(output, lambda s: s.write(to_json(report.to_dict()).decode() + "\n"))
    else:
        write_output(output, lambda s: render_text(report, s))
    raise typer.Exit(report.exit_code)


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
        found = find(os.environ, python, ("torch",), min(timeout, 30))
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    if found.python is None:
        raise UserError(
            f"--torch-module: no torch installed in {', '.join(found.looked_at)}; pass "
            "--python PATH of the environment that has it"
        )
    return found.python
