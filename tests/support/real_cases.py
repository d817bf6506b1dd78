"""Real broken machines from public issue threads (tests/cases), loaded and diagnosed: what
tests/e2e/test_cases.py scores, and what other suites run over the same corpus.

Each case in tests/cases/*.json names a thread, the facts it states, a snapshot change built
from those facts only, and the verdict a correct doctor gives (check id, status, section, and
substrings its fix must contain). The snapshot change is deep-merged, at run time, onto a
healthy baseline machine built with the test builders; the command line then diagnoses it
(`doctor --from FILE --json`, in this process: its subprocess path has tests of its own). Cases the doctor still gets wrong are strict xfails,
so fixing a check flips them and the file tells; `pytest -s tests/e2e/test_cases.py` prints the
score. See tests/cases/README.md for the format.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support import builders

CASES_DIR = Path(__file__).parents[1] / "cases"
MIB = builders.MIB


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """A builder from another builders module, imported when first called: a module that
    breaks while the source tree moves costs only the cases that use it, not the whole file."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


fb_environment = _lazy("support.framework_builders", "environment")
fb_with_torch = _lazy("support.framework_builders", "with_torch")
fb_with_tensorflow = _lazy("support.framework_builders", "with_tensorflow")
fb_with_jax = _lazy("support.framework_builders", "with_jax")
fb_add = _lazy("support.framework_builders", "add")

# --- baselines: healthy machines, from the builders ------------------------------------------


def _rtx_4090() -> Any:
    """The desktop of builders.workstation() with an RTX 4090 (Ada, 8.9, 24 GiB) in place of
    its RTX 3060: the field layout of the consumer capture, the 4090's name and size."""
    snap = builders.workstation()
    gpu = snap.nvml.gpus[0]
    gpu.name = "NVIDIA GeForce RTX 4090"
    gpu.compute_capability, gpu.architecture = "8.9", "Ada Lovelace"
    gpu.memory_total = 24564 * MIB
    gpu.memory_free = gpu.memory_total - (gpu.memory_used or 0)
    gpu.power_limit_w = 450.0
    snap.cuda.driver.devices[0].name = gpu.name
    snap.cuda.driver.devices[0].compute_capability = "8.9"
    snap.cuda.driver.devices[0].memory_total = gpu.memory_total
    snap.system.pci_gpus[0].device_id = "0x2684"
    return snap


def _a100_mig() -> Any:
    """One A100-SXM4-80GB with MIG on and four 1g.20gb slices (builders.a100_mig)."""
    gpu = builders.a100_mig(0)
    gpu.persistence_mode = True
    snap = builders.node([gpu])
    snap.system.pci_gpus[0].device_id = "0x20b2"
    snap.system.pci_gpus[0].name = None
    return snap


def _a100x8() -> Any:
    """Eight A100-SXM4-80GB, MIG off (the a100_mig GPU with MIG disabled)."""
    gpus = []
    for i in range(8):
        g = builders.a100_mig(i)
        g.mig_enabled = g.mig_enabled_pending = False
        g.mig_devices = []
        g.persistence_mode = True
        g.uuid = f"GPU-513536b6-7d19-9063-b049-1e69664bb29{i}"
        g.pci_bus_id = f"00000000:{0x07 + i * 0x10:02X}:00.0"
        gpus.append(g)
    return builders.node(gpus)


def _a100_pcie_x8() -> Any:
    """Eight A100 80GB PCIe cards, MIG off (a shared multi-GPU server): the a100x8 node with
    the PCIe card's name, device id (0x20b5) and 300 W limit."""
    snap = _a100x8()
    for i, gpu in enumerate(snap.nvml.gpus):
        gpu.name = "NVIDIA A100 80GB PCIe"
        gpu.power_limit_w = 300.0
        snap.cuda.driver.devices[i].name = gpu.name
        snap.system.pci_gpus[i].device_id = "0x20b5"
        snap.system.pci_gpus[i].name = None
    return snap


def _wsl() -> Any:
    """WSL2 with the Windows driver's paravirtualised GPU working: the workstation's RTX 3060
    seen through /dev/dxg and /usr/lib/wsl/lib, NVML and cuInit answering."""
    from support import more_builders

    return more_builders.wsl_system(builders.workstation())


