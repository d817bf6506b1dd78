"""Kernel packages judged from their installed deciding library's own code (checks/frameworks/
library_archs.py; the facts: PythonEnvironment.compiled, read by probes/library_code.py): the
install beats the release's [[kernel_archs]] row, PTX-only coverage passes with a note, an
optional library never decides, and without the facts the row decides as before."""

from __future__ import annotations

from support import builders
from support import fatbin_files as ff
from support import framework_builders as fb
from support.evaluate import the

from gpucheck.model.compiled_code import CompiledCode
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.finding import Finding, Status
from gpucheck.model.library_code import LibraryCode
from gpucheck.model.snapshot import GpuFacts, Snapshot

SITE = fb.VENV + "/lib/python3.11/site-packages"
# vLLM 0.9.2's _C.abi3.so, as its fat binary lists it (the PyPI wheel, read with probes/fatbin.py).
VLLM_092_C = CompiledCode(
    sass=(
        *("5.2", "7.0", "7.5", "8.0", "8.7", "8.9", "9.0", "9.0a"),
        "10.0",
        "10.0a",
        "12.0",
        "12.0a",
    ),
    ptx=("5.2", "8.9", "9.0"),
)
CHECK = "frameworks.torch.extensions"


def _lib(package: str, version: str, path: str, code: CompiledCode | None) -> LibraryCode:
    return LibraryCode(package, version, path, f"{SITE}/{path}", code)


def _env(package: str, version: str, *libs: LibraryCode, cuda: str = "12.6") -> PythonEnvironment:
    env = fb.with_torch(fb.environment(), f"2.7.0+cu{cuda.replace('.', '')}", cuda)
    fb.add(env, package, version, ["torch==2.7.0"])
    env.compiled = list(libs)
    return env


def _a100(index: int = 0) -> GpuFacts:
    gpu = builders.h100(index)
    gpu.name, gpu.compute_capability, gpu.architecture = "NVIDIA A100-SXM4-80GB", "8.0", "Ampere"
    return gpu


def _v100() -> Snapshot:
    snap = builders.workstation()
    snap.nvml.gpus[0].name = "Tesla V100-SXM2-16GB"
    snap.nvml.gpus[0].compute_capability = "7.0"
    return snap


def _judge(snap: Snapshot, env: PythonEnvironment) -> Finding:
    return the(fb.on(snap, env), CHECK)


def test_a_vllm_source_build_without_the_gpu_fails_and_names_the_prebuilt_wheel() -> None:
    hopper_only = CompiledCode(sass=("9.0", "9.0a"))
    env = _env("vllm", "0.9.2", _lib("vllm", "0.9.2", "vllm/_C.abi3.so", hopper_only))
    f = _judge(builders.node([_a100()]), env)
    assert f.status is Status.FAIL
    assert f.title == (
        "vllm 0.9.2 has no kernels for compute capability 8.0: its vllm/_C.abi3.so carries "
        'SASS for 9.0, 9.0a and no PTX, so its kernels fail there ("no kernel image is '
        'available for execution on the device"); the prebuilt vllm 0.9.2 wheels carry it'
    )
    assert f"{SITE}/vllm/_C.abi3.so: SASS for 9.0, 9.0a and no PTX" in f.evidence
    assert f.fix is not None
    assert (
        "pip install --force-reinstall --no-deps --only-binary vllm vllm==0.9.2 && "
        "pip install vllm==0.9.2" in f.fix.text
    )
    assert "Hugging Face transformers" in f.fix.text


def test_a_healthy_a100_with_the_vllm_wheel_passes_whatever_optional_kernels_lack() -> None:
    # _flashmla_C (Hopper only) is not the deciding library: even listed, it does not decide.
    env = _env(
        "vllm",
        "0.9.2",
        _lib("vllm", "0.9.2", "vllm/_C.abi3.so", VLLM_092_C),
        _lib("vllm", "0.9.2", "vllm/_flashmla_C.abi3.so", CompiledCode(sass=("9.0a",))),
    )
    f = _judge(builders.node([_a100(0), _a100(1)]), env)
    assert f.status is Status.PASS, f.title


def test_the_install_beats_the_release_row() -> None:
    # vLLM 0.21.0's row (docs: 7.5 and newer) fails a V100; a build with sm_70 code runs there.
    assert _judge(_v100(), _env("vllm", "0.21.0")).status is Status.FAIL
    built = _lib("vllm", "0.21.0", "vllm/_C.abi3.so", CompiledCode(sass=("7.0", "8.0")))
    assert _judge(_v100(), _env("vllm", "0.21.0", built)).status is Status.PASS


