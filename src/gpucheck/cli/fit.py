"""`gpucheck fit`: estimate the memory a model needs per GPU to train or serve, and say whether
it fits this machine's GPUs (or a given size, or every GPU in the compat data)."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated

import typer

from gpucheck.cli.common import (
    JsonOpt,
    OutputOpt,
    PythonOpt,
    TimeoutOpt,
    choose_format,
    format_option,
    one_python,
    python_inputs,
    refuse_input_as_output,
    write_output,
)
from gpucheck.cli.completion import Choices, matching
from gpucheck.exit_status import ExitStatus
from gpucheck.fit.flow import FitRequest, ModelUnreachable, run
from gpucheck.fit.parts import OPTIMIZERS
from gpucheck.fit.report import FORMATS
from gpucheck.fit.request import KV_DTYPES, Request
from gpucheck.fit.units import DTYPE_BYTES
from gpucheck.report.text import printable

# Shell completion of this command's option values (completion.py shares the helpers).


def fit_dtypes(incomplete: str) -> Choices:
    return matching(((name, f"{DTYPE_BYTES[name]:g} byte(s)") for name in DTYPE_BYTES), incomplete)


def fit_optimizers(incomplete: str) -> Choices:
    return matching(((name, "") for name in OPTIMIZERS), incomplete)


def fit_attention(incomplete: str) -> Choices:
    about = {
        "flash": "fused attention (the default)",
        "sdpa": "fused, as flash",
        "eager": "the s x s scores kept",
    }
    return matching(about.items(), incomplete)


def fit_kv_dtypes(incomplete: str) -> Choices:
    return matching(((n, f"{DTYPE_BYTES[n]:g} byte(s)") for n in KV_DTYPES), incomplete)


# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "it fits every GPU judged (or --all-gpus: a survey)",
    ExitStatus.FAILED: (
        'it does not fit one, only a lower bound was counted ("may fit"), no GPU was judged, '
        "or --gpus asks for more GPUs than the machine has"
    ),
    ExitStatus.UNKNOWN: (
        "could not tell: a GPU NVML cannot open (lost), a driver that is not loaded, or a Hub "
        "that did not answer in time"
    ),
}


def fit(
    model: Annotated[
        str | None,
        typer.Argument(
            metavar="[MODEL]",
            help="A local config.json, *.safetensors, *.safetensors.index.json, or a folder "
            "holding them; or a Hub id ORG/NAME[@REVISION]: the Hugging Face cache, else its "
            "config.json and safetensors headers from the Hub (never weights).",
        ),
    ] = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline", help="A Hub id from the Hugging Face cache only (as HF_HUB_OFFLINE=1)."
        ),
    ] = False,
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
            help="fp32, fp16, bf16, fp8, int8, int4, nf4 or fp4 (default: the checkpoint's "
            "quantisation, else bf16).",
            autocompletion=fit_dtypes,
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
            autocompletion=fit_optimizers,
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
            autocompletion=fit_attention,
        ),
    ] = "flash",
    kv_dtype: Annotated[
        str | None,
        typer.Option(
            "--kv-dtype",
            metavar="DTYPE",
            help="KV cache dtype: fp16, bf16, fp8, int8 (--infer).",
            autocompletion=fit_kv_dtypes,
        ),
    ] = None,
    gpu_memory: Annotated[
        str | None,
        typer.Option("--gpu-memory", metavar="SIZE", help="Judge against this size (80GiB)."),
    ] = None,
    all_gpus: Annotated[
        bool, typer.Option("--all-gpus", help="Judge against every GPU in the compat data.")
    ] = False,
    text_only: Annotated[
        bool,
        typer.Option("--text-only", help="Leave a multimodal model's vision/audio towers out."),
    ] = False,
    measure: Annotated[
        bool,
        typer.Option("--measure", help="With --torch-module and a GPU: run one real step."),
    ] = False,
    json_out: JsonOpt = False,
    fmt: Annotated[str, format_option("text, json or html.")] = "text",
    output: OutputOpt = None,
    timeout: TimeoutOpt = 120.0,
    pythons: PythonOpt = None,
) -> None:
    """Will this model train (or serve) on these GPUs at this batch size?"""
    python = one_python(pythons)

    chosen = choose_format(FORMATS, fmt, json_out)
    options = Request(
        train=train, dtype=dtype, batch=batch, seq=seq, gpus=gpus, zero=zero, parallel=parallel,
        optimizer=optimizer, optimizer_states=optimizer_states, layout=layout,
        master_weights=master_weights, checkpointing=checkpointing, attention=attention,
        kv_dtype=kv_dtype, lora=lora, lora_targets=lora_targets, loss=loss, timeout=timeout,
        text_only=text_only,
    )  # fmt: skip
    refuse_input_as_output(output, [model, *python_inputs(python)])
    request = FitRequest(
        model=model,
        params=params,
        torch_module=torch_module,
        input_shape=input_shape,
        options=options,
        gpu_memory=gpu_memory,
        all_gpus=all_gpus,
        measure=measure,
        python=python,
        offline=offline,
    )
    try:
        result = run(request, say=_say)
    except ModelUnreachable as exc:  # (not a usage error: the Hub did not answer)
        _say(str(exc))
        raise typer.Exit(ExitStatus.UNKNOWN) from None
    write_output(output, lambda s: chosen.write(result.report, s))
    if result.nothing_judged:
        # Nothing was judged: a script must not read this as "fits" (as the doctor's 1; 5
        # where the driver could not be asked).
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(f"gpucheck: no GPU judged: {result.nothing_judged}\n")
            sys.stderr.flush()
    raise typer.Exit(result.exit_code)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"gpucheck: {printable(line)}\n")
        sys.stderr.flush()
