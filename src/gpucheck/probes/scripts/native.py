"""Native-library probe, run in a child process (protocol: child/protocol.py).

argv[1] is a JSON list of tasks: {"id": ..., "kind": "cuda_driver" | "cudart" | "cudnn",
"path": ...}. One JSON line per finished task on stdout; "@ task <id>" on stderr before each,
so that the parent can tell which library hung or aborted the process.

Standard library only (ctypes); no gpucheck imports; runs on Python 3.8+.
"""

from __future__ import annotations

import ctypes
import os
import sys

if not __package__:  # run as a script: the package of its relative imports is its own
    # folder, then gpucheck/child/ (protocol.py, which every child script shares)
    _FOLDER = os.path.dirname(os.path.realpath(__file__))
    __package__, __path__ = __name__, [_FOLDER, os.path.join(_FOLDER, "..", "..", "child")]

from . import protocol

TYPE_CHECKING = False  # mypy treats this name as True; typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypedDict

    class TaskBase(TypedDict):
        id: str
        kind: str  # a key of KINDS

    class Task(TaskBase, total=False):
        path: str  # cudart, cudnn: the library to load
        init: bool  # cuda_driver: False to leave cuInit uncalled

    class DeviceBase(TypedDict):
        index: int

    class Device(DeviceBase, total=False):
        name: str
        compute_capability: str
        memory_total: int

    class CudaDriverBase(TypedDict):
        devices: list[Device]

    class CudaDriverResult(CudaDriverBase, total=False):
        load_error: str
        library_path: str | None
        driver_version: int
        init_skipped_reason: str
        init_result: int
        init_error_name: str | None
        device_count: int

    class ErrorResult(TypedDict):
        error: str

    class VersionResult(TypedDict):
        version: str

    class CudnnResult(VersionResult, total=False):
        cuda_version: str

    Result = CudaDriverResult | ErrorResult | VersionResult | CudnnResult


def mapped_path(fragment: str) -> str | None:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) >= 6 and fragment in os.path.basename(parts[-1]):
                    return parts[-1]
    except OSError:
        pass
    return None


def cuda_error_name(lib: ctypes.CDLL, code: int) -> str | None:
    name = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value:
            return name.value.decode()
    except Exception:
        pass
    return None


def cuda_driver(task: Task) -> CudaDriverResult:
    out: CudaDriverResult = {"devices": []}
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        out["load_error"] = str(exc)
        return out
    out["library_path"] = mapped_path("libcuda.so")
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
        out["driver_version"] = version.value
    if not task.get("init", True):
        # As root, cuInit would run nvidia-modprobe: load the module and create device nodes.
        out["init_skipped_reason"] = "cuInit not called: the nvidia kernel module is not loaded"
        return out
    rc: int = lib.cuInit(0)
    out["init_result"] = rc
    out["init_error_name"] = cuda_error_name(lib, rc) if rc else None
    if rc != 0:
        return out
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return out
    out["device_count"] = count.value
    for index in range(count.value):
        dev = ctypes.c_int(0)
        record: Device = {"index": index}
        if lib.cuDeviceGet(ctypes.byref(dev), index) == 0:
            buf = ctypes.create_string_buffer(256)
            if lib.cuDeviceGetName(buf, 256, dev) == 0:
                record["name"] = buf.value.decode("utf-8", "replace")
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76
            if (
                lib.cuDeviceGetAttribute(ctypes.byref(major), 75, dev) == 0
                and lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev) == 0
            ):
                record["compute_capability"] = f"{major.value}.{minor.value}"
            total = ctypes.c_size_t(0)
            if lib.cuDeviceTotalMem_v2(ctypes.byref(total), dev) == 0:
                record["memory_total"] = total.value
        out["devices"].append(record)
    return out


def cudart(task: Task) -> ErrorResult | VersionResult:
    lib = ctypes.CDLL(task["path"])
    version = ctypes.c_int(0)
    rc: int = lib.cudaRuntimeGetVersion(ctypes.byref(version))
    if rc != 0:
        return {"error": f"cudaRuntimeGetVersion returned {rc}"}
    return {"version": f"{version.value // 1000}.{(version.value % 1000) // 10}"}


def cudnn_version_text(value: int) -> str:
    # cuDNN 9 encodes 9.1.0 as 90100; cuDNN 8 and older encode 8.9.7 as 8907.
    if value >= 90000:
        return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
    return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"


def cudnn(task: Task) -> CudnnResult:
    lib = ctypes.CDLL(task["path"])
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    out: CudnnResult = {"version": cudnn_version_text(lib.cudnnGetVersion())}
    try:
        lib.cudnnGetCudartVersion.restype = ctypes.c_size_t
        rt: int = lib.cudnnGetCudartVersion()
        out["cuda_version"] = f"{rt // 1000}.{(rt % 1000) // 10}"
    except AttributeError:
        pass
    return out


KINDS: dict[str, Callable[[Task], Result]] = {
    "cuda_driver": cuda_driver,
    "cudart": cudart,
    "cudnn": cudnn,
}


def main() -> None:
    tasks: list[Task] = protocol.arguments(sys.argv, [])
    for task in tasks:
        protocol.step(f"task {task['id']}")
        try:
            result: Result = KINDS[task["kind"]](task)
        except Exception as exc:
            result = {"error": protocol.describe(exc)}
        protocol.emit({"id": task["id"], "result": result})


if __name__ == "__main__":
    main()