def test_without_the_facts_or_with_an_unreadable_library_the_row_decides() -> None:
    # compat/extensions.toml: the vllm 0.20.0 row, read from its wheel, carries no sm_70.
    row_title = (
        "vllm 0.21.0 has no kernels for compute capability 7.0: its build carries code for "
        "compute capability 7.5, 8.0, 9.0, 10.0, 12.0 only, so its kernels fail there; vllm "
        "releases before 0.20.0 have it"
    )
    assert _judge(_v100(), _env("vllm", "0.21.0")).title == row_title
    unreadable = _lib("vllm", "0.21.0", "vllm/_C.abi3.so", None)
    assert _judge(_v100(), _env("vllm", "0.21.0", unreadable)).title == row_title
    no_fatbin = _lib("vllm", "0.21.0", "vllm/_C.abi3.so", CompiledCode())
    assert _judge(_v100(), _env("vllm", "0.21.0", no_fatbin)).title == row_title


def test_facts_of_another_version_do_not_decide() -> None:
    # A snapshot whose facts were read before an upgrade: only this version's library counts.
    stale = _lib("vllm", "0.9.2", "vllm/_C.abi3.so", CompiledCode(sass=("7.0",)))
    assert _judge(_v100(), _env("vllm", "0.21.0", stale)).status is Status.FAIL


def test_only_ptx_covering_the_gpu_passes_with_a_note() -> None:
    code = CompiledCode(sass=("8.0", "9.0"), ptx=("9.0",))
    lib = _lib("flash-attn", "2.8.3", "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so", code)
    f = _judge(fb.blackwell_workstation(), _env("flash-attn", "2.8.3", lib))
    assert f.status is Status.PASS
    assert (
        "flash-attn: compute capability 12.0 runs flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so "
        "from its PTX for 9.0 only (no SASS for it): the driver compiles it at the first call "
        "(a one-time delay, then cached), and only a driver that knows that PTX's ISA (one as new "
        "as the CUDA it was built with) can"
    ) in f.evidence


def test_some_gpus_outside_warn_and_name_the_ones_that_run_it_first() -> None:
    hopper_only = _lib("vllm", "0.9.2", "vllm/_C.abi3.so", CompiledCode(sass=("9.0",)))
    f = _judge(builders.node([builders.h100(0), _a100(1)]), _env("vllm", "0.9.2", hopper_only))
    assert f.status is Status.WARN and f.fix is not None
    assert f.fix.text.startswith("Run vllm on the GPUs of compute capability 9.0")
    assert "CUDA_VISIBLE_DEVICES" in f.fix.text


# bitsandbytes 0.45.5's wheel: a library for CUDA 11.7, 11.8, 12.0 to 12.6 and 12.8, each built
# for the capabilities its build-cuda.sh gives that CUDA (support.fatbin_files).
BNB_0455_CUDAS = ("117", "118", "120", "121", "122", "123", "124", "125", "126", "128")


def _bnb_archs(cuda: str) -> tuple[str, ...]:
    return ff.BNB_BUILD_CAPABILITIES.get(cuda, ff.BNB_BUILD_CAPABILITIES["124"])


def _bitsandbytes(
    cuda: str, version: str = "0.45.5", cudas: tuple[str, ...] = BNB_0455_CUDAS
) -> PythonEnvironment:
    return _env(
        "bitsandbytes",
        version,
        *(
            _lib(
                "bitsandbytes",
                version,
                f"bitsandbytes/libbitsandbytes_cuda{v}.so",
                CompiledCode(sass=_bnb_archs(v)),
            )
            for v in cudas
        ),
        cuda=cuda,
    )


def test_bitsandbytes_is_judged_by_the_library_for_torchs_cuda() -> None:
    f = _judge(fb.blackwell_workstation(), _bitsandbytes("12.4"))
    assert f.status is Status.FAIL
    assert "its bitsandbytes/libbitsandbytes_cuda124.so carries SASS for 5.0, 5.2," in f.title
    assert f.fix is not None and "GPTQ, AWQ" in f.fix.text
    assert (
        "Install a torch built for CUDA 12.8: bitsandbytes loads the library built for torch's "
        "CUDA, and its bitsandbytes/libbitsandbytes_cuda128.so carries code for compute "
        "capability 12.0; or use a model without 8-bit / 4-bit bitsandbytes layers"
    ) in f.fix.text
    assert _judge(fb.blackwell_workstation(), _bitsandbytes("12.8")).status is Status.PASS


