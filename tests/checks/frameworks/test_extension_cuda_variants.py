"""Extensions built for the torch installed but another CUDA variant of it (a torchvision
+cu118 beside a torch built for CUDA 11.7): frameworks.torch.extensions judges them by what each
package's own import check refuses (compat/extensions.toml [[cuda_check]], read from the
released wheels) and by the CUDA runtime's minor-version rule. Versions are real releases."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.environments import ExtensionBuild, ExtensionImport, PythonEnvironment
from gpucheck.model.finding import Finding, Status

CHECK = "frameworks.torch.extensions"


def _torch(version: str, cuda: str) -> PythonEnvironment:
    return fb.with_torch(fb.environment(), version, cuda)


def _with(env: PythonEnvironment, name: str, version: str, cuda: str, pin: str) -> None:
    """`name` installed as pip does, and the CUDA its version.py / cpp_lib.json names."""
    fb.add(env, name, version.split("+")[0] if name == "torchaudio" else version, [pin])
    source = f"{env.site_packages[0]}/{name}/version.py"
    env.extensions.append(ExtensionBuild(name, version, cuda, None, None, source))


def _judge(env: PythonEnvironment) -> Finding:
    return the(fb.on(builders.h100_node(1), env), CHECK)


def test_torchvision_before_0_16_for_another_cuda_minor_fails_with_the_variant_to_install() -> None:
    # torch 2.0.1 from PyPI is built for CUDA 11.7; torchvision 0.15.2+cu118 from the cu118
    # index beside it: "PyTorch has CUDA Version=11.7 and torchvision has CUDA Version=11.8"
    # (m-bain/whisperX#320), refused by torchvision 0.15's _check_cuda_version.
    env = _torch("2.0.1", "11.7")
    _with(env, "torchvision", "0.15.2+cu118", "11.8", "torch==2.0.1")
    f = _judge(env)
    assert f.status is Status.FAIL
    assert "its import refuses a torch of another CUDA minor" in f.title
    assert any("torchvision/0.15.2/" in e for e in f.evidence)
    assert f.fix is not None
    assert f.fix.commands == [
        "pip install --force-reinstall --no-deps torchvision==0.15.2+cu117 "
        "--index-url https://download.pytorch.org/whl/cu117"
    ]


def test_torchaudio_before_2_11_1_for_another_cuda_minor_fails() -> None:
    # mli/autocut#106: torchaudio 2.0.2 (built for CUDA 11.7) beside a torch for CUDA 11.8.
    env = _torch("2.0.1+cu118", "11.8")
    _with(env, "torchaudio", "2.0.2+cu117", "11.7", "torch==2.0.1")
    f = _judge(env)
    assert f.status is Status.FAIL
    assert "torchaudio 2.0.2 is built for CUDA 11.7, torch 2.0.1+cu118 for CUDA 11.8" in f.title
    assert f.fix is not None
    assert f.fix.commands == [
        "pip install --force-reinstall --no-deps torchaudio==2.0.2+cu118 "
        "--index-url https://download.pytorch.org/whl/cu118"
    ]


def test_torchvision_from_0_16_for_an_older_cuda_minor_passes() -> None:
    # pytorch/vision#7726: from 0.16 only the major is compared; 0.20.1+cu121 beside cu124.
    env = fb.torch_cu124()
    _with(env, "torchvision", "0.20.1+cu121", "12.1", "torch==2.5.1")
    f = _judge(env)
    assert f.status is Status.PASS
    assert f.title == "torchvision 0.20.1+cu121 matches torch 2.5.1+cu124"
    assert f.evidence == ["requires torch==2.5.1"]


def test_an_older_cuda_minor_alone_does_not_say_which_torch_it_was_built_for() -> None:
    # facebookresearch/xformers#1096: 0.0.27.post2+cu121 beside torch 2.4.1+cu124. The CUDA
    # tag says it runs, not which torch it was built for: no pin, no build facts, so unknown.
    env = _torch("2.4.1+cu124", "12.4")
    fb.add(env, "xformers", "0.0.27.post2+cu121", [])
    f = _judge(env)
    assert f.status is Status.INFO
    assert f.title == ("xformers 0.0.27.post2+cu121: which torch it was built for is not recorded")


def test_torchaudio_from_2_11_1_for_an_older_cuda_minor_passes() -> None:
    # pytorch/audio#4226, released in 2.11.1: only the major is compared.
    env = _torch("2.11.0+cu128", "12.8")
    _with(env, "torchaudio", "2.11.1+cu126", "12.6", "torch>=2.11")
    assert _judge(env).status is Status.PASS


def test_an_extension_built_for_a_newer_cuda_minor_than_torch_warns() -> None:
    # NVIDIA/cutlass#2079: xformers built with CUDA 12.6 beside a CUDA 12.4 runtime:
    # "undefined symbol: cudaGetDriverEntryPointByVersion, version libcudart.so.12".
    env = _torch("2.6.0+cu124", "12.4")
    fb.add(env, "xformers", "0.0.29.post3", ["torch==2.6.0"])
    env.extensions.append(
        ExtensionBuild("xformers", "0.0.29.post3", "12.6", "2.6.0+cu126", None, "cpp_lib.json")
    )
    f = _judge(env)
    assert f.status is Status.WARN
    assert "newer than torch 2.6.0+cu124's CUDA 12.4" in f.title
    assert "version libcudart.so.12" in f.title
    assert f.fix is not None and "xformers" in f.fix.text


def test_the_same_variant_and_a_major_only_wheel_are_not_judged_by_minor() -> None:
    env = fb.torch_cu124()
    _with(env, "torchvision", "0.20.1+cu124", "12.4", "torch==2.5.1")
    assert _judge(env).title == "torchvision 0.20.1+cu124 matches torch 2.5.1+cu124"
    # flash-attn 2.7.x wheels name the major alone (+cu12torch2.5): built for any 12.x.
    env = fb.torch_cu124()
    fb.add(env, "flash-attn", "2.7.0.post2", ["torch"])
    env.extensions.append(ExtensionBuild("flash-attn", "2.7.0.post2", "12", "2.5", False, "w"))
    f = _judge(env)
    assert f.status is Status.PASS and "built for CUDA" not in f.title


def test_an_import_missing_a_cuda_runtime_symbol_names_the_newer_cuda_not_a_torch_abi() -> None:
    # deepseek-ai/DeepGEMM#137: built with CUDA 12.8, loaded beside torch's CUDA 12.6 runtime.
    env = _torch("2.7.1+cu126", "12.6")
    fb.add(env, "xformers", "0.0.31", ["torch==2.7.1"])
    env.extension_imports.append(
        ExtensionImport(
            "xformers",
            "xformers.ops",
            "import_error",
            "ImportError: xformers/_C.so: undefined symbol: cudaLibraryGetKernel, version "
            "libcudart.so.12",
        )
    )
    f = the(fb.on(builders.h100_node(1), env, deep=True), CHECK)
    assert f.status is Status.FAIL
    assert f.title == (
        "import xformers.ops fails: it was built with a newer CUDA than the runtime torch "
        "2.7.1+cu126 loads (CUDA 12.6 lacks cudaLibraryGetKernel)"
    )
    assert "another torch (or C++ ABI)" not in f.title
