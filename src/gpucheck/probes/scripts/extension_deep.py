"""Deep probe of one extension, run in a child process (protocol: child/protocol.py).

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

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

import importlib
import time

from . import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_ERROR = 2000
step = protocol.step


def error_text(exc: BaseException) -> str:
    return protocol.one_line(exc, MAX_ERROR, whole=True)


def emit_facts(facts: dict[str, Any]) -> None:
    protocol.emit({"kind": "extension", "facts": facts})


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
        emit_facts({"name": "", "module": "", "status": "error", "error": "usage: DIST MODULE"})
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
        facts["status"], facts["error"], value = "import_error", error_text(exc), None
    except (Exception, SystemExit) as exc:
        facts["status"], facts["error"], value = (
            "error",
            f"import {module}: {error_text(exc)}",
            None,
        )
    facts["seconds"] = round(time.perf_counter() - start, 6)
    emit_facts(facts)
    if value is not None and module == "tensorrt":
        messages: list[str] = []
        try:
            facts["detail"] = tensorrt_engine(value, messages)
        except Exception as exc:
            said = "; ".join(m for m in messages if m not in str(exc))
            error = f"engine: {error_text(exc)}" + (f" (TensorRT: {said})" if said else "")
            facts["status"], facts["error"] = "error", error[:MAX_ERROR]
        emit_facts(facts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
