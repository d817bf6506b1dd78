"""The layers above the frameworks: extensions built against torch, NumPy's ABI, NVML bindings,
TensorRT and XLA. Versions and pins are real ones (each named beside its use); verdicts are
asserted against the compat data (compat/extensions.toml, compat/tensorrt.toml)."""

from __future__ import annotations

import msgspec
from support import builders, more_builders
from support import framework_builders as fb
from support.evaluate import finding, the

from gpucheck.model.environments import ExtensionBuild, ExtensionImport, PythonEnvironment
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import GpuFacts, LibraryCopy, Snapshot, ToolVersion

H100_DRIVER = "590.48.01"


def torch_251(env: PythonEnvironment | None = None) -> PythonEnvironment:
    return fb.torch_cu124(env)


def v100(index: int = 0) -> GpuFacts:
    """A Tesla V100 (Volta, compute capability 7.0), on the H100's other facts."""
    gpu = builders.h100(index)
    return msgspec.structs.replace(
        gpu,
        name="Tesla V100-SXM2-16GB",
        compute_capability="7.0",
        architecture="Volta",
        memory_total=16 * 1024**3,
    )


def machine(gpu: GpuFacts, driver: str = H100_DRIVER, cuda: int = 13010) -> Snapshot:
    return builders.node([gpu], driver=driver, cuda=cuda)


# --- frameworks.torch.extensions --------------------------------------------------------------------------


def test_torchvision_pinned_to_another_torch_fails_with_the_one_built_for_this_torch() -> None:
    # torchvision 0.19.1+cu124 (for torch 2.4.1) beside torch 2.5.1+cu124.
    env = torch_251()
    fb.add(env, "torchvision", "0.19.1+cu124", ["numpy", "torch==2.4.1", "pillow!=8.3.*,>=5.3.0"])
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert f.title.startswith("torchvision 0.19.1+cu124 is built for another torch")
    assert "torchvision 0.19.1+cu124: Requires-Dist: torch==2.4.1" in f.evidence
    # extensions.toml [[pairing]] torchvision, torch = "2.5": versions = ["0.20"]
    assert f.fix is not None
    assert (
        "pip install torch==2.5.1 'torchvision==0.20.*' "
        "--index-url https://download.pytorch.org/whl/cu124" in f.fix.text
    )


def test_torchvision_for_this_torch_passes() -> None:
    env = torch_251()
    fb.add(env, "torchvision", "0.20.1+cu124", ["numpy", "torch==2.5.1"])
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.PASS
    assert f.title == "torchvision 0.20.1+cu124 matches torch 2.5.1+cu124"