def _more_of_gpu0(snap: Any, count: int) -> Any:
    """`snap` with `count` GPUs: copies of its GPU 0 (NVML, CUDA, PCI, /dev node), each with
    its own index, UUID and bus (01, 02, ...), as a box of identical cards shows them."""
    gpu, device, pci = snap.nvml.gpus[0], snap.cuda.driver.devices[0], snap.system.pci_gpus[0]
    node = next(n for n in snap.system.device_nodes if n.path == "/dev/nvidia0")
    snap.nvml.gpus, snap.cuda.driver.devices, snap.system.pci_gpus = [], [], []
    for i in range(count):
        g = copy.deepcopy(gpu)
        g.index = g.minor_number = i
        g.uuid = f"{(gpu.uuid or 'GPU-00000000-0000-0000-0000-000000000000')[:-2]}{i:02d}"
        g.pci_bus_id = f"00000000:{i + 1:02X}:00.0"
        snap.nvml.gpus.append(g)
        d = copy.deepcopy(device)
        d.index = i
        snap.cuda.driver.devices.append(d)
        p = copy.deepcopy(pci)
        p.address = f"0000:{i + 1:02x}:00.0"
        snap.system.pci_gpus.append(p)
        if i:
            n = copy.deepcopy(node)
            n.path = f"/dev/nvidia{i}"
            snap.system.device_nodes.append(n)
    snap.nvml.device_count = snap.cuda.driver.device_count = count
    return snap


def _a100_pcie_x3_mig0() -> Any:
    """Three A100 80GB PCIe cards, the first in MIG mode with its four 1g.20gb slices and the
    other two whole (a node where one card was partitioned)."""
    snap = _more_of_gpu0(_a100_mig(), 3)
    for i, gpu in enumerate(snap.nvml.gpus):
        gpu.name = "NVIDIA A100 80GB PCIe"
        gpu.power_limit_w = 300.0
        snap.cuda.driver.devices[i].name = gpu.name
        snap.system.pci_gpus[i].device_id = "0x20b5"
        if i:
            gpu.mig_enabled = gpu.mig_enabled_pending = False
            gpu.mig_devices = []
        else:
            for mig in gpu.mig_devices:
                mig.name = "NVIDIA A100 80GB PCIe MIG 1g.20gb"
    return snap


def _container(snap: Any) -> Any:
    snap.system.container = "docker"
    snap.system.container_evidence = "/.dockerenv exists"
    return snap


BASELINES: dict[str, Callable[[], Any]] = {
    "h100x1": lambda: builders.h100_node(1),
    "h100x8": lambda: builders.h100_node(8),
    "a100_mig": _a100_mig,
    "a100x8": _a100x8,
    "a100_pcie_x8": _a100_pcie_x8,
    "rtx3060": builders.workstation,
    "rtx4090": _rtx_4090,
    "rtx4090x2": lambda: _more_of_gpu0(_rtx_4090(), 2),
    "a100_pcie_x3_mig0": _a100_pcie_x3_mig0,
    "rtx5090": _lazy("support.framework_builders", "blackwell_workstation"),
    "gtx1080": _lazy("support.framework_builders", "pascal_workstation"),
    "windows_rtx2080": _lazy("support.framework_builders", "windows_workstation"),
    "wsl_rtx3060": _wsl,
    "container_h100": lambda: _container(builders.h100_node(1)),
    "container_rtx3060": lambda: _container(builders.workstation()),
    "laptop_no_gpu": builders.no_gpu_machine,
}

# Python environments a case can start from (`"environments": ["NAME" or "NAME:VERSION"]`),
# each healthy on its own; the case's snapshot then changes what the thread states.


def _torch(version: str = "2.5.1+cu124", platform: str = "linux") -> Any:
    """torch VERSION in a virtual environment; its version.py CUDA from the local tag
    (+cu124 -> 12.4; no CUDA tag: a CPU build), no pinned NVIDIA wheels."""
    tag = version.partition("+")[2]
    cuda = f"{tag[2:-1]}.{tag[-1]}" if tag.startswith("cu") and tag[2:].isdigit() else None
    if platform == "win32":
        env = fb_environment(prefix="C:\\Users\\me\\venv", version="3.10.11", platform="win32")
    else:
        env = fb_environment()
    return fb_with_torch(env, version, cuda)


def _tensorflow(version: str = "2.15.0") -> Any:
    """tensorflow VERSION, with the tensorflow[and-cuda] wheels where that release has them."""
    fbm = importlib.import_module("support.framework_builders")
    and_cuda = version in fbm.AND_CUDA_PINS
    return fb_with_tensorflow(fb_environment(), version, and_cuda=and_cuda)


def _tensorflow_gpu(version: str = "1.15.0") -> Any:
    """tensorflow-gpu VERSION (1.x, 2.0) from pip: its build_info names no architectures."""
    return fb_with_tensorflow(
        fb_environment(), version, package="tensorflow-gpu", archs=[], and_cuda=False
    )


