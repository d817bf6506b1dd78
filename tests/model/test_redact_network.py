"""--redact and the network section: NCCL's settings keep their values (interfaces, devices,
levels), while a user's home folder in them is replaced as everywhere else."""

from __future__ import annotations

from support import builders
from support.network_facts import dgx

from gpucheck.model.redact import redact


def test_nccl_settings_are_kept_with_user_names_replaced() -> None:
    snap = dgx(
        builders.h100_node(2),
        nccl_env={
            "NCCL_SOCKET_IFNAME": "=eno1",
            "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1",
            "NCCL_TOPO_FILE": "/home/alice/topo.xml",
        },
    )
    env = redact(snap, ["alice"]).network.nccl_env
    assert env["NCCL_SOCKET_IFNAME"] == "=eno1"
    assert env["NCCL_IB_HCA"] == "mlx5_0:1,mlx5_1:1"
    assert env["NCCL_TOPO_FILE"] == "/home/user/topo.xml"
