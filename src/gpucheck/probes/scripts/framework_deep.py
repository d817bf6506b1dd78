"""Deep framework probe, run in a child process (protocol: child/protocol.py).

`python scripts/framework_deep.py FRAMEWORK` (torch | tensorflow | jax | cupy), under the
interpreter of the environment being diagnosed: import the framework, list its devices and run
a tiny matmul on each, recording what it shows as `FrameworkRuntime` facts.

stdout: `{"kind": "runtime", "facts": {...}}` lines, the WHOLE record again after each stage,
so that whatever happens later (a crash in the driver, a hang, cuDNN calling abort()) the
parent keeps the last complete record: it takes the last one.

stderr: "@ <stage>" before each risky stage, written straight to the parent's pipe. Everything
else written to file descriptor 2 (TensorFlow's C++ loader warnings, Python warnings, CUDA's
own messages) goes through a small relay process: it passes the text on to the parent as it
comes, so that a crash loses none of it, and keeps a copy that becomes the record's
`warnings`.

Standard library only, apart from the framework (and numpy, which tensorflow, jax and cupy
require); no gpucheck imports; runs on Python 3.8+.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import deep_capture as cap
from . import protocol

SIZE = 64  # the smoke test multiplies SIZE x SIZE float32 matrices
RTOL = ATOL = 1e-2  # TF32 (the default for float32 matmuls on Ampere+ in TF and JAX) is ~1e-3


class Probe:
    def __init__(self, framework: str, capture: Any) -> None:
        self.capture = capture
        self.facts: dict[str, Any] = {
            "framework": framework,
            "status": "ok",
            "error": None,
            "import_seconds": None,
            "version": None,
            "cuda_available": None,
            "device_count": None,
            "devices": [],
            "backend": None,
            "arch_list": [],
            "cuda_version": None,
            "driver_version": None,
            "cudnn_version": None,
            "nccl_version": None,
            "loaded_libraries": [],
            "warnings": [],
            "smoke_tests": [],
        }
        self.stage_errors: list[str] = []
        self.gated = False

    def wait_for_gate(self) -> bool:
        """Importing may run beside gpucheck's other probes; CUDA calls wait for the parent's
        word on GPUCHECK_GATE_FD ("go" once NVML has read the GPUs, so that this process's
        CUDA context is not taken for another job's; "stop REASON" where CUDA must not start).
        No gate (run by hand, or by an older gpucheck): go."""
        fd = os.environ.get(protocol.GATE_FD_ENV)
        if self.gated or not fd:
            return True
        self.gated = True
        protocol.step("wait for gpucheck's word")
        try:
            word = os.read(int(fd), 4096).decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            word = ""
        if word == "go":
            return True
        self.facts["status"] = "skipped"
        self.facts["error"] = word.partition(" ")[2] or "gpucheck stopped the probe"
        return False

    def emit(self) -> None:
        facts = self.facts
        facts["loaded_libraries"] = cap.mapped_libraries()
        warnings = cap.select_warnings(self.capture.text())
        # Errors of later stages (the first one is `error`), within the same bound.
        extra = [protocol.trim(e) for e in self.stage_errors[1 : cap.MAX_WARNINGS // 2 + 1]]
        facts["warnings"] = warnings[: cap.MAX_WARNINGS - len(extra)] + extra
        with contextlib.suppress(Exception):
            sys.stdout.flush()  # a library's half-written line goes out first ...
        # ... and the leading newline ends it, so that the record starts a line.
        line = "\n" + json.dumps({"kind": "runtime", "facts": facts}, default=str) + "\n"
        cap.write_all(cap.OUT_FD, line.encode("utf-8"))

    def stage(self, name: str, action: Callable[[], None]) -> bool:
        """Run one stage under its step name; an exception marks the record as an error."""
        protocol.step(name)
        try:
            action()
            return True
        except Exception as exc:
            self.fail(name, exc)
            return False

    def fail(self, name: str, exc: BaseException) -> None:
        text = f"{name}: {protocol.one_line(exc)}"
        self.stage_errors.append(text)
        if self.facts["status"] == "ok":
            self.facts["status"] = "error"
            self.facts["error"] = protocol.trim(text)

    def do_import(self, module: str) -> Any:
        protocol.step(f"import {module}")
        start = time.perf_counter()
        try:
            value = importlib.import_module(module)
        except (ImportError, OSError) as exc:
            self.facts["status"] = "import_error"
            self.facts["error"] = protocol.one_line(exc)
            value = None
        except (Exception, SystemExit) as exc:
            self.facts["status"] = "error"
            self.facts["error"] = f"import {module}: {protocol.one_line(exc)}"
            value = None
        self.facts["import_seconds"] = round(time.perf_counter() - start, 6)
        if value is not None:
            version = getattr(value, "__version__", None)
            self.facts["version"] = None if version is None else str(version)
            if not self.wait_for_gate():
                return None
        return value

    def smoke(self, device: str, run: Callable[[], str | None]) -> None:
        """One device's smoke test: run() returns None when the result is right, else why."""
        protocol.step(f"smoke {device}")
        start = time.perf_counter()
        try:
            problem = run()
        except Exception as exc:
            problem = protocol.one_line(exc)
        seconds = round(time.perf_counter() - start, 6)
        test = {"device": device, "ok": problem is None, "error": problem, "seconds": seconds}
        self.facts["smoke_tests"].append(test)
        self.emit()


def host_operands() -> tuple[Any, Any, Any]:
    """numpy, the smoke test's SIZE x SIZE float32 input A, and A @ A.T computed on the CPU."""
    numpy = importlib.import_module("numpy")
    a_host = numpy.arange(SIZE * SIZE, dtype=numpy.float32).reshape(SIZE, SIZE)
    a_host /= SIZE * SIZE
    return numpy, a_host, a_host @ a_host.T


def verdict(lib: Any, got: Any, expected: Any) -> str | None:
    """None where `got` is the CPU's result (compared by `lib`: numpy, or torch), else why not."""
    if lib.allclose(got, expected, rtol=RTOL, atol=ATOL):
        return None
    return differs(lib.abs(got - expected).max())


def differs(max_diff: Any) -> str:
    try:
        return f"the result differs from the CPU's (largest difference {float(max_diff):.6g})"
    except (TypeError, ValueError):
        return "the result differs from the CPU's"


def version_text(value: Any) -> str | None:
    """A runtime version integer (12040) as "12.4"; 0 or nothing as None."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def cudnn_text(value: Any) -> str | None:
    if not value:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return str(value)
    # cuDNN 9 encodes 9.1.0 as 90100; cuDNN 8 and older encode 8.9.7 as 8907.
    if value >= 90000:
        return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
    return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"


def nccl_text(value: Any) -> str | None:
    if isinstance(value, (tuple, list)):
        return ".".join(str(v) for v in value) or None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        # NCCL_VERSION_CODE: major*10000 + minor*100 + patch from 2.9, major*1000 + ... before.
        if value >= 20900:
            return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
        return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"
    return None if value is None else str(value)


def names(values: Any) -> list[str]:
    if not values:
        return []
    if isinstance(values, str):
        return values.split()
    return [str(v) for v in values]


# --- frameworks -------------------------------------------------------------------------------


def probe_torch(p: Probe, torch: Any) -> None:
    facts = p.facts

    def build() -> None:
        facts["cuda_version"] = getattr(getattr(torch, "version", None), "cuda", None)
        # torch.cuda.get_arch_list() answers [] whenever CUDA cannot start; the flags the
        # build was compiled with are there even then. CPU builds lack the function.
        flags = getattr(getattr(torch, "_C", None), "_cuda_getArchFlags", None)
        facts["arch_list"] = names(flags() if flags is not None else None)

    p.stage("torch build", build)

    def available() -> None:
        facts["cuda_available"] = bool(torch.cuda.is_available())

    def count() -> None:
        facts["device_count"] = int(torch.cuda.device_count())

    p.stage("torch.cuda.is_available", available)
    p.stage("torch.cuda.device_count", count)
    for index in range(facts["device_count"] or 0):

        def name(index: int = index) -> None:
            facts["devices"].append(str(torch.cuda.get_device_name(index)))

        if not p.stage(f"torch.cuda.get_device_name {index}", name):
            break
    p.emit()

    def cudnn() -> None:
        facts["cudnn_version"] = cudnn_text(torch.backends.cudnn.version())

    p.stage("torch.backends.cudnn.version", cudnn)  # loads libcudnn: it may abort
    p.emit()
    if getattr(getattr(torch, "_C", None), "_nccl_version", None) is not None:

        def nccl() -> None:
            facts["nccl_version"] = nccl_text(torch.cuda.nccl.version())

        p.stage("torch.cuda.nccl.version", nccl)
        p.emit()

    for index in range(facts["device_count"] or 0):

        def run(index: int = index) -> str | None:
            a = torch.arange(SIZE * SIZE, dtype=torch.float32).reshape(SIZE, SIZE).div(SIZE * SIZE)
            b = a.t()
            expected = a.matmul(b)
            device = torch.device(f"cuda:{index}")
            got = a.to(device).matmul(b.to(device)).cpu()
            return verdict(torch, got, expected)

        p.smoke(f"cuda:{index}", run)


def probe_tensorflow(p: Probe, tf: Any) -> None:
    facts = p.facts

    def build() -> None:
        info = dict(tf.sysconfig.get_build_info())
        if not tf.test.is_built_with_cuda():
            return  # a CPU (or ROCm) build: no CUDA version, whatever the dictionary says
        cuda, cudnn = info.get("cuda_version"), info.get("cudnn_version")
        facts["cuda_version"] = None if cuda is None else str(cuda)
        facts["cudnn_version"] = None if cudnn is None else str(cudnn)
        facts["arch_list"] = names(info.get("cuda_compute_capabilities"))

    p.stage("tf.sysconfig.get_build_info", build)
    gpus: list[Any] = []

    def devices() -> None:
        gpus.extend(tf.config.list_physical_devices("GPU"))
        facts["devices"] = [str(getattr(d, "name", d)) for d in gpus]
        facts["device_count"] = len(gpus)
        facts["cuda_available"] = bool(gpus)

    p.stage("tf.config.list_physical_devices", devices)
    p.emit()
    if not gpus:
        return
    with contextlib.suppress(Exception):
        tf.config.set_soft_device_placement(False)  # no silent fallback to the CPU
    for index in range(len(gpus)):

        def run(index: int = index) -> str | None:
            numpy, a_host, expected = host_operands()
            name = f"/GPU:{index}"
            with tf.device(name):
                a = tf.constant(a_host)
                c = tf.matmul(a, a, transpose_b=True)
            where = str(getattr(c, "device", ""))
            if where and f"GPU:{index}" not in where:
                return f"the matmul ran on {where}, not {name}"
            got = c.numpy()
            return verdict(numpy, got, expected)

        p.smoke(f"/GPU:{index}", run)


def probe_jax(p: Probe, jax: Any) -> None:
    facts = p.facts
    devs: list[Any] = []

    def backend() -> None:
        facts["backend"] = str(jax.default_backend())
        facts["cuda_available"] = facts["backend"] in ("gpu", "cuda")

    def devices() -> None:
        devs.extend(jax.devices())
        facts["devices"] = [str(d) for d in devs]
        facts["device_count"] = len(devs)

    p.stage("jax.default_backend", backend)  # starts the backends: CUDA initialises here
    p.stage("jax.devices", devices)
    p.emit()
    for device in devs:
        if str(getattr(device, "platform", "")).lower() not in ("gpu", "cuda"):
            continue

        def run(device: Any = device) -> str | None:
            jnp = importlib.import_module("jax.numpy")
            numpy, a_host, expected = host_operands()
            a = jax.device_put(a_host, device)
            got = numpy.asarray(jnp.matmul(a, a.T, precision="highest"))
            return verdict(numpy, got, expected)

        p.smoke(str(device), run)


def probe_cupy(p: Probe, cupy: Any) -> None:
    facts = p.facts
    runtime: Any = getattr(getattr(cupy, "cuda", None), "runtime", None)

    def build() -> None:
        facts["cuda_version"] = version_text(runtime.runtimeGetVersion())

    def driver() -> None:
        facts["driver_version"] = version_text(runtime.driverGetVersion())

    def count() -> None:
        facts["cuda_available"] = False
        facts["device_count"] = int(runtime.getDeviceCount())
        facts["cuda_available"] = facts["device_count"] > 0

    if p.stage("cupy.cuda.runtime.runtimeGetVersion", build):
        p.stage("cupy.cuda.runtime.driverGetVersion", driver)
        p.stage("cupy.cuda.runtime.getDeviceCount", count)
    for index in range(facts["device_count"] or 0):

        def name(index: int = index) -> None:
            value = runtime.getDeviceProperties(index)["name"]
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            facts["devices"].append(str(value).rstrip("\x00"))

        if not p.stage(f"cupy.cuda.runtime.getDeviceProperties {index}", name):
            break
    p.emit()
    for index in range(facts["device_count"] or 0):

        def run(index: int = index) -> str | None:
            numpy, a_host, expected = host_operands()
            with cupy.cuda.Device(index):
                a = cupy.asarray(a_host)
                got = cupy.asnumpy(a @ a.T)
            return verdict(numpy, got, expected)

        p.smoke(f"cuda:{index}", run)


# Each probe gets the framework's module, imported (and past the gate) already.
PROBES: dict[str, Callable[[Probe, Any], None]] = {
    "torch": probe_torch,
    "tensorflow": probe_tensorflow,
    "jax": probe_jax,
    "cupy": probe_cupy,
}


def main(argv: list[str]) -> int:
    framework = argv[1] if len(argv) > 1 else ""
    capture = cap.Capture()
    probe = Probe(framework, capture)
    if framework not in PROBES:
        probe.facts["status"] = "error"
        known = ", ".join(PROBES)
        probe.facts["error"] = f"unknown framework {framework!r}: expected one of {known}"
        probe.emit()
        return 2
    capture.start()
    try:
        module = probe.do_import(framework)  # each framework's module is named as it is
        probe.emit()
        if module is not None:
            PROBES[framework](probe, module)
    except Exception as exc:  # a bug here, or a framework odder than expected
        probe.fail("probe", exc)
        probe.emit()
    finally:
        capture.stop()
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    # Every record is out and the relay has stopped: skip the framework's own teardown (a
    # second or so for some at exit), which can only cost time and crash.
    os._exit(code)
