"""A deep probe's failed import or smoke test whose error the doctor's own causes do not name
is decoded with the message catalog `gpucheck explain` reads (compat/messages.toml, through the
one shared matcher): its title, its fix and what it means; "run it by hand" only where the
catalog knows nothing of the error."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.finding import Status

# Quoted from https://github.com/pytorch/pytorch/issues/131312.
NVJITLINK = (
    "ImportError: /home/dp/anaconda3/envs/ComfyUI/lib/python3.11/site-packages/torch/lib/../../"
    "nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, "
    "version libnvJitLink.so.12"
)
# Quoted from https://github.com/OpenNMT/CTranslate2/issues/1826.
CUDNN_CNN = (
    "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, "
    "libcudnn_cnn.so}\nInvalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor"
)
# Quoted from https://github.com/sanchit-gandhi/whisper-jax/issues/211.
JAX_CPU = (
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. "
    "Falling back to cpu."
)


def test_an_older_nvjitlink_on_the_loader_path_is_named_not_reinstalled() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 0, status="import_error", version="2.5.1+cu124", error=NVJITLINK)
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert f.title == (
        "import torch fails: An older libnvJitLink on the loader path shadows the one torch's "
        "cuSPARSE needs"
    )
    assert f.fix is not None and "LD_LIBRARY_PATH" in f.fix.text
    assert "pytorch/pytorch/issues/111469" in f.fix.text  # the catalog's source, cited
    assert "--force-reinstall" not in f.fix.text


def test_a_cudnn_sub_library_failing_in_the_smoke_test_gets_the_catalog_s_fix() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, version="2.5.1+cu124", failures={0: CUDNN_CNN})
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert f.title == (
        "torch 2.5.1+cu124 on cuda:0: A cuDNN sub-library (libcudnn_ops, libcudnn_cnn ...) "
        "cannot be loaded"
    )
    assert f.fix is not None and f.fix.commands[0].startswith("export LD_LIBRARY_PATH=")
    assert "Run it by hand" not in f.fix.text


def test_jax_without_its_cuda_plugin_gets_the_plugin_to_install() -> None:
    env = fb.with_jax(fb.environment())
    fb.imported(env, "jax", 1, version="0.4.30", backend="cpu", warnings=[JAX_CPU])
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL
    assert "JAX has no CUDA plugin installed" in f.title
    assert f.fix is not None and f.fix.commands[0] == "pip install -U 'jax[cuda12]'"


def test_an_error_the_catalog_does_not_know_still_says_run_it_by_hand() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, version="2.5.1+cu124", failures={0: "RuntimeError: frobnicated"})
    f = the(fb.on(builders.h100_node(1), env, deep=True), "frameworks.smoke-test")
    assert f.status is Status.FAIL and f.title.endswith("the smoke test failed on cuda:0")
    assert f.fix is not None and "Run it by hand" in f.fix.text


# Quoted from https://github.com/facebookresearch/nougat/issues/115 (compat/messages.toml).
LIBCUDA = (
    "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared "
    "object file: No such file or directory"
)


def test_a_libcuda_failure_off_wsl2_gets_no_wsl_library_folder() -> None:
    env = fb.torch_cu124()
    fb.imported(env, "torch", 1, version="2.5.1+cu124", failures={0: LIBCUDA})
    snap = fb.on(builders.h100_node(1), env, deep=True)
    assert snap.system.wsl is False
    f = the(snap, "frameworks.smoke-test")
    assert f.fix is not None and f.fix.commands == []
    assert "this machine is not WSL2" in f.fix.text
    snap.system.wsl = True
    f = the(snap, "frameworks.smoke-test")
    assert f.fix is not None
    assert f.fix.commands == ["export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"]
