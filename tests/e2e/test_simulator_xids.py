"""The real `gpucheck doctor` on a simulated machine whose kernel log (/dev/kmsg) holds Xid
lines: gpus.xid-events reads them through NVIDIA's catalog and gives its action, the GPU's
index filled in; a healthy machine's empty log passes."""

from __future__ import annotations

from conftest import Simulate
from sim.scenario import Scenario, h100
from support.sim_doctor import doctor


def test_an_uncontained_memory_error_in_the_kernel_log_asks_for_that_gpus_reset(
    simulate: Simulate,
) -> None:
    gpus = [h100(i) for i in range(2)]
    address = gpus[1].pci_address.rsplit(".", 1)[0]  # "0000:xx:00", as Xid lines print it
    xid = f"NVRM: Xid (PCI:{address}): 95, pid=371232, Uncontained: LTC TAG (0x2,0x0). RST: Yes"
    d = doctor(simulate(Scenario(gpus=gpus, kernel_log=[xid])))
    found = d.finding("gpus.xid-events")
    assert found["status"] == "warn"
    assert (
        found["title"] == "Xid 95 in the kernel log since boot: NVIDIA's catalog asks for an action"
    )
    assert (
        f"Xid 95 (Uncontained memory error): NVIDIA's action RESET_GPU on {address}"
        in found["evidence"]
    )
    assert "sudo nvidia-smi -r -i 1" in found["fix"]["text"]


def test_an_empty_kernel_log_passes(simulate: Simulate) -> None:
    d = doctor(simulate(Scenario(gpus=[h100(0)])))
    assert d.finding("gpus.xid-events")["title"] == "No Xid in the kernel log since boot"
