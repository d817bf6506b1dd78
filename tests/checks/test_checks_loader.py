"""Libraries the framework loads that are not the ones it needs: a release whose loader misses
its own wheels, and CUDA libraries of other copies that win the loader race. Each test is one
real thread's situation."""

from __future__ import annotations

from support import builders
from support import framework_builders as fb
from support.evaluate import the

from gpucheck import compat
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import LibraryCopy

# --- frameworks.tensorflow.cuda-libraries: a release whose loader misses its wheels --------------------


def test_tensorflow_2_16_1_with_its_wheels_fails_until_ld_library_path_names_them() -> None:
    # tensorflow#63362 / #65842: pip install tensorflow[and-cuda]==2.16.1, GPU list empty.
    # tensorflow.toml [[and_cuda]] 2.16.1: loader_gap = true
    env = fb.with_tensorflow(fb.environment(), "2.16.1", and_cuda=True)
    snap = fb.on(builders.h100_node(1), env)
    f = the(snap, "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert "will not find its tensorflow[and-cuda] libraries" in f.title
    assert "LD_LIBRARY_PATH is unset" in f.evidence
    site = fb.site()
    assert f.fix is not None
    (command,) = f.fix.commands
    assert command.startswith("export LD_LIBRARY_PATH=")
    for folder in ("cudnn", "cublas", "cuda_runtime", "cusparse", "nvjitlink"):
        assert f"{site}/nvidia/{folder}/lib" in command
    assert "cuda_nvcc" not in command  # ptxas, not a library
    # Once they are named, it finds them.
    snap.system.env["LD_LIBRARY_PATH"] = command.split("=", 1)[1].split("$")[0].rstrip(":")
    assert the(snap, "frameworks.tensorflow.cuda-libraries").status is Status.PASS


def test_tensorflow_2_17_finds_its_wheels_by_itself() -> None:
    env = fb.with_tensorflow(fb.environment(), "2.17.0", and_cuda=True)
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.PASS


# --- frameworks.library-shadowing: every CUDA soname, the winner against what is needed -------

HPC = "/opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64"


def _nvjitlink(folder: str, version: str | None, origin: str = "ld_library_path") -> LibraryCopy:
    path = f"{folder}/libnvJitLink.so.12"
    return LibraryCopy("nvjitlink", path, path, origin, origin == "ld_library_path", None, version)


def test_an_older_nvjitlink_on_ld_library_path_than_the_wheel_fails_naming_the_folder() -> None:
    # jax#30050: the HPC SDK's CUDA 12.4 nvJitLink wins over the pip wheel cuSPARSE needs.
    env = fb.add(fb.with_jax(fb.environment(), "0.6.2"), "nvidia-nvjitlink-cu12", "12.9.86")
    snap = fb.on(builders.h100_node(1), env)
    snap.system.env["LD_LIBRARY_PATH"] = f"/usr/lib/x86_64-linux-gnu/openmpi/lib:{HPC}"
    wheel = _nvjitlink(f"{fb.site()}/nvidia/nvjitlink/lib", "12.9.86", origin="pip")
    snap.cuda.libraries = [_nvjitlink(HPC, "12.4.127"), wheel]
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.FAIL
    assert f.title.startswith(
        f"LD_LIBRARY_PATH makes the loader take libnvJitLink 12.4.127 from {HPC}"
    )
    assert f.fix is not None
    assert f.fix.commands == [
        "export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openmpi/lib",
        f"export LD_LIBRARY_PATH={fb.site()}/nvidia/nvjitlink/lib:$LD_LIBRARY_PATH",
    ]
    assert f.subjects.paths == [HPC]
    # The same soname at the wheel's version is no race.
    snap.cuda.libraries = [_nvjitlink(HPC, "12.9.86"), wheel]
    assert the(snap, "frameworks.library-shadowing").status is Status.PASS


def test_a_cudnn_older_than_torch_lib_s_bundled_copy_fails() -> None:
    # pytorch#80637: torch 1.12.0+cu113 bundles cuDNN 8.3.2; cuDNN 8.0.3 on LD_LIBRARY_PATH.
    env = fb.with_torch(fb.environment(), "1.12.0+cu113", "11.3")
    snap = fb.on(builders.workstation(), env)
    folder = "/public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64"
    snap.system.env["LD_LIBRARY_PATH"] = f"{folder}:/public/apps/cuda/11.0/lib64"
    bundled = builders.library("cudnn", f"{fb.site()}/torch/lib/libcudnn.so.8", "8.3.2")
    bundled.origin, bundled.on_loader_path, bundled.package = "pip", False, "torch 1.12.0+cu113"
    snap.cudnn.libraries = [fb.ld_library_path_copy("cudnn", folder, "8.0.3"), bundled]
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.FAIL
    assert (
        f"comes before {fb.site()}/torch/lib/libcudnn.so.8 (torch 1.12.0+cu113): older"
        in (f.evidence[0])
    )
    assert f.fix and f.fix.commands == ["export LD_LIBRARY_PATH=/public/apps/cuda/11.0/lib64"]


def test_a_cudnn_whose_version_only_its_library_states_fails_when_older() -> None:
    # A libcudnn.so.9 with no version in its name and no header beside it; the probe read
    # 9.0.0.312 from libcudnn_graph.so.9 beside it, older than the nvidia-cudnn-cu12 9.1.0.70
    # torch 2.5.1+cu124 requires.
    snap = fb.on(builders.h100_node(1), fb.torch_cu124())
    folder = "/opt/cudnn/lib"
    snap.system.env["LD_LIBRARY_PATH"] = folder
    copy = fb.ld_library_path_copy("cudnn", folder, "9")
    copy.version = None
    snap.cudnn.libraries = [copy]
    unknown = the(snap, "frameworks.library-shadowing")
    assert unknown.status is Status.WARN
    assert "(cudnn version unknown) comes before" in unknown.evidence[0]
    copy.version, copy.version_source = "9.0.0.312", "library"
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.FAIL
    assert f.title.startswith(
        f"LD_LIBRARY_PATH makes the loader take libcudnn 9.0.0.312 from {folder}, older than "
        "the 9.1.0.70"
    )
    assert "(cudnn 9.0.0.312, from the library's own files) comes before" in f.evidence[0]


def test_a_copy_of_unknown_version_fails_only_when_the_import_error_names_it() -> None:
    # pytorch#134929: /opt/conda/lib first; libcusparse.so.12: undefined symbol
    # __nvJitLinkComplete_12_4, version libnvJitLink.so.12.
    env = fb.torch_cu124()
    snap = fb.on(builders.h100_node(1), env, deep=True)
    snap.system.env["LD_LIBRARY_PATH"] = "/opt/conda/lib:"
    snap.cuda.libraries = [_nvjitlink("/opt/conda/lib", None)]
    assert the(snap, "frameworks.library-shadowing").status is Status.WARN
    fb.imported(
        env,
        "torch",
        0,
        status="import_error",
        error="ImportError: libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, "
        "version libnvJitLink.so.12",
    )
    f = the(snap, "frameworks.library-shadowing")
    assert f.status is Status.FAIL
    assert any(e.startswith("the import failed naming it: ImportError") for e in f.evidence)
    assert f.fix and f.fix.commands == ["unset LD_LIBRARY_PATH"]


# --- frameworks.jax.cuda-driver: XLA's pip ptxas against the driver -------------------------------------


def test_a_pip_ptxas_newer_than_the_driver_warns_xla_compiles_serially() -> None:
    # jax#25718: jax[cuda12]==0.4.31 on driver 550 (CUDA 12.4), nvidia-cuda-nvcc-cu12 12.6.85:
    # "XLA is disabling parallel compilation"; it runs.
    env = fb.add(fb.with_jax(fb.environment(), "0.4.31"), "nvidia-cuda-nvcc-cu12", "12.6.85")
    snap = fb.on(builders.node([builders.h100(0)], driver="550.54.15", cuda=12040), env)
    f = the(snap, "frameworks.jax.cuda-driver")
    assert f.status is Status.WARN
    assert "nvidia-cuda-nvcc-cu12 12.6.85" in f.title and "CUDA 12.4" in f.title
    # CUDA 12.6's minimum Linux driver, as NVIDIA's release notes print it (compat/cuda.toml).
    assert f.fix and f.fix.text.startswith("Upgrade the NVIDIA driver to 560.28.03 or newer")
    # A ptxas no newer than the driver's CUDA says nothing of it.
    env = fb.add(fb.with_jax(fb.environment(), "0.4.31"), "nvidia-cuda-nvcc-cu12", "12.4.131")
    snap = fb.on(builders.node([builders.h100(0)], driver="550.54.15", cuda=12040), env)
    assert the(snap, "frameworks.jax.cuda-driver").status is Status.PASS


# --- cudnn.libraries: the cuDNN a monolithic jaxlib loads, against its +cudnnNN tag ----------


def test_a_system_cudnn_older_than_the_jaxlib_tag_fails() -> None:
    # jax#16901: "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0".
    env = fb.add(fb.with_jax(fb.environment(), "0.4.14", None), "jaxlib", "0.4.14+cuda11.cudnn86")
    env.distributions = [d for d in env.distributions if d.version != "0.4.14" or d.name == "jax"]
    snap = fb.on(builders.h100_node(1), env)
    system = builders.library("cudnn", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "8.5.0")
    system.origin = "ldconfig"
    snap.cudnn.libraries = [system]
    f = the(snap, "cudnn.libraries")
    assert f.status is Status.FAIL
    assert f.title.startswith("jaxlib 0.4.14+cuda11.cudnn86 is built for cuDNN 8.6, but")
    assert f.fix and f.fix.commands == [
        "pip install --upgrade 'jax[cuda11_pip]==0.4.14' "
        "-f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"
    ]
    system.version = "8.6.0"
    assert the(snap, "cudnn.libraries").status is Status.PASS


def test_jaxlib_cudnn_tags() -> None:
    from gpucheck.checks.frameworks.jax_builds import jaxlib_cudnn

    assert jaxlib_cudnn("0.4.14+cuda11.cudnn86") == "8.6"
    assert jaxlib_cudnn("0.1.69+cuda111.cudnn805") == "8.0.5"
    assert jaxlib_cudnn("0.4.30") is None


# --- frameworks.torch.arch-support: a nightly of a line the compat data has no row for -------------------


def test_a_cu124_nightly_is_judged_by_the_cu124_wheels_before_it_and_fails_on_sm_120() -> None:
    # pytorch#167244: torch 2.7.0.dev20250310+cu124 on an RTX 5090 (sm_120).
    env = fb.with_torch(fb.environment(), "2.7.0.dev20250310+cu124", "12.4")
    f = the(fb.on(fb.blackwell_workstation(), env), "frameworks.torch.arch-support")
    assert f.status is Status.FAIL
    assert "no kernel image" in f.title
    assert any("PyTorch 2.4-2.6 cu124 wheels, the nearest release line" in e for e in f.evidence)
    assert f.fix and "pip install 'torch==2.15.*'" in f.fix.text  # PyPI's 2.15 wheel: CUDA 13.2
    # A final release the data lacks is still not guessed at.
    assert compat.load().torch.arch_before("2.7.0", "12.4") is None


def test_tensorflow_before_2_14_with_an_older_cudnn_minor_than_its_build_fails() -> None:
    # "Loaded runtime CuDNN library: 8.0.4 but source was compiled with: 8.1.0": TensorFlow
    # needs the same cuDNN major and an equal or higher minor. TF 2.12 is built with 8.6.
    # tensorflow.toml [[release]] 2.12: cuda = "11.8", cudnn = "8.6"
    env = fb.with_tensorflow(fb.environment(), "2.12.0", cuda="11.8", cudnn="8", and_cuda=False)
    snap = fb.on(builders.h100_node(1), env)
    snap.cuda.runtimes = [
        builders.library("cudart", "/usr/local/cuda-11.8/lib64/libcudart.so.11.0", "11.8.89")
    ]
    cudnn = builders.library("cudnn", "/usr/local/cuda-11.8/lib64/libcudnn.so.8", "8.5.0")
    snap.cudnn.libraries = [cudnn]
    f = the(snap, "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert "older than the cuDNN 8.6 it was built with" in f.title
    cudnn.version = "8.9.7"  # a newer minor is accepted
    assert the(snap, "frameworks.tensorflow.cuda-libraries").status is Status.PASS


def test_tensorflow_with_an_older_nvidia_cudnn_wheel_than_its_pin_fails() -> None:
    # tensorflow 2.15.0 pins nvidia-cudnn-cu12==8.9.4.25; 8.6.0.163 installed by another package.
    env = fb.add(fb.with_tensorflow(fb.environment()), "nvidia-cudnn-cu12", "8.6.0.163")
    f = the(fb.on(builders.h100_node(1), env), "frameworks.tensorflow.cuda-libraries")
    assert f.status is Status.FAIL
    assert any(
        "(8.6.0.163 installed: older than the 8.9.4.25 it was built with)" in e for e in f.evidence
    )
    assert f.fix and f.fix.commands == ["pip install 'tensorflow[and-cuda]==2.15.0'"]
