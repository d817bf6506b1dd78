"""The real `gpucheck doctor` on simulated machines whose nvidia module does not load, with the
kernel log and DKMS tree as the machine wrote them: the probe reads them and the kernel-module
check names the cause and its fix."""

from __future__ import annotations

from conftest import Simulate
from sim import install_tree
from sim.scenario import Scenario, rtx_3060
from support.sim_doctor import doctor

# NixOS/nixos-hardware#1880's lines (a Pascal GPU under the 595 branch).
LEGACY_580 = [
    "nvidia-nvlink: Nvlink Core is being initialized, major device number 234",
    "NVRM: The NVIDIA NVIDIA GeForce GTX 1050 GPU installed in this system is",
    "NVRM:  supported through the NVIDIA 580.xx Legacy drivers. Please",
    "NVRM:  visit http://www.nvidia.com/object/unix.html for more",
    "NVRM:  information.  The 595.71.05 NVIDIA driver will ignore",
    "NVRM:  this GPU.  Continuing probe...",
    "NVRM: No NVIDIA GPU found.",
]


def test_a_legacy_gpu_read_from_the_kernel_log_gets_its_branch(simulate: Simulate) -> None:
    machine = simulate(
        Scenario(gpus=[rtx_3060()], driver="595.71.05", module_loaded=False, kernel_log=LEGACY_580)
    )
    d = doctor(machine)
    module = d.finding("driver.kernel-module")
    assert module["status"] == "fail"
    assert "its last branch is the 580.xx legacy branch" in module["title"]
    assert "sudo apt install nvidia-driver-580" in module["fix"]["text"]  # Ubuntu 22.04's root
    assert d.snapshot["system"]["kernel_log_nvrm"][-1] == "NVRM: No NVIDIA GPU found."


def test_a_refused_key_and_a_dkms_tree_are_read_from_the_machine(simulate: Simulate) -> None:
    scenario = Scenario(gpus=[rtx_3060()], driver="580.95.05", module_loaded=False)
    scenario.kernel_log = ["Loading of module with unavailable key is rejected"]
    scenario.files = {
        **install_tree.dkms_tree("580.95.05", ["5.15.0-185-generic"]),
        "/var/lib/dkms/mok.pub": "0",
    }
    d = doctor(simulate(scenario))
    state = d.snapshot["install_state"]
    assert state["module_log"] == ["Loading of module with unavailable key is rejected"]
    assert state["dkms_builds"][0]["built"] is True
    module = d.finding("driver.kernel-module")
    assert "signature" in module["title"]
    assert "mokutil --test-key /var/lib/dkms/mok.pub" in module["fix"]["text"]