def test_torchaudio_without_a_pin_is_judged_by_the_pairing_table() -> None:
    # A conda torchaudio (no Requires-Dist) 2.5.0 beside torch 2.4.1.
    env = fb.with_torch(fb.environment(), "2.4.1+cu124", "12.4")
    fb.add(env, "torchaudio", "2.5.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "torchaudio 2.5.0 goes with torch 2.5, not torch 2.4.1+cu124" in f.title
    assert any("docs.pytorch.org/audio/2.11.0" in e for e in f.evidence)
    assert f.fix is not None and "torch==2.4.1 torchaudio==2.4.1 " in f.fix.text


def test_torchaudio_2_11_runs_with_every_later_torch() -> None:
    env = fb.with_torch(fb.environment(), "2.13.0+cu130", "13.0")
    fb.add(env, "torchaudio", "2.11.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.PASS


def test_xformers_built_against_another_torch_fails() -> None:
    # xformers/cpp_lib.json of a wheel built for torch 2.4.0+cu121.
    env = torch_251()
    fb.add(env, "xformers", "0.0.27.post2")
    env.extensions.append(
        ExtensionBuild(
            "xformers", "0.0.27.post2", cuda="12.1", torch="2.4.0+cu121", source="cpp_lib.json"
        )
    )
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "built against torch 2.4.0+cu121; torch 2.5.1+cu124 is installed" in f.title


def test_flash_attn_wheel_for_another_torch_is_rebuilt_against_this_one() -> None:
    # The GitHub wheel flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE, as direct_url.json names it.
    env = torch_251()
    fb.add(env, "flash-attn", "2.6.3")
    env.extensions.append(
        ExtensionBuild("flash-attn", "2.6.3", "12.3", "2.4", False, "https://github.com/...whl")
    )
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert f.fix is not None
    assert "pip uninstall -y flash-attn && pip install --no-build-isolation flash-attn" in (
        f.fix.text
    )


def test_flash_attn_2_on_turing_names_the_1_x_line_and_sdpa() -> None:
    # flash-attn v2.0.0's setup.py comments sm_75 out (every 2.x tag builds sm_80 and up);
    # v0.2.1 to v1.0.9 build sm_75.
    env = torch_251()
    fb.add(env, "flash-attn", "2.6.3")
    f = the(fb.on(more_builders.t4_vm(), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "flash-attn 2.6.3 has no kernels for compute capability 7.5" in f.title
    assert "flash-attn releases before 2.0.0 have it" in f.title
    assert f.fix is not None and "pip install --no-build-isolation 'flash-attn<2.0.0'" in f.fix.text
    assert "scaled_dot_product_attention" in f.fix.text


def test_flash_attn_before_2_7_3_on_blackwell_names_the_first_wheels_with_sm_120() -> None:
    # flash-attn v2.7.3 adds sm_100 and sm_120 for CUDA 12.8 builds; its wheels (CUDA 12.3.2)
    # and 2.7.4's (12.4.1) lack them; 2.8.0's are built with CUDA 12.9.0 (publish.yml).
    env = torch_251()
    fb.add(env, "flash-attn", "2.6.3")
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "flash-attn 2.8.0 is the first release with it" in f.title
    assert f.fix is not None and "pip install --no-build-isolation 'flash-attn>=2.8.0'" in (
        f.fix.text
    )


def test_a_flash_attn_2_7_4_wheel_named_cu12_is_judged_by_its_wheels_cuda() -> None:
    # flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE: the name gives the CUDA major only; the
    # release's wheels were built with CUDA 12.4.1, without sm_120.
    env = torch_251()
    fb.add(env, "flash-attn", "2.7.4.post1")
    env.extensions.append(ExtensionBuild("flash-attn", "2.7.4.post1", "12", "2.5", False, "w"))
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "(built for CUDA 12.4.1) has no kernels for compute capability 12.0" in f.title
    # The same release with no build facts (built from source, nvcc unknown) is not failed.
    env.extensions.clear()
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.extensions")
    assert "no kernels" not in f.title


def test_flash_attn_2_7_3_built_with_cuda_12_4_has_no_sm_120() -> None:
    # sm_120 is built only when the build's CUDA is 12.8 or newer (setup.py at v2.7.3).
    env = torch_251()
    fb.add(env, "flash-attn", "2.7.4")
    env.extensions.append(ExtensionBuild("flash-attn", "2.7.4", "12.4", "2.5", False, "wheel"))
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "(built for CUDA 12.4) has no kernels for compute capability 12.0" in f.title


def test_flash_attn_on_an_rtx_3060_runs_the_sm_80_code() -> None:
    # An RTX 3060 (8.6) runs sm_80 SASS: same major, higher minor.
    env = torch_251()
    fb.add(env, "flash-attn", "2.6.3", ["torch"])
    f = the(fb.on(builders.workstation(), env), "frameworks.torch.extensions")
    assert f.status is not Status.FAIL and "no kernels" not in f.title


def test_torchvision_for_another_cuda_major_fails() -> None:
    env = torch_251()
    fb.add(env, "torchvision", "0.20.1+cu118", ["torch==2.5.1"])
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "built for CUDA 11.8, torch 2.5.1+cu124 for CUDA 12.4" in f.title


def test_triton_other_than_torch_pins_fails() -> None:
    env = fb.with_torch(fb.environment(), pins=(*fb.TORCH_251_CU124_PINS, "triton==3.1.0"))
    fb.add(env, "triton", "3.0.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert f.fix is not None and "pip install 'triton==3.1.0'" in f.fix.text


def test_deep_import_undefined_symbol_names_the_build_for_this_torch() -> None:
    env = torch_251()
    fb.add(env, "vllm", "0.6.3", ["torch==2.5.1"])
    env.extension_imports.append(
        ExtensionImport(
            "vllm",
            "vllm._C",
            "import_error",
            "ImportError: vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
        )
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "built against another torch (or C++ ABI)" in f.title
    assert f.fix is not None and "torch==2.5.1 vllm" in f.fix.text


def test_torch_tensorrt_pinned_to_another_tensorrt_fails() -> None:
    # A pin of the shape torch-tensorrt wheels carry on the TensorRT wheels.
    env = torch_251()
    fb.add(env, "torch-tensorrt", "2.5.0", ["torch<2.6.0,>=2.5.0", "tensorrt-cu12<10.4.0,>=10.3.0"])
    fb.add(env, "tensorrt-cu12", "10.8.0.43")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.torch.extensions")
    assert f.status is Status.FAIL
    assert "built against another TensorRT" in f.title
    assert f.fix is not None and f.fix.commands == ["pip install 'tensorrt-cu12<10.4.0,>=10.3.0'"]


def test_no_extension_no_finding() -> None:
    assert finding(fb.on(builders.h100_node(1), torch_251()), "frameworks.torch.extensions") is None


# --- frameworks.numpy-abi ----------------------------------------------------------------------


def test_torch_before_the_first_numpy2_build_fails_under_numpy2() -> None:
    env = fb.with_torch(fb.environment(), "2.2.2+cu121", "12.1")
    fb.add(env, "numpy", "2.1.3")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.numpy-abi")
    # extensions.toml [[numpy_abi]] package = "torch": numpy2_from = "2.3.0"
    assert f.status is Status.FAIL
    assert f.fix is not None
    assert "pip install 'numpy<2'" in f.fix.text and "'torch>=2.3.0'" in f.fix.text


def test_the_windows_torch_2_4_0_wheel_is_a_numpy1_build() -> None:
    env = fb.with_torch(fb.environment(platform="win32"), "2.4.0+cu121", "12.1")
    fb.add(env, "numpy", "2.1.0")
    f = the(fb.on(fb.windows_workstation(), env), "frameworks.numpy-abi")
    assert f.status is Status.FAIL
    assert f.fix is not None and "'torch>=2.4.1'" in f.fix.text
    # The same release on Linux is a NumPy 2 build.
    linux = fb.with_torch(fb.environment(), "2.4.0+cu121", "12.1")
    fb.add(linux, "numpy", "2.1.0")
    assert the(fb.on(builders.h100_node(1), linux), "frameworks.numpy-abi").status is Status.PASS


def test_tensorflow_2_17_under_numpy2_fails_and_numpy1_passes() -> None:
    env = fb.with_tensorflow(fb.environment(), "2.17.0")
    fb.add(env, "numpy", "2.0.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.numpy-abi")
    assert f.status is Status.FAIL and "'tensorflow>=2.18.0'" in (f.fix.text if f.fix else "")
    fb.add(env, "numpy", "1.26.4")
    assert the(fb.on(builders.h100_node(1), env), "frameworks.numpy-abi").status is Status.PASS


# --- frameworks.nvml-bindings -----------------------------------------------------------------


def test_pynvml_copy_beside_nvidia_ml_py_warns() -> None:
    env = fb.environment()
    fb.add(env, "nvidia-ml-py", "13.590.44")
    fb.add(env, "pynvml", "11.4.1")  # ships its own pynvml.py (no Requires-Dist on nvidia-ml-py)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvml-bindings")
    assert f.status is Status.WARN
    assert f.fix is not None
    assert f.fix.commands == [
        "pip uninstall -y pynvml && pip install --force-reinstall nvidia-ml-py"
    ]


def test_pynvml_as_a_wrapper_of_nvidia_ml_py_and_a_current_binding_pass() -> None:
    env = fb.environment()
    fb.add(env, "nvidia-ml-py", "13.590.44")
    fb.add(env, "pynvml", "12.0.0", ["nvidia-ml-py<13.0.0a0,>=12.0.0"])
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvml-bindings")
    assert f.status is Status.PASS


def test_a_binding_of_an_older_cuda_major_than_the_driver_warns() -> None:
    env = fb.environment()
    fb.add(env, "nvidia-ml-py", "11.450.51")  # nvitop-4's binding, on driver 590 (CUDA 13.1)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvml-bindings")
    assert f.status is Status.WARN
    assert "made for driver branch R450; the driver is 590.48.01" in f.title
    assert f.fix is not None and f.fix.commands == ["pip install -U nvidia-ml-py"]


def test_a_binding_of_an_older_branch_of_the_same_major_is_info() -> None:
    env = fb.environment()
    fb.add(env, "nvidia-ml-py", "13.580.82")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.nvml-bindings")
    assert f.status is Status.INFO
    assert "NVML functions newer than R580 are missing from it" in f.title


# --- frameworks.tensorrt.support, frameworks.tensorrt.libraries --------------------------------------------------------


def test_tensorrt_on_an_h100_passes() -> None:
    f = the(
        fb.on(builders.h100_node(1), fb.tensorrt(fb.environment(), "10.3.0")),
        "frameworks.tensorrt.support",
    )
    assert f.status is Status.PASS


def test_tensorrt_10_8_on_a_v100_fails_with_the_last_release_for_volta() -> None:
    env = fb.tensorrt(fb.environment(), "10.8.0")
    f = the(fb.on(machine(v100()), env), "frameworks.tensorrt.support")
    assert f.status is Status.FAIL
    assert "supports compute capability 7.5 to 12.0" in f.title
    # tensorrt.toml [[release]] 10.5.0: min_cc = "7.5" (Volta removed), the first without 7.0
    assert f.fix is not None and "pip install 'tensorrt-cu12<10.5.0'" in f.fix.text


def test_tensorrt_10_3_on_an_rtx_5090_fails_with_the_first_release_for_blackwell() -> None:
    env = fb.tensorrt(fb.environment(), "10.3.0")
    f = the(fb.on(machine(fb.rtx_5090()), env), "frameworks.tensorrt.support")
    assert f.status is Status.FAIL
    assert f.fix is not None and "pip install -U 'tensorrt-cu12>=10.8.0'" in f.fix.text


def test_tensorrt_cuda_12_build_on_a_cuda_11_driver_fails() -> None:
    snap = machine(builders.h100(0), driver="470.256.02", cuda=11040)
    f = the(fb.on(snap, fb.tensorrt(fb.environment(), "10.3.0")), "frameworks.tensorrt.support")
    assert f.status is Status.FAIL
    # cuda.toml [[toolkit]] 12.0.0: min_driver_linux = "525.60.13"
    assert f.fix is not None and "525.60.13" in f.fix.text


def test_tf_trt_is_gone_from_tensorflow_2_18() -> None:
    env = fb.tensorrt(fb.with_tensorflow(fb.environment(), "2.18.0"), "10.3.0")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorrt.support")
    assert f.status is Status.INFO
    assert f.title.startswith("TensorFlow 2.18.0 has no TF-TRT (disabled from 2.18.0)")
    assert "TensorRT 10.3.0 (CUDA 12.0) runs on driver 590.48.01" in f.evidence


def test_a_system_libnvinfer_for_newer_gpus_only_fails() -> None:
    snap = fb.on(fb.pascal_workstation())
    snap.cuda.tensorrt = [
        LibraryCopy(
            "nvinfer",
            "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10",
            "/usr/lib/x86_64-linux-gnu/libnvinfer.so.10.6.0",
            "ldconfig",
            True,
            version="10.6.0",
            version_source="filename",
        )
    ]
    f = the(snap, "frameworks.tensorrt.libraries")
    assert f.status is Status.FAIL
    assert "compute 6.1" in f.title
    # 10.1.0 is the first row with a floor above 6.1 (7.0); 10.0's floor was not read.
    assert f.fix is not None and "pip install 'tensorrt<10.1.0'" in f.fix.text


# --- frameworks.xla.compiler ------------------------------------------------------------------------------


def test_xla_flags_are_explained() -> None:
    snap = fb.on(builders.h100_node(1), fb.with_jax(fb.environment()))
    snap.system.env["XLA_FLAGS"] = "--xla_gpu_cuda_data_dir=/opt/cuda --xla_dump_to=/tmp/x"
    f = the(snap, "frameworks.xla.compiler")
    assert any(
        e == "XLA_FLAGS: --xla_gpu_cuda_data_dir=/opt/cuda: where XLA looks for ptxas, nvlink "
        "and libdevice (a CUDA home)"
        for e in f.evidence
    )


def test_ptxas_newer_than_the_driver_warns() -> None:
    # jax-ml/jax#25718: driver 550.54.15 (CUDA 12.4), ptxas 12.6.85 from nvidia-cuda-nvcc-cu12;
    # JAX ran, compiling serially: a warning, never a failure.
    snap = machine(builders.h100(0), driver="550.54.15", cuda=12040)
    env = fb.with_jax(fb.environment())
    fb.add(env, "nvidia-cuda-nvcc-cu12", "12.6.85")
    f = the(fb.on(snap, env), "frameworks.xla.compiler")
    assert f.status is Status.WARN and "serial compilation" in f.title
    # cuda.toml [[toolkit]] 12.6.0: min_driver_linux = "560.28.03"
    assert f.fix is not None and "560.28.03" in f.fix.text
    assert "pip install 'nvidia-cuda-nvcc-cu12<12.5'" in f.fix.text


def test_ptxas_newer_than_the_driver_fails_on_a_jaxlib_without_the_fallback() -> None:
    # jax-ml/jax#11967: jaxlib 0.3.15, ptxas 11.6 (CUDA 11.6.2) on driver 470 (CUDA 11.4): 'no
    # kernel image is available'. compat/jax.toml: releases before 0.4.24 do not fall back.
    snap = machine(builders.h100(0), driver="470.141.03", cuda=11040)
    snap.cuda.ptxas = [
        ToolVersion("ptxas", "/usr/local/cuda-11.6/bin/ptxas", "cuda_home", "11.6.124")
    ]
    env = fb.with_jax(fb.environment(), "0.3.15", plugin=None)
    f = the(fb.on(snap, env), "frameworks.xla.compiler")
    assert f.status is Status.FAIL
    assert "jaxlib 0.3.15 does not fall back" in f.title and "no kernel image" in f.title
    assert any("jax-ml/jax/issues/11967" in e for e in f.evidence)


def test_ptxas_newer_than_the_driver_under_a_jaxlib_the_sources_leave_open_warns() -> None:
    # No report read shows jaxlib 0.3.16 to 0.4.23 either way (compat/jax.toml): said so.
    snap = machine(builders.h100(0), driver="535.154.05", cuda=12020)
    env = fb.with_jax(fb.environment(), "0.4.20")
    fb.add(env, "nvidia-cuda-nvcc-cu12", "12.3.107")
    f = the(fb.on(snap, env), "frameworks.xla.compiler")
    assert f.status is Status.WARN
    assert "is not known for this release" in f.title and "jaxlib 0.4.20" in f.title


def test_ptxas_newer_than_the_driver_warns_from_the_jaxlib_that_falls_back() -> None:
    # jax-ml/jax#19821: jaxlib 0.4.24, driver 535.154.05 (CUDA 12.2), ptxas 12.3.107: XLA
    # disables parallel compilation and runs.
    snap = machine(builders.h100(0), driver="535.154.05", cuda=12020)
    env = fb.with_jax(fb.environment(), "0.4.24")
    fb.add(env, "nvidia-cuda-nvcc-cu12", "12.3.107")
    f = the(fb.on(snap, env), "frameworks.xla.compiler")
    assert f.status is Status.WARN and "serial compilation" in f.title
    assert any("jax-ml/jax/issues/19821" in e for e in f.evidence)


def test_ptxas_the_driver_supports_passes() -> None:
    snap = fb.on(builders.h100_node(1), fb.with_jax(fb.environment()))
    snap.cuda.ptxas = [ToolVersion("ptxas", "/usr/local/cuda/bin/ptxas", "cuda_home", "12.4.131")]
    assert the(snap, "frameworks.xla.compiler").status is Status.PASS


def test_xla_seeing_fewer_gpus_than_cuda_fails() -> None:
    env = fb.with_jax(fb.environment())
    fb.imported(env, "jax", 2, version="0.4.35", xla_devices=["cuda(id=0)"])
    f = the(fb.on(builders.h100_node(2), env, deep=True), "frameworks.xla.compiler")
    assert f.status is Status.FAIL
    assert "XLA sees 1 GPU(s) while CUDA shows 2" in f.title