def test_bitsandbytes_before_0_50_has_no_gpu_code_without_the_library_for_torchs_cuda() -> None:
    # 0.45.5's cextension.py loads libbitsandbytes_cuda129.so for a torch cu129 and, missing,
    # its CPU library: no GPU ops on any GPU, though its cuda128 library would run on each.
    for snap in (fb.blackwell_workstation(), builders.h100_node(1)):
        f = _judge(snap, _bitsandbytes("12.9"))
        assert f.status is Status.FAIL, f.title
        assert f.title.startswith(
            "bitsandbytes 0.45.5 has no CUDA library for torch's CUDA 12.9, so it has no GPU code "
            "for compute capability"
        )
        assert f.title.endswith(
            "(its GPU ops fail there); bitsandbytes 0.50.0 and later load the nearest library "
            "of that CUDA major"
        )
        assert f.fix is not None
        assert "pip install 'bitsandbytes>=0.50.0'" in f.fix.text
        assert "or install a torch built for CUDA " in f.fix.text
        assert "libbitsandbytes_cuda128.so" in f.fix.text


def test_bitsandbytes_from_0_50_falls_back_to_the_nearest_library_of_the_same_cuda_major() -> None:
    # The same libraries under a release with get_cuda_bnb_library_path's fallback (0.50.0):
    # torch cu129 and no cuda129 library: it loads cuda128 (below first).
    assert _judge(fb.blackwell_workstation(), _bitsandbytes("12.9", "0.50.0")).status is Status.PASS
    # torch cu127: the nearest below is cuda126, which has no sm_120.
    f = _judge(fb.blackwell_workstation(), _bitsandbytes("12.7", "0.50.0"))
    assert f.status is Status.FAIL and "its bitsandbytes/libbitsandbytes_cuda126.so" in f.title
    # torch cu118 beside CUDA 12 libraries only: never another major, so no GPU code.
    f = _judge(fb.blackwell_workstation(), _bitsandbytes("11.8", "0.50.0", ("124", "128")))
    assert f.status is Status.FAIL
    assert f.title.startswith("bitsandbytes 0.50.0 has no CUDA library for torch's CUDA 11.8")
    assert (
        "bitsandbytes 0.50.0 installs bitsandbytes/libbitsandbytes_cuda124.so, "
        "bitsandbytes/libbitsandbytes_cuda128.so"
    ) in f.evidence
    assert f.fix is not None and "pip install" not in f.fix.text


def test_bitsandbytes_libraries_not_read_leave_the_verdict_to_the_row() -> None:
    # Nothing read for this install (no RECORD): which libraries it has is unknown.
    env = _bitsandbytes("12.9", cudas=())
    assert _judge(fb.blackwell_workstation(), env).status is not Status.FAIL


def test_sgl_kernel_runs_where_any_of_its_per_gpu_libraries_does() -> None:
    sm90 = _lib(
        "sgl-kernel", "0.3.9", "sgl_kernel/sm90/common_ops.abi3.so", CompiledCode(sass=("9.0a",))
    )
    sm100 = _lib(
        "sgl-kernel",
        "0.3.9",
        "sgl_kernel/sm100/common_ops.abi3.so",
        CompiledCode(sass=("8.0", "10.0a")),
    )
    assert (
        _judge(builders.node([_a100()]), _env("sgl-kernel", "0.3.9", sm90, sm100)).status
        is Status.PASS
    )
    f = _judge(_v100(), _env("sgl-kernel", "0.3.9", sm90, sm100))
    assert f.status is Status.FAIL and f.title.startswith(
        "sgl-kernel 0.3.9 has no kernels for compute capability 7.0"
    )
    assert f.fix is not None and "vLLM or Hugging Face transformers" in f.fix.text


def test_the_ptx_note_names_only_the_ptx_the_gpu_can_compile() -> None:
    # vLLM 0.9.2's _C on a GTX 1080 (6.1): no SASS of major 6, and of its PTX (5.2, 8.9, 9.0)
    # only 5.2 is at or below 6.1.
    env = _env("vllm", "0.9.2", _lib("vllm", "0.9.2", "vllm/_C.abi3.so", VLLM_092_C))
    f = _judge(fb.pascal_workstation(), env)
    assert f.status is Status.PASS, f.title
    assert (
        "vllm: compute capability 6.1 runs vllm/_C.abi3.so from its PTX for 5.2 only (no SASS "
        "for it): the driver compiles it at the first call (a one-time delay, then cached), and "
        "only a driver that knows that PTX's ISA (one as new as the CUDA it was built with) can"
    ) in f.evidence


