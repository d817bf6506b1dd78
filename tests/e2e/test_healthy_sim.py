"""Healthy machines end to end in the simulator: the real `gpucheck doctor
--json` on a fake NVML/libcuda and a fake /proc /sys /dev gives no FAIL finding.

Three standard machines: a DGX H100 (8x H100 SXM on the R580 and R590 drivers), a workstation
with one RTX 4090 and a pip-installed CUDA torch, and a Colab-like container with one T4 and
torch and JAX CUDA builds preinstalled. The Python environments are real virtual
environments holding the frameworks' installed files as pip lays them out (test_framework_static's
installers: metadata, torch/version.py, TensorFlow's build_info.py), read by the static pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pynvml as nv
import pytest
import sim.scenario as sim
from support import static_probe as wheels
from support.sim_doctor import Doctor, doctor

MIB = sim.MIB


def no_fail(d: Doctor) -> None:
    failed = {i: f["title"] for i, f in d.findings.items() if f["status"] == "fail"}
    assert failed == {}
    assert d.returncode == 0


def torch_venv(where: Path) -> Path:
    """`pip install torch==2.5.1` (CUDA 12.4 build, its nvidia-* wheels) in a real venv."""
    venv = wheels.make_venv(where)
    wheels.install_torch_2_5_1_stack(venv.site)
    return venv.python


# R580's driver as a DGX H100 runs it in a 2026 report (Skovorg/feral#18's collect_env:
# H100 80GB HBM3, driver 580.126.09), and the simulator's default R590 (590.48.01, CUDA 13.1).
@pytest.mark.parametrize(
    ("driver", "cuda"), [("580.126.09", 13000), ("590.48.01", 13010)], ids=["r580", "r590"]
)
def test_a_standard_dgx_h100_is_ready(simulate: Any, driver: str, cuda: int) -> None:
    gpus = [sim.replace(sim.h100(i), persistence=True) for i in range(8)]
    machine = simulate(sim.Scenario(gpus, driver=driver, cuda=cuda, nvml_version=f"13.{driver}"))
    d = doctor(machine)
    no_fail(d)
    assert len(d.snapshot["nvml"]["gpus"]) == 8
    assert d.status("cuda.driver-api") == "pass"


def rtx_4090() -> sim.Gpu:
    """The RTX 4080 SUPER preset (an Ada consumer card, telegraf/nvidia_gpu_exporter capture)
    with the 4090's name, PCI device id (0x2684) and 24 GiB."""
    return sim.replace(
        sim.rtx_4080_super(),
        name="NVIDIA GeForce RTX 4090",
        pci_device_id=0x268410DE,
        memory_total=24564 * MIB,
        power_limit_mw=450_000,
    )


def test_a_workstation_with_an_rtx_4090_and_pip_torch_is_ready(
    simulate: Any, tmp_path: Path
) -> None:
    machine = simulate(sim.Scenario([rtx_4090()]))
    python = torch_venv(tmp_path / "venv")
    d = doctor(machine, "--python", str(python))
    no_fail(d)
    (env,) = d.snapshot["environments"]
    assert env["torch"]["version"] == "2.5.1+cu124" and env["torch"]["cuda"] == "12.4"
    assert d.status("frameworks.torch.cpu-build") == "pass"
    assert d.status("frameworks.torch.cuda-driver") == "pass"


def tesla_t4() -> sim.Gpu:
    """telegraf/tesla-t4.xml: Tesla T4 (Turing 7.5, 15360 MiB), a cloud pass-through at PCIe
    gen 3 x8 of x16, ECC on, persistence off."""
    return sim.replace(
        sim.h100(0),
        name="Tesla T4",
        uuid="GPU-d37e67a5-91dd-3774-a5cb-99096249601a",
        pci_bus_id="00000000:00:04.0",
        pci_device_id=0x1EB810DE,
        pci_subsystem_id=0x12A210DE,
        memory_total=15360 * MIB,
        memory_used=3 * MIB,
        compute_capability=(7, 5),
        architecture=nv.NVML_DEVICE_ARCH_TURING,
        power_limit_mw=70_000,
        pcie=(3, 3, 8, 16),
        temperature_thresholds=(93, 98),
        persistence=False,
    )


def colab_venv(where: Path) -> Path:
    """torch 2.5.1 (CUDA 12.4) and jax/jaxlib with the jax[cuda12] plugin pair, in one
    environment as a Colab image preinstalls them. TensorFlow is left out: Colab's TF loads the
    image's system cuDNN 8, which the simulated root does not provide (a TF 2.15 beside torch's
    cuDNN 9 wheel alone rightly fails frameworks.tensorflow.cuda-libraries)."""
    venv = wheels.make_venv(where)
    wheels.install_torch_2_5_1_stack(venv.site)
    for name, top in (("jax", "jax"), ("jaxlib", "jaxlib")):
        wheels.install(
            venv.site,
            wheels.simple_metadata(name, "0.4.35"),
            {f"{top}/__init__.py": wheels.TRIPWIRE},
            top_level=f"{top}\n",
        )
    plugin = wheels.simple_metadata("jax-cuda12-plugin", "0.4.35", "jax-cuda12-pjrt==0.4.35")
    wheels.install(
        venv.site,
        plugin.replace("jax-cuda12-plugin", "jax_cuda12_plugin", 1),
        {"jax_cuda12_plugin/__init__.py": wheels.TRIPWIRE},
        top_level="jax_cuda12_plugin\n",
    )
    wheels.install(
        venv.site,
        wheels.simple_metadata("jax-cuda12-pjrt", "0.4.35"),
        {"jax_plugins/xla_cuda12/__init__.py": wheels.TRIPWIRE},
        top_level="jax_plugins\n",
    )
    return venv.python


def test_a_colab_like_t4_container_with_torch_and_jax_is_ready(
    simulate: Any, tmp_path: Path
) -> None:
    # Driver 550.54.15 (CUDA 12.4): an R550 data-centre driver, new enough for every CUDA 12
    # build here (torch's 12.4, jax[cuda12]).
    machine = simulate(
        sim.Scenario([tesla_t4()], driver="550.54.15", cuda=12040, nvml_version="12.550.54.15")
    )
    (machine.root / ".dockerenv").write_text("")
    python = colab_venv(tmp_path / "venv")
    d = doctor(machine, "--python", str(python))
    no_fail(d)
    assert d.snapshot["system"]["container"] == "docker"
    (env,) = d.snapshot["environments"]
    assert env["torch"]["cuda"] == "12.4"
    assert {"jax-cuda12-plugin", "jaxlib"} <= {x["name"] for x in env["distributions"]}
