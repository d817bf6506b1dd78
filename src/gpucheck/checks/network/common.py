"""What the network checks share: the node's GPU count, the one severity rule (a problem that
fails a multi-GPU node only warns on a single-GPU one), port states and the sources cited."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.model.finding import Outcome, Status, Subjects
from gpucheck.model.fix import Fix
from gpucheck.model.network import NetworkFacts, RdmaDevice, RdmaPort

# NCCL's troubleshooting pages, in the NCCL repository (docs/userguide/source/troubleshooting/):
# networking (memlock for ibv_reg_mr), runtime (shared memory, Docker's --shm-size and
# --ulimit memlock=-1), GPU (nvidia-peermem, DMA-BUF with the open driver, ACS and the IOMMU).
NCCL_TROUBLESHOOTING = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
)
NCCL_ENV_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
# NVIDIA GPU Operator, "GPUDirect RDMA and GPUDirect Storage": DMA-BUF needs the open kernel
# module, CUDA 11.7+, a Turing or newer GPU and Linux 5.12 or higher; nvidia-peermem any driver.
GPU_OPERATOR_RDMA = (
    "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html"
)


def gpu_count(ctx: Context) -> int:
    """The GPUs this process is given: NVML's where it answered (a container's own, since
    /sys/bus/pci is not namespaced and lists every GPU of the host), else the PCI bus's (a
    node whose driver is down still has them)."""
    return len(ctx.gpus) if ctx.nvml_ok else ctx.pci_gpu_count


def network(ctx: Context) -> NetworkFacts | None:
    """The network facts, where they were read on a machine with a GPU; None: nothing to judge
    (not read, an older snapshot, or no GPU: a network matters here only to a GPU job)."""
    facts = ctx.snapshot.network
    if not facts.scanned or not gpu_count(ctx):
        return None
    return facts


def problem(
    ctx: Context, title: str, *evidence: str, fix: Fix, subjects: Subjects | None = None
) -> Outcome:
    """A fail on a node with two or more GPUs (a multi-GPU or multi-node NCCL job's node), a
    warning on a single-GPU one."""
    status = Status.FAIL if gpu_count(ctx) >= 2 else Status.WARN
    return Outcome.make(status, title, evidence, fix, subjects)


def word(state: str | None) -> str:
    """The name in a sysfs state ("4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp")."""
    return (state or "").rpartition(":")[2].strip()


def active(port: RdmaPort) -> bool:
    return word(port.state) == "ACTIVE"


def active_ports(facts: NetworkFacts) -> list[tuple[RdmaDevice, RdmaPort]]:
    return [(d, p) for d in facts.rdma for p in d.ports if active(p)]


def slot(device: RdmaDevice) -> str | None:
    """The PCI slot (domain:bus:device) of a device's function: "0000:19:00.1" -> "0000:19:00"."""
    address = device.pci_address or ""
    return address.rpartition(".")[0] or None


def port_label(device: RdmaDevice, port: RdmaPort) -> str:
    return f"{device.name} port {port.number}"


def port_text(device: RdmaDevice, port: RdmaPort) -> str:
    return (
        f"{port_label(device, port)}: {port.state or '?'}, {port.phys_state or '?'}, "
        f"{port.rate or '?'}, {port.link_layer or '?'}"
    )


def kind(device: RdmaDevice, port: RdmaPort) -> tuple[str, str, int]:
    """Ports that should be alike: one adapter model (its HCA type, else its driver), one link
    layer, one port number (a dual-port card's second port is often left unused)."""
    return (device.hca_type or device.driver or "?", port.link_layer or "?", port.number)


def matches(value: str, names: list[str]) -> list[str] | None:
    """The names NCCL's filter syntax (NCCL_SOCKET_IFNAME, NCCL_IB_HCA) selects: a comma list
    of prefixes, `=` for exact names, `^` to exclude; an HCA entry's `:port` is dropped. None
    for an exclude list (whatever is left is used)."""
    text = value.strip()
    if text.startswith("^"):
        return None
    exact = text.startswith("=")
    tokens = [t.split(":")[0].strip() for t in text.lstrip("=").split(",")]
    tokens = [t for t in tokens if t]
    return [n for n in names if any(n == t if exact else n.startswith(t) for t in tokens)]


def selected(value: str | None, names: list[str]) -> list[str]:
    """The names NCCL uses under a filter (`value` None or empty: all of them)."""
    if not value or not value.strip():
        return names
    chosen = matches(value, names)
    if chosen is not None:
        return chosen
    dropped = matches(value.strip()[1:], names) or []
    return [n for n in names if n not in dropped]
