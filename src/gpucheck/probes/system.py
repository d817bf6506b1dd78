"""System facts from plain files: OS, container, PCI bus, kernel modules, device nodes, env.

Everything here is read from /proc, /sys, /dev and /etc, relative to `root` so that tests can
point it at a fabricated tree. Nothing is loaded, nothing can hang.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import socket
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from gpucheck.model.snapshot import DeviceNode, SystemFacts
from gpucheck.probes import modules
from gpucheck.probes.container_host import probe_container_host
from gpucheck.probes.fabric import probe_fabric_host
from gpucheck.probes.files import read_text as _read
from gpucheck.probes.host import probe_host
from gpucheck.probes.kernel_log import read_nvrm
from gpucheck.probes.pci_ids import PciIds, find_pci_ids, scan_pci

# Recorded by exact name only, so that no secret can reach a report.
ENV_ALLOWLIST = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_PATH",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
    "CUDNN_PATH",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_CPP_MIN_LOG_LEVEL",
    "XLA_FLAGS",
    "TF_XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "NCCL_DEBUG",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_SOCKET_IFNAME",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "GPU_DEVICE_ORDINAL",
    "KUBERNETES_SERVICE_HOST",
)
NVIDIA_MODULES = ("nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset", "nvidia_peermem")
SECURE_BOOT_VAR = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def probe_system(
    root: Path = Path("/"),
    env: Mapping[str, str] | None = None,
    pci_ids: PciIds | None = None,
    host_id: str | None = None,
) -> SystemFacts:
    env = os.environ if env is None else env
    facts = SystemFacts(
        os=platform.system(),
        kernel=platform.release(),
        arch=platform.machine(),
        hostname=socket.gethostname(),
        python_version=platform.python_version(),
        python_executable=sys.executable,
    )
    facts.os_release = _os_release(root)
    own_root = root == Path("/")
    if not own_root:  # a pod's own hostname is the pod's; the host's is in its /etc
        facts.hostname = (_read(root / "etc/hostname") or "").strip() or facts.hostname
    # Under GPUCHECK_ROOT (a DaemonSet mounting the host at /host) the facts are the root's:
    # its files say whether it is a container, not this process's environment, which is the
    # pod's (KUBERNETES_SERVICE_HOST) while the facts judged are the host's.
    facts.container, facts.container_evidence = detect_container(root, env if own_root else {})
    proc_version = _read(root / "proc/version") or ""
    facts.wsl = "microsoft" in proc_version.lower() or (root / "dev/dxg").exists()
    facts.pci_scanned, facts.pci_device_count, facts.pci_gpus, nvswitches = scan_pci(root)
    if facts.pci_gpus:
        ids = pci_ids if pci_ids is not None else find_pci_ids(root)
        if ids is not None:
            facts.pci_ids_path = str(ids.path)
            for dev in facts.pci_gpus:
                dev.name = ids.name(dev.device_id, dev.subsystem_vendor_id, dev.subsystem_device_id)
    modules = _loaded_modules(root)
    if modules is not None:
        facts.nvidia_modules = [m for m in NVIDIA_MODULES if m in modules]
        facts.nouveau_loaded = "nouveau" in modules
        facts.nova_core_loaded = "nova_core" in modules
        facts.nvidia_module_loaded = "nvidia" in modules
    banner = _read(root / "proc/driver/nvidia/version")
    if banner:
        facts.nvidia_module_banner = banner.splitlines()[0].strip()
        facts.nvidia_module_version = parse_module_version(banner)
        facts.nvidia_module_loaded = True
    if facts.nvidia_module_version is None:
        sys_version = _read(root / "sys/module/nvidia/version")
        if sys_version and sys_version.strip():
            facts.nvidia_module_version = sys_version.strip()
            facts.nvidia_module_loaded = True
    if facts.os == "Linux" and not facts.wsl and not facts.container:
        _module_on_disk(facts, root)  # a container's /lib/modules is not what its host boots
    if facts.os == "Linux" and not facts.container:
        facts.container_host = probe_container_host(root, env)
    if facts.os == "Linux" and not facts.wsl:
        facts.kernel_log_nvrm, facts.kernel_log_error = read_nvrm(root)
        facts.fabric = probe_fabric_host(root, bool(facts.container), nvswitches)
    facts.secure_boot = _secure_boot(root)
    facts.device_nodes = device_nodes(root)
    facts.env = {k: env[k] for k in ENV_ALLOWLIST if k in env}
    facts.host = probe_host(root, facts.hostname, host_id)
    return facts


def _module_on_disk(facts: SystemFacts, root: Path) -> None:
    path = modules.module_file(root, facts.kernel)
    if path is None:
        facts.nvidia_module_file_error = f"no nvidia module under /lib/modules/{facts.kernel}"
    else:
        facts.nvidia_module_file = "/" + str(path.relative_to(root))
        version, error = modules.module_version(path)
        facts.nvidia_module_file_version = version
        facts.nvidia_module_file_error = error
    facts.dkms_nvidia_versions = modules.dkms_versions(root)


def _os_release(root: Path) -> str | None:
    for rel in ("etc/os-release", "usr/lib/os-release"):
        text = _read(root / rel)
        if text:
            match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.MULTILINE)
            if match:
                return match.group(1)
    return None


def detect_container(root: Path, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The container gpucheck's facts come from, from the root's files and `env` (which
    probe_system passes only when the root is this process's own /)."""
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST is set"
    if (root / "run/.containerenv").exists():
        return "podman", "/run/.containerenv exists"
    if (root / ".dockerenv").exists():
        return "docker", "/.dockerenv exists"
    cgroup = _read(root / "proc/1/cgroup") or ""
    for marker, kind in (
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("libpod", "podman"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ):
        if marker in cgroup:
            return kind, f"/proc/1/cgroup mentions {marker}"
    if env.get("container"):
        return env["container"], "the container variable is set"
    return None, None


def _loaded_modules(root: Path) -> set[str] | None:
    text = _read(root / "proc/modules", limit=1 << 20)
    if text is not None:
        return {line.split()[0] for line in text.splitlines() if line.strip()}
    try:
        return set(os.listdir(root / "sys/module"))
    except OSError:
        return None


def parse_module_version(banner: str) -> str | None:
    """'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ...' -> '535.104.05'.

    Open kernel modules say 'NVIDIA UNIX Open Kernel Module for x86_64  550.54.14 ...'.
    """
    match = re.search(r"Kernel Module(?: for \S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)", banner)
    return match.group(1) if match else None


def _secure_boot(root: Path) -> bool | None:
    try:
        data = (root / SECURE_BOOT_VAR).read_bytes()
    except OSError:
        return None
    return bool(data[-1]) if data else None


def device_nodes(root: Path) -> list[DeviceNode]:
    dev = root / "dev"
    names = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
    with contextlib.suppress(OSError):
        names += sorted(
            (n for n in os.listdir(dev) if re.fullmatch(r"nvidia[0-9]+", n)),
            key=lambda n: int(n[6:]),
        )
    if (dev / "dxg").exists():
        names.append("dxg")
    return [_node(dev / n, f"/dev/{n}") for n in names]


def _node(path: Path, shown: str) -> DeviceNode:
    try:
        st = path.stat()
    except OSError:
        return DeviceNode(path=shown, exists=False)
    try:
        import grp  # POSIX only; device nodes exist only there anyway

        group = grp.getgrgid(st.st_gid).gr_name
    except (ImportError, KeyError):
        group = str(st.st_gid)
    return DeviceNode(
        path=shown,
        exists=True,
        readable=os.access(path, os.R_OK),
        writable=os.access(path, os.W_OK),
        mode=stat.filemode(st.st_mode),
        owner_group=group,
    )
