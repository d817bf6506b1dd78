"""`gpucheck fit`'s flow, for the command line and Python alike: from a FitRequest (what model,
the estimate's options, what to judge it against) to a FitResult (the report, and why no GPU
was judged where none was). Bad input raises UserError: one line (exit 2 on the command line).

    >>> from gpucheck.fit.flow import FitRequest, run
    >>> from gpucheck.fit.request import Request
    >>> run(FitRequest(params="7B", options=Request(batch=4), gpu_memory="80GiB")).exit_code
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from msgspec import Struct, field

from gpucheck.exit_status import ExitStatus
from gpucheck.fit.estimate import estimate
from gpucheck.fit.hub_cache import HubUnreachable
from gpucheck.fit.report import FitReport, Target
from gpucheck.fit.request import Request, setup_from
from gpucheck.fit.shape import ModelError, ModelShape, without_towers
from gpucheck.fit.sources import find_model
from gpucheck.fit.units import DTYPE_BYTES, UnitError, parse_count, parse_dtype, parse_size
from gpucheck.inputs import UserError, load_compat
from gpucheck.model.frameworks import TORCH


class FitRequest(Struct, frozen=True, kw_only=True):
    """What to fit (exactly one of `model`, `params`, `torch_module`), the estimate's options,
    and what to judge it against: `gpu_memory` (a size), `all_gpus` (every GPU in the compat
    data), or neither (this machine's GPUs)."""

    # A local config.json, *.safetensors(.index.json), or a folder; or a Hub id,
    # ORG/NAME[@REVISION]: the Hugging Face cache, else the Hub's metadata unless `offline`.
    model: str | None = None
    params: str | None = None  # a parameter count with a suffix: 7B, 125M
    torch_module: str | None = None  # MOD:FN returning a torch.nn.Module, traced on meta
    input_shape: str | None = None  # --torch-module's input, without the batch
    options: Request = field(default_factory=Request)
    gpu_memory: str | None = None
    all_gpus: bool = False
    measure: bool = False  # with --torch-module and a GPU: run one real step
    python: str | None = None  # the interpreter with torch, for --torch-module
    offline: bool = False  # a Hub id from the Hugging Face cache only, as HF_HUB_OFFLINE=1


class ModelUnreachable(UserError):
    """The Hub did not answer (a timeout, no route): not bad input but a question unanswered
    (exit 5 on the command line)."""


class FitResult(Struct):
    report: FitReport
    # Why no GPU was judged (this machine's GPUs could not be read): not "fits".
    nothing_judged: str | None = None
    # What the machine's GPUs say beside the verdicts: could not tell (a lost GPU, no driver
    # loaded), or a job asking for more GPUs than the machine has.
    status: ExitStatus | None = None

    @property
    def exit_code(self) -> int:
        if self.nothing_judged:
            # As the doctor's 1; 5 where the driver could not be asked.
            return self.status or ExitStatus.FAILED
        # A GPU that does not fit decides (1); else one that could not be read (5), or a job
        # asking for more GPUs than the machine has (1).
        code = self.report.exit_code
        return code if code != ExitStatus.OK or self.status is None else self.status


def run(
    request: FitRequest,
    env: Mapping[str, str] = os.environ,
    say: Callable[[str], None] | None = None,
) -> FitResult:
    """The estimate and its verdicts. Raises UserError for bad input (ModelUnreachable: the
    Hub did not answer). `say` hears what is about to take time (a fetch from the Hub)."""
    req = request.options
    try:
        if req.dtype is not None:
            parse_dtype(req.dtype)
        if request.measure and request.torch_module is None:
            raise UserError("--measure runs a --torch-module model; pass one")
        gpu_memory = request.gpu_memory
        memory = parse_size(gpu_memory, "--gpu-memory", require_unit=True) if gpu_memory else None
        if memory is not None and memory > 1 << 50:
            raise UserError(f"--gpu-memory: {gpu_memory!r} is more than any GPU has")
        if memory is not None and request.all_gpus:
            raise UserError("--gpu-memory and --all-gpus: choose one")
        shape = _shape(request, env, say)
        notes: list[str] = []
        if req.text_only:
            shape = without_towers(shape, notes)
        if shape.params == 0 and shape.param_bytes:
            # An index without its shards and no config: a count from the bytes and a dtype.
            per = DTYPE_BYTES[parse_dtype(req.dtype) if req.dtype else "bf16"]
            shape = shape.with_params(int(shape.param_bytes / per), shape.source)
            notes.append(f"parameters: metadata.total_size / {per:g} B (no config.json beside)")
        default_seq = None
        if req.seq is None and shape.is_transformer:
            default_seq = min(shape.max_positions or 2048, 2048)
            notes.append(f"--seq not given: {default_seq} tokens assumed (pass --seq to change)")
        setup = setup_from(req, shape, default_seq)
        measured = None
        if request.torch_module is not None:
            from gpucheck.fit.trace import parse_input, trace

            assert request.input_shape is not None
            shape, measured = trace(
                request.torch_module,
                parse_input(request.input_shape),
                _python_with_torch(request.python, req.timeout, env),
                req.timeout,
                env,
                "cuda" if request.measure else None,
                req.batch,
            )
    except HubUnreachable as exc:
        raise ModelUnreachable(str(exc)) from None
    except (UnitError, ModelError) as exc:
        raise UserError(str(exc)) from None
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
    elif request.all_gpus:
        from gpucheck.fit.targets import compat_targets

        targets = compat_targets(load_compat(None))
    else:
        from gpucheck.fit.targets import machine_targets

        machine = machine_targets(req.timeout)
        targets, why, status = machine.targets, machine.why, machine.status
        notes.extend(machine.notes)
        if why:
            notes.append(why)
        elif req.gpus > machine.gpu_count:
            # The job asks for GPUs this machine does not have: each GPU is judged as one of
            # --gpus of its kind, not as a job that can run here.
            notes.append(
                f"--gpus {req.gpus}: judged for {req.gpus} GPUs of this kind; this machine has "
                f"{machine.gpu_count}, so the job cannot run here as asked"
            )
            status = ExitStatus.FAILED if status is None else status
    report = FitReport(shape, setup, est, targets, notes, gate=not request.all_gpus)
    return FitResult(report, why, status)


def _shape(
    request: FitRequest, env: Mapping[str, str], say: Callable[[str], None] | None
) -> ModelShape:
    model, params, torch_module = request.model, request.params, request.torch_module
    given = [x for x in (model, params, torch_module) if x is not None]
    if len(given) != 1:
        raise UserError(
            "say what to fit: a local config.json / safetensors file, a Hub id ORG/NAME, "
            "--params N, or --torch-module MOD:FN (exactly one)"
        )
    if request.offline and model is None:
        raise UserError("--offline applies to a model named by its Hub id (ORG/NAME)")
    if torch_module is not None:
        if request.input_shape is None:
            raise UserError("--torch-module needs --input (the shape of one sample, 3x224x224)")
        return ModelShape(source=torch_module, params=0)  # replaced by the trace
    if params is not None:
        return ModelShape(source=f"--params {params}", params=parse_count(params))
    assert model is not None
    try:
        return find_model(
            model, env, offline=request.offline, timeout=request.options.timeout, say=say
        )
    except OSError as exc:  # a name the system refuses (too long), a file not readable
        raise UserError(f"{model}: {exc.strerror}") from None


def _python_with_torch(python: str | None, timeout: float, env: Mapping[str, str]) -> str:
    from gpucheck.probes.framework_python import find
    from gpucheck.probes.frameworks import PythonNotFound

    try:
        found = find(env, python, (TORCH.key,), min(timeout, 30))
    except PythonNotFound as exc:
        raise UserError(str(exc)) from None
    if found.python is None:
        raise UserError(
            f"--torch-module: no torch installed in {', '.join(found.looked_at)}; pass "
            "--python PATH of the environment that has it"
        )
    return found.python
