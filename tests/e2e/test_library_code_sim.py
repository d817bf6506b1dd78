"""The installed kernel library's own code, end to end in the simulator: the real `gpucheck
doctor --json` on a simulated A100 (compute capability 8.0) probes a real virtual environment
holding torch 2.5.1 and a vLLM whose _C.abi3.so is a small ELF64 library with a .nv_fatbin
section (support.fatbin_files), installed as pip installs a wheel (RECORD and all). The
snapshot carries what that library holds, and the extensions check judges from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pynvml as nv
import sim.scenario as sim
from support import fatbin_files as ff
from support import static_probe as wheels
from support.sim_doctor import doctor


def a100() -> sim.Gpu:
    """The H100 preset with an A100's name, PCI device id (0x20B2: A100-SXM4-80GB) and
    compute capability 8.0."""
    return sim.replace(
        sim.h100(0),
        name="NVIDIA A100-SXM4-80GB",
        pci_device_id=0x20B210DE,
        architecture=nv.NVML_DEVICE_ARCH_AMPERE,
        compute_capability=(8, 0),
    )


def vllm_venv(where: Path, c_library: bytes) -> Path:
    """torch 2.5.1 (CUDA 12.4) and vLLM 0.6.4 (built against it), whose deciding library is
    `c_library`; beside it a Hopper-only optional kernel that must not decide."""
    venv = wheels.make_venv(where)
    wheels.install_torch_2_5_1_stack(venv.site)
    wheels.install(
        venv.site,
        wheels.simple_metadata("vllm", "0.6.4", "torch==2.5.1"),
        {
            "vllm/__init__.py": wheels.TRIPWIRE,
            "vllm/_C.abi3.so": c_library,
            "vllm/_flashmla_C.abi3.so": ff.library(["9.0a"]),
        },
        top_level="vllm\n",
    )
    return venv.python


def test_a_vllm_built_without_the_gpus_code_fails_from_the_installed_library(
    simulate: Any, tmp_path: Path
) -> None:
    machine = simulate(sim.Scenario([a100()]))
    python = vllm_venv(tmp_path / "venv", ff.library(["9.0", "9.0a"]))
    d = doctor(machine, "--python", str(python))
    (env,) = d.snapshot["environments"]
    (lib,) = env["compiled"]
    assert (lib["package"], lib["version"], lib["path"]) == ("vllm", "0.6.4", "vllm/_C.abi3.so")
    assert lib["code"] == {"sass": ["9.0", "9.0a"], "ptx": []}
    f = d.finding("frameworks.torch.extensions")
    assert f["status"] == "fail"
    assert f["title"].startswith(
        "vllm 0.6.4 has no kernels for compute capability 8.0: its vllm/_C.abi3.so carries "
        "SASS for 9.0, 9.0a and no PTX"
    )
    # Both installs go to the venv's own interpreter: the wheel, then the torch it needs.
    pip = f"{tmp_path}/venv/bin/python -m pip install"
    assert (
        f"`{pip} --force-reinstall --no-deps --only-binary vllm vllm==0.6.4 && {pip} vllm==0.6.4`"
    ) in d.text("frameworks.torch.extensions")


def test_a_vllm_whose_ptx_covers_the_gpu_passes_with_a_note(simulate: Any, tmp_path: Path) -> None:
    machine = simulate(sim.Scenario([a100()]))
    python = vllm_venv(tmp_path / "venv", ff.library(["7.0", "7.5"], ["7.5"]))
    d = doctor(machine, "--python", str(python))
    f = d.finding("frameworks.torch.extensions")
    assert f["status"] == "pass", f["title"]
    assert any("from its PTX for 7.5 only" in line for line in f["evidence"])