def test_architectures_that_do_not_parse_leave_the_verdict_to_the_row() -> None:
    # A snapshot is input: an arch list the fat-binary reader never writes is not a fact.
    garbled = CompiledCode(sass=("", "x.y", "9.0aa"))
    env = _env("vllm", "0.9.2", _lib("vllm", "0.9.2", "vllm/_C.abi3.so", garbled))
    assert _judge(builders.node([_a100()]), env).status is Status.PASS


def test_a_flash_attn_source_build_is_reinstalled_through_its_setup_py_not_only_binary() -> None:
    # flash-attn publishes only an sdist on PyPI (publish.yml: setup.py sdist, twine upload);
    # its setup.py fetches the prebuilt wheel from the GitHub release (CachedWheelsCommand).
    hopper_only = CompiledCode(sass=("9.0",))
    name = "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
    env = _env("flash-attn", "2.7.4.post1", _lib("flash-attn", "2.7.4.post1", name, hopper_only))
    f = _judge(builders.node([_a100()]), env)
    assert f.status is Status.FAIL and f.fix is not None
    assert f.title.endswith("the prebuilt flash-attn 2.7.4.post1 wheels carry it")
    assert (
        "pip install --no-build-isolation --no-cache-dir --force-reinstall --no-deps "
        "flash-attn==2.7.4.post1"
    ) in f.fix.text
    assert "--only-binary" not in f.fix.text
    assert "FLASH_ATTENTION_FORCE_BUILD unset" in f.fix.text


def test_a_build_of_an_unreleased_commit_is_not_offered_a_reinstall() -> None:
    # vllm 0.9.2.dev364 is a source build between releases: PyPI has no such version.
    version = "0.9.2.dev364+g1a2b3c4d5"
    hopper_only = _lib("vllm", version, "vllm/_C.abi3.so", CompiledCode(sass=("9.0",)))
    f = _judge(builders.node([_a100()]), _env("vllm", version, hopper_only))
    assert f.status is Status.FAIL and f.fix is not None
    assert "pip install" not in f.fix.text
    assert f.title.endswith(
        "use an engine without vLLM's compiled kernels (e.g. Hugging Face transformers) there"
    )


def _sgl(path: str, *sass: str) -> LibraryCode:
    return _lib("sgl-kernel", "0.3.9", f"sgl_kernel/{path}", CompiledCode(sass=sass))


def test_sgl_kernel_is_judged_per_gpu_by_the_library_it_loads_there() -> None:
    # load_utils.py loads sm90/ on 9.0 and sm100/ on every other GPU: SASS for 8.0 in sm90/
    # alone does not run an A100, and sm100/'s 9.0 does not run an H100.
    sm90, sm100 = (
        _sgl("sm90/common_ops.abi3.so", "8.0", "9.0"),
        _sgl("sm100/common_ops.abi3.so", "10.0"),
    )
    env = _env("sgl-kernel", "0.3.9", sm90, sm100)
    f = _judge(builders.node([_a100()]), env)
    assert f.status is Status.FAIL
    assert f.title.startswith(
        "sgl-kernel 0.3.9 has no kernels for compute capability 8.0: its "
        "sgl_kernel/sm100/common_ops.abi3.so carries SASS for 10.0 and no PTX"
    )
    assert _judge(builders.h100_node(1), env).status is Status.PASS
    swapped = _env(
        "sgl-kernel",
        "0.3.9",
        _sgl("sm90/common_ops.abi3.so", "10.0"),
        _sgl("sm100/common_ops.abi3.so", "9.0"),
    )
    assert _judge(builders.h100_node(1), swapped).status is Status.FAIL


def test_sgl_kernel_falls_back_to_its_top_level_library_only_where_the_gpus_is_missing() -> None:
    top = _sgl("common_ops.abi3.so", "8.0", "9.0")
    # The older single-library layout: the top-level library on every GPU.
    assert _judge(builders.node([_a100()]), _env("sgl-kernel", "0.3.9", top)).status is Status.PASS
    # With sm100/ installed, an A100 loads it, never the top-level library.
    env = _env("sgl-kernel", "0.3.9", top, _sgl("sm100/common_ops.abi3.so", "10.0"))
    assert _judge(builders.node([_a100()]), env).status is Status.FAIL
    # sm90/ alone: nothing an A100 loads (its import fails).
    env = _env("sgl-kernel", "0.3.9", _sgl("sm90/common_ops.abi3.so", "8.0", "9.0"))
    f = _judge(builders.node([_a100()]), env)
    assert f.status is Status.FAIL
    assert f.title.startswith(
        "sgl-kernel 0.3.9 has no library it loads there (sgl_kernel/sm100/common_ops.*.so or "
        "sgl_kernel/common_ops.*.so), so it has no GPU code for compute capability 8.0"
    )
