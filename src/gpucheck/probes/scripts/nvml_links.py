"""The NVML child's fabric, NVLink and peer-to-peer facts (see nvml.py, which imports this).

Per GPU: the NVSwitch fabric's state and status (nvmlDeviceGetGpuFabricInfoV, or the older
unversioned call) and each NVLink link's state. Per GPU pair: P2P status for read, write and
NVLink, and the topology level between them. Every call is announced (a crash or hang names it),
and every failure is recorded as unknown, never a crash of the child.

Standard library plus the nvidia-ml-py binding only; no gpucheck imports; runs on Python 3.8+.
"""

from __future__ import annotations

import ctypes

from . import protocol
from .nvml_names import FABRIC_STATES, P2P_STATUSES, TOPOLOGY_LEVELS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

P2P_INDICES = (("p2p_read", 0), ("p2p_write", 1), ("p2p_nvlink", 2))
MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS in nvml.h (Hopper and Blackwell: 18 links)
PAIR_LIMIT = 16  # GPUs: 120 pairs, 4 calls each; an NVL72 rack's NVML shows one node's GPUs


def probe_links(g: Any) -> None:
    """Adds fabric_state, fabric_status and nvlink_active to one GPU's facts (a nvml.Gpu)."""
    nvml = g.nvml
    info = None
    # The versioned call first (the unversioned one is deprecated in CUDA 13's NVML); the
    # older one only where the driver lacks the versioned symbol.
    for name, struct in (
        ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
        ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
    ):
        if g.field_errors.get("fabric_state") not in (None, "FunctionNotFound"):
            break
        if not hasattr(nvml, struct):
            continue
        candidate = getattr(nvml, struct)()  # a versioned struct sets its own version field
        if g.call("fabric_state", [name], ctypes.byref(candidate)) == 0:
            info = candidate
            break
    if info is not None:
        g.field_errors.pop("fabric_state", None)
        g.facts["fabric_state"] = FABRIC_STATES.get(int(info.state), f"state {int(info.state)}")
        g.facts["fabric_status"] = int(info.status)
    links = []
    for link in range(MAX_LINKS):
        state = g.call("nvlink_active", ["nvmlDeviceGetNvLinkState"], link)
        if state is None:
            break  # NotSupported: no NVLink; InvalidArgument: past the GPU's last link
        links.append(bool(state))
    if links:
        g.field_errors.pop("nvlink_active", None)
        g.facts["nvlink_active"] = links


def probe_pairs(nvml: ModuleType, handles: Sequence[tuple[int, object]], skip: set[str]) -> Any:
    """The "pairs" record: each GPU pair's P2P status and topology level."""
    pairs = []
    for x, (a, ha) in enumerate(handles[:PAIR_LIMIT]):
        for b, hb in handles[x + 1 : PAIR_LIMIT]:
            pair: dict[str, Any] = {"gpu_a": a, "gpu_b": b, "errors": {}}
            for field, index in P2P_INDICES:
                status = _call(nvml, "nvmlDeviceGetP2PStatus", skip, pair, field, a, ha, hb, index)
                if status is not None:
                    pair[field] = P2P_STATUSES.get(int(status), "unknown")
            name = "nvmlDeviceGetTopologyCommonAncestor"
            level = _call(nvml, name, skip, pair, "topology", a, ha, hb)
            if level is not None:
                pair["topology"] = TOPOLOGY_LEVELS.get(int(level), f"level {int(level)}")
            pairs.append(pair)
    return {"kind": "pairs", "pairs": pairs}


def _call(
    nvml: ModuleType, name: str, skip: set[str], pair: Any, field: str, gpu: int, *args: object
) -> Any:
    if name in skip:
        pair["errors"][field] = "Crashed"
        return None
    protocol.step(name, gpu)
    try:
        return getattr(nvml, name)(*args)
    except nvml.NVMLError as exc:
        pair["errors"][field] = protocol.nvml_error_name(exc)
    except Exception as exc:  # a binding bug costs this field only
        pair["errors"][field] = type(exc).__name__
    return None
