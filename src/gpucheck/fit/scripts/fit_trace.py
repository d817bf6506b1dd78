"""Trace a PyTorch model for `gpucheck fit`, run in a child process (see child/run.py).

`python fit_trace.py '{"module": "pkg.mod:build", "input": [3, 224, 224], ...}'` under the
interpreter of the environment that has the model's code and torch. It builds the model on the
meta device (no memory is allocated, no weights initialised), counts its parameters, and runs
one forward pass there with autograd's saved-tensor hooks counting the bytes that autograd
keeps for backward. It does so at batch 1 and 2: the difference is what each sample adds
(anything saved once per step, whatever the batch, cancels out).

With "measure": one real training step (forward, backward, AdamW step) on "device" (cuda or,
for tests, cpu); on CUDA the allocator's peak is read back; on the CPU the bytes of the
distinct storages autograd saved are summed (a real allocation, by address).

stdout: JSON lines {"kind": "trace" | "measure" | "error", ...}; stderr: "@ <stage>" lines.
Standard library only, apart from torch; runs on Python 3.8+.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import protocol

# Annotations are never evaluated (the __future__ import), so list[int] and X | None are safe on
# Python 3.8; runtime code stays 3.8-compatible. torch is imported by name so that type checkers
# of gpucheck's own environment need not have it.


emit = protocol.emit
step = protocol.step
one_line = protocol.one_line


def load_builder(spec: str) -> Callable[[], Any]:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"expected MODULE:FUNCTION, got {spec!r}")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{spec} is not callable")
    return target  # type: ignore[no-any-return]


def saved_bytes(torch: Any, model: Any, x: Any, by_address: bool) -> int:
    """Bytes of the distinct tensors autograd saves for backward during one forward pass,
    parameters and buffers excluded."""
    own = {id(p) for p in model.parameters()} | {id(b) for b in model.buffers()}
    own_storages = set()
    if by_address:
        own_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
        own_storages |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    seen: set[int] = set()
    keep: list[Any] = []  # holds the counted tensors, so that their ids stay unique
    total = [0]

    def pack(t: Any) -> Any:
        base = t._base if t._base is not None else t
        if id(t) in own or id(base) in own:
            return t
        if by_address:
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key in own_storages or key in seen:
                return t
            seen.add(key)
            total[0] += storage.nbytes()
        else:
            if id(base) in seen:
                return t
            seen.add(id(base))
            keep.append(base)
            total[0] += base.numel() * base.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    del out
    return total[0]


def main(argv: list[str]) -> int:
    try:
        args = json.loads(argv[1])
    except (IndexError, ValueError):
        emit({"kind": "error", "stage": "arguments", "message": "expected one JSON argument"})
        return 2
    for path in reversed(args.get("sys_path") or []):
        sys.path.insert(0, path)
    stage = "import torch"
    try:
        step(stage)
        torch = importlib.import_module("torch")

        stage = "import " + str(args["module"])
        step(stage)
        build = load_builder(str(args["module"]))
        shape = [int(d) for d in args["input"]]
        stage = "build on meta"
        step(stage)
        with torch.device("meta"):
            model = build()
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"{args['module']} returned {type(model)}, not a torch.nn.Module")
        dtypes: dict[str, int] = {}
        for p in model.parameters():
            name = str(p.dtype).replace("torch.", "")
            dtypes[name] = dtypes.get(name, 0) + p.numel()
        stage = "trace on meta"
        step(stage)
        model.train()
        one = saved_bytes(torch, model, torch.empty([1, *shape], device="meta"), False)
        two = saved_bytes(torch, model, torch.empty([2, *shape], device="meta"), False)
        with torch.no_grad():
            out = model(torch.empty([1, *shape], device="meta"))
        emit(
            {
                "kind": "trace",
                "torch": torch.__version__,
                "params": sum(dtypes.values()),
                "param_dtypes": dtypes,
                "buffer_bytes": sum(b.numel() * b.element_size() for b in model.buffers()),
                "saved_bytes_per_sample": two - one,
                "saved_bytes_fixed": max(0, 2 * one - two),
                "output_shape": list(out.shape) if hasattr(out, "shape") else None,
            }
        )
        if args.get("measure"):
            stage = "measure"
            step(stage)
            emit(measure(torch, build, shape, int(args.get("batch") or 1), str(args["device"])))
    except BaseException as exc:  # the model's own code can raise anything
        emit({"kind": "error", "stage": stage, "message": one_line(exc)})
        return 1
    return 0


def measure(
    torch: Any, build: Callable[[], Any], shape: list[int], batch: int, device: str
) -> dict[str, Any]:
    torch.manual_seed(0)
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--measure needs a GPU: torch.cuda.is_available() is False")
        torch.cuda.reset_peak_memory_stats()
    with torch.device(device):
        model = build()
    model.train()
    x = torch.randn([batch, *shape], device=device)
    record: dict[str, Any] = {"kind": "measure", "device": device, "batch": batch}
    if device == "cuda":
        optimizer = torch.optim.AdamW(model.parameters())
        base = torch.cuda.memory_allocated()
        loss = model(x).float().sum()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        record["peak_allocated"] = torch.cuda.max_memory_allocated()
        record["peak_reserved"] = torch.cuda.max_memory_reserved()
        record["before_step_allocated"] = base
        record["device_name"] = torch.cuda.get_device_name(0)
    else:
        record["saved_bytes"] = saved_bytes(torch, model, x, True)
    return record


if __name__ == "__main__":
    sys.exit(main(sys.argv))
