"""Deep probe of one extension, run in a child process (see probes/child.py for the protocol).

`python scripts/extension_deep.py DIST MODULE`, under the interpreter of the environment being
diagnosed: import MODULE (an extension built against torch, or TensorRT) and record how that
went as `ExtensionImport` facts; for TensorRT, also build and deserialize a one-layer engine on
the GPU, which is where a TensorRT that does not fit the driver or the GPU fails.

stdout: one JSON line, {"kind": "extension", "facts": {...}}, written after the import and again
after the engine; stderr: "@ <step>" lines. Standard library only; Python 3.8+.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))
if sys.path and os.path.realpath(sys.path[0] or os.curdir) == _HERE:
    del sys.path[0]  # nothing beside this file may shadow the target's modules

import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_ERROR = 2000


def step(name: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"@ {name}\n".encode())


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text[:MAX_ERROR]


def emit(facts: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.write(json.dumps({"kind": "extension", "facts": facts}, default=str) + "\n")
        sys.stdout.flush()


def tensorrt_engine(trt: Any, messages: list[str]) -> str:
    """Build and load a one-layer engine; returns what was built. TensorRT's own error messages
    (its logger) are collected in `messages`: the exception alone often says only that a
    factory returned nullptr."""

    class Log(trt.ILogger):  # type: ignore[misc]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            if severity <= trt.ILogger.Severity.ERROR:
                messages.append(str(msg))

    logger = Log()
    step("tensorrt.Builder")
    builder = trt.Builder(logger)
    if builder is None:
        raise RuntimeError("; ".join(messages) or "tensorrt.Builder returned None")
    flags = 0
    explicit = getattr(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH", None)
    if explicit is not None and int(trt.__version__.split(".")[0]) < 10:
        flags = 1 << int(explicit)
    network = builder.create_network(flags)
    source = network.add_input("x", trt.float32, (1, 8))
    network.mark_output(network.add_identity(source).get_output(0))
    config = builder.create_builder_config()
    step("build_serialized_network")
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise RuntimeError("; ".join(messages) or "build_serialized_network returned None")
    step("deserialize_cuda_engine")
    engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
    if engine is None:
        raise RuntimeError("; ".join(messages) or "deserialize_cuda_engine returned None")
    return f"built and loaded a one-layer engine ({plan.nbytes} bytes)"


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        emit({"name": "", "module": "", "status": "error", "error": "usage: DIST MODULE"})
        return 2
    name, module = argv[1], argv[2]
    facts: dict[str, Any] = {"name": name, "module": module, "status": "ok", "error": None}
    facts["seconds"] = None
    facts["detail"] = None
    step(f"import {module}")
    start = time.perf_counter()
    try:
        value = importlib.import_module(module)
    except (ImportError, OSError) as exc:
        facts["status"], facts["error"], value = "import_error", one_line(exc), None
    except (Exception, SystemExit) as exc:
        facts["status"], facts["error"], value = "error", f"import {module}: {one_line(exc)}", None
    facts["seconds"] = round(time.perf_counter() - start, 6)
    emit(facts)
    if value is not None and module == "tensorrt":
        messages: list[str] = []
        try:
            facts["detail"] = tensorrt_engine(value, messages)
        except Exception as exc:
            said = "; ".join(m for m in messages if m not in str(exc))
            error = f"engine: {one_line(exc)}" + (f" (TensorRT: {said})" if said else "")
            facts["status"], facts["error"] = "error", error[:MAX_ERROR]
        emit(facts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
