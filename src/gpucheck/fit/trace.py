"""Run scripts/fit_trace.py in the model's environment and turn its records into a
ModelShape (and, with --measure, the measured peak)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from gpucheck.child.run import run_script, script
from gpucheck.fit.shape import ModelError, ModelShape

SCRIPT = script("gpucheck.fit", "fit_trace.py")


@dataclass
class Measured:
    device: str
    batch: int
    peak_allocated: int | None = None  # CUDA: torch.cuda.max_memory_allocated()
    peak_reserved: int | None = None
    device_name: str | None = None
    saved_bytes: int | None = None  # CPU: distinct storages autograd saved


def parse_input(text: str) -> list[int]:
    parts = text.lower().replace(",", "x").split("x")
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        dims = []
    if not dims or any(d <= 0 for d in dims):
        raise ModelError(f"--input: {text!r} is not a shape without the batch (like 3x224x224)")
    return dims


def trace(
    module: str,
    input_shape: list[int],
    python: str,
    timeout: float,
    env: Mapping[str, str],
    measure_device: str | None = None,
    batch: int = 1,
) -> tuple[ModelShape, Measured | None]:
    args = {
        "module": module,
        "input": input_shape,
        "sys_path": [os.getcwd()],  # `pkg.mod` is looked up from where the user stands
        "measure": measure_device is not None,
        "device": measure_device or "cpu",
        "batch": batch,
    }
    result = run_script(SCRIPT, [json.dumps(args)], timeout, python=python, env=dict(env))
    records = {str(r.get("kind")): r for r in result.records}
    error = records.get("error")
    if error is not None:
        raise ModelError(f"--torch-module {module}: {error.get('stage')}: {error.get('message')}")
    found = records.get("trace")
    if found is None:
        problem = result.describe(timeout) or "it printed no result"
        raise ModelError(f"--torch-module {module}: tracing {problem}")
    dims = "x".join(str(d) for d in input_shape)
    try:
        dtypes = {str(k): int(v) for k, v in dict(found["param_dtypes"]).items()}  # type: ignore[call-overload]
        shape = ModelShape(
            source=f"{module} (traced on the meta device, torch {found.get('torch')})",
            params=int(found["params"]),  # type: ignore[call-overload]
            param_dtypes=dtypes,
            traced_activation_bytes=int(found["saved_bytes_per_sample"]),  # type: ignore[call-overload]
            traced_input=dims,
            architecture=module,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"--torch-module {module}: unreadable trace record ({exc})") from None
    m = records.get("measure")
    measured = None
    if m is not None:
        measured = Measured(
            device=str(m.get("device")),
            batch=int(m.get("batch") or batch),  # type: ignore[call-overload]
            peak_allocated=_opt_int(m.get("peak_allocated")),
            peak_reserved=_opt_int(m.get("peak_reserved")),
            device_name=str(m["device_name"]) if m.get("device_name") else None,
            saved_bytes=_opt_int(m.get("saved_bytes")),
        )
    elif measure_device is not None:
        problem = result.describe(timeout) or "no measurement came back"
        raise ModelError(f"--measure: {problem}")
    return shape, measured


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