ENVIRONMENTS: dict[str, Callable[..., Any]] = {
    "venv": fb_environment,
    "torch_cu124": _lazy("support.framework_builders", "torch_cu124"),
    "torch_cu128": lambda: fb_with_torch(
        fb_environment(),
        "2.7.1+cu128",
        "12.8",
        pins=importlib.import_module("support.framework_builders").TORCH_271_CU128_PINS,
    ),
    "torch": _torch,
    "torch_windows": lambda version="2.5.1+cu124": _torch(version, "win32"),
    "tensorflow": _tensorflow,
    "tensorflow_gpu": _tensorflow_gpu,
    "windows_tf": _lazy("support.framework_builders", "tensorflow_windows"),
    "jax": lambda version="0.4.30": fb_with_jax(fb_environment(), version),
    "jax_no_plugin": lambda version="0.4.30": fb_with_jax(fb_environment(), version, None),
}


def environment_for(spec: str) -> Any:
    name, _, arg = spec.partition(":")
    return ENVIRONMENTS[name](arg) if arg else ENVIRONMENTS[name]()


# --- merging ---------------------------------------------------------------------------------


def merge(base: Any, change: Any) -> Any:
    """Deep-merge `change` onto `base`: dicts merge key by key, lists and scalars replace. A
    dict whose keys are all list indices ("0", "3") applied to a list changes those elements
    in place (so a case can change one GPU without restating the others)."""
    if isinstance(change, dict) and isinstance(base, dict):
        out = dict(base)
        for key, value in change.items():
            out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (
        isinstance(change, dict)
        and isinstance(base, list)
        and change
        and all(k.isdigit() for k in change)
    ):
        out_list = list(base)
        for key, value in change.items():
            i = int(key)
            if i >= len(out_list):
                raise ValueError(f"index {i} beyond a list of {len(out_list)}")
            out_list[i] = merge(out_list[i], value)
        return out_list
    return copy.deepcopy(change)


def load_cases() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text())
        case["_slug"] = path.stem
        cases.append(case)
    return cases


def add_packages(env: Any, packages: list[Any]) -> None:
    """Install what a thread lists beside the framework (`"name==version"`, or an object with
    `name`, `version` and the wheel's `requires` lines) into `env`."""
    for package in packages:
        if isinstance(package, str):
            name, _, version = package.partition("==")
            fb_add(env, name, version)
        else:
            fb_add(env, package["name"], package["version"], package.get("requires"))


def snapshot_for(case: dict[str, Any]) -> dict[str, Any]:
    snap = BASELINES[case.get("baseline", "h100x1")]()
    snap.environments = [environment_for(spec) for spec in case.get("environments", [])]
    if case.get("packages"):
        add_packages(snap.environments[0], case["packages"])
    return merge(snap.to_dict(), case.get("snapshot", {}))  # type: ignore[no-any-return]


# --- running ---------------------------------------------------------------------------------


def diagnose(case: dict[str, Any]) -> dict[str, Any]:
    """The real `gpucheck doctor --from FILE --json` on the case's snapshot."""
    try:
        snapshot = snapshot_for(case)
    except Exception as exc:  # a baseline builder that broke: this case only
        return {"error": f"baseline could not be built: {type(exc).__name__}: {exc}"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(snapshot, fh)
        path = fh.name
    # The command line itself, in this process (the subprocess path has its own tests): a
    # few milliseconds a case instead of an interpreter's start-up.
    from gpucheck import cli

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(["doctor", "--from", path, "--json", *case.get("args", [])])
    finally:
        os.unlink(path)
    if code not in (0, 1):
        return {"error": f"exit {code}: {err.getvalue().strip()[-500:]}"}
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def judge(case: dict[str, Any], report: dict[str, Any]) -> tuple[bool, bool, str]:
    """(right verdict, right fix, what the doctor said) for one case."""
    if "error" in report:
        return False, False, report["error"]
    want = case["expected"]
    if want["status"] == "ready":  # a healthy machine: no FAIL at all, warnings allowed
        failed = [
            f"{f['id']} fail [{f['section']}]: {f['title']}"
            for f in report["findings"]
            if f["status"] == "fail"
        ]
        return not failed, not failed, "; ".join(failed) or "no FAIL"
    found = next((f for f in report["findings"] if f["id"] == want["check"]), None)
    if found is None:
        problems = [
            f"{f['id']}={f['status']}"
            for f in report["findings"]
            if f["status"] in ("warn", "fail")
        ]
        return False, False, f"no {want['check']} finding; problems: {problems}"
    said = (
        f"{found['id']} {found['status']} [{found['section']}]: {found['title']}"
        f" | fix: {found['fix']}"
    )
    verdict = found["status"] == want["status"] and found["section"] == want["layer"]
    fix = found.get("fix") or ""
    if isinstance(fix, dict):  # {"text": ..., "steps": [{"command": ...}, ...]}
        commands = [str(s.get("command")) for s in fix.get("steps") or [] if s.get("command")]
        fix = " ".join([str(fix.get("text") or ""), *commands])
    right_fix = verdict and all(s in fix for s in want.get("fix_contains", []))
    return verdict, right_fix, said


CASES = load_cases()
