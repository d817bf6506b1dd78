"""A smoke test failing with CUDA_ERROR_INVALID_PTX decoded into its cause:
the build has no SASS for this GPU and its PTX does not JIT-compile here; the fix is a build
with code for it, not the driver. tensorflow/tensorflow#99592: TF 2.20 on an RTX 5000 series
GPU (compute capability 12.0), CUDA 12.9 driver: "'cuModuleLoadData(&module, data)' failed
with 'CUDA_ERROR_INVALID_PTX'", working only in NVIDIA's NGC container."""

from __future__ import annotations

from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.finding import Status

INVALID_PTX = (
    "tensorflow/compiler/mlir/tools/kernel_gen/tf_gpu_runtime_wrappers.cc:40] "
    "'cuModuleLoadData(&module, data)' failed with 'CUDA_ERROR_INVALID_PTX'"
)
# The wheels' compute capabilities since 2.17 (framework_builders.TF_217_ARCHS): no sm_120,
# PTX for compute_90 only, which 2.20 still ships (tensorflow#99592).
TF_220_ARCHS = fb.TF_217_ARCHS


def test_invalid_ptx_on_a_gpu_without_sass_names_the_missing_code_and_the_ngc_build() -> None:
    env = fb.with_tensorflow(fb.environment(), "2.20.0", cuda="12.5", cudnn="9", archs=TF_220_ARCHS)
    fb.imported(env, "tensorflow", 1, failures={0: INVALID_PTX})
    snap = fb.on(fb.blackwell_workstation(), env, deep=True)
    f = the(snap, "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert "no SASS" in f.title and "compute capability 12.0" in f.title
    assert "CUDA_ERROR_INVALID_PTX" in f.title
    assert f.fix is not None
    assert "nvcr.io/nvidia/tensorflow" in f.fix.text
    assert "driver" not in f.fix.text.lower().split("tensorflow container")[0]
