"""TensorFlow and JAX: the newest release line the request admits that runs here, each other
line ruled out with its condition. TensorFlow's GPU builds are judged by their tested CUDA (its
driver floor, its architecture range); JAX's by the CUDA majors its plugin wheels ship."""

from __future__ import annotations

from packaging.version import Version

from gpucheck.compat import Compat, driver_text
from gpucheck.compat.answers import cuda_targets
from gpucheck.compat.frameworks import JaxRelease, TfGpuCode, major_minor
from gpucheck.install.answer import PackageAnswer
from gpucheck.install.machine import Machine
from gpucheck.install.request import Wanted
from gpucheck.install.torch_builds import admits, code_reason


def _python_reason(machine: Machine, low: Version | None, high: Version | None) -> str | None:
    have = major_minor(machine.python) if machine.python else None
    if have is None or ((low is None or have >= low) and (high is None or have <= high)):
        return None
    return f"has no wheel for Python {have} (Python {low} to {high or 'newer'})"


def driver_reason(compat: Compat, machine: Machine, cuda: str) -> str | None:
    if machine.driver is None or not machine.gpus:
        return None
    if compat.cuda_runs_on_driver(cuda, machine.driver, machine.os) is not False:
        return None
    most = compat.max_cuda_for_driver(machine.driver, machine.os)
    floor = compat.minor_compat_floor(int(cuda.split(".")[0]), machine.os)
    need = floor or compat.min_driver(cuda, machine.os)
    needs = f"driver {driver_text(need)} or newer" if need else "a newer driver"
    return f"CUDA {cuda} needs {needs} (driver {machine.driver} runs CUDA {most} at most)"


def arch_reason(compat: Compat, machine: Machine, cuda: str) -> str | None:
    missing = [cc for cc in machine.ccs if not cuda_targets(compat, cuda, [cc])]
    if not missing:
        return None
    rng = compat.cc_range(cuda)
    span = f" (CUDA {cuda} builds for {rng.min_cc} to {rng.max_cc})" if rng else ""
    return f"CUDA {cuda} cannot build for compute capability {', '.join(missing)}{span}"


# TensorFlow's CUDA 12 wheels are built for their own list, narrower than the toolkit's (at
# https://github.com/tensorflow/tensorflow/blob/0071ad1d/.bazelrc, CUDA 12.5.1:
# sm_60,sm_70,sm_80,sm_89,compute_90). Where compat/tensorflow.toml has no [[gpu_code]] row for a
# line, an older GPU is said to be uncertain, never promised.
_TF_CUDA12_LOWEST = Version("6.0")


def _tf_arch_caveat(cuda: str, old: list[str]) -> str:
    return (
        f"not certain for compute capability {', '.join(old)}: this answer judges by CUDA "
        f"{cuda}'s architecture range; TensorFlow's CUDA 12 wheels carry their own narrower list "
        "(from 6.0 at the tensorflow .bazelrc read), which the compat data does not hold for "
        "this release: after installing, `gpucheck doctor --deep` reads the installed wheel's list"
    )


def _tf_code_reason(
    compat: Compat, machine: Machine, code: TfGpuCode, cuda: str
) -> tuple[str | None, list[str]]:
    """(why the release's builds have no code for a GPU here, notes on GPUs served by PTX JIT):
    the rule torch's builds are judged by, with the release's own list."""
    built = [f"sm_{c.replace('.', '')}" for c in code.sm]
    built += [f"compute_{c.replace('.', '')}" for c in code.ptx]
    return code_reason(compat, machine, cuda, code.code_for, built)


def resolve_tensorflow(compat: Compat, machine: Machine, wanted: Wanted) -> PackageAnswer:
    tf = compat.tensorflow
    answer = PackageAnswer(name="tensorflow")
    last_windows = tf.windows_native_gpu_last
    for rel in reversed(tf.releases):
        if not admits(wanted.specifier, rel.version):
            continue
        reason = _python_reason(machine, rel.python_min, rel.python_max)
        gpu = bool(machine.gpus) and rel.cuda is not None
        windows_after = last_windows is not None and rel.version > last_windows
        if reason is None and gpu and machine.os == "windows" and windows_after:
            reason = f"has no GPU build on native Windows (the last is {last_windows}; WSL2)"
        code = tf.gpu_code_for(rel.version) if gpu else None
        jit: list[str] = []
        if reason is None and gpu and rel.cuda is not None:
            reason = driver_reason(compat, machine, rel.cuda)
            if reason is None and code is not None:
                reason, jit = _tf_code_reason(compat, machine, code, rel.cuda)
            elif reason is None:
                reason = arch_reason(compat, machine, rel.cuda)
        if reason is not None:
            answer.ruled_out.append(f"{rel.version}: {reason}")
            continue
        answer.release, answer.cuda = str(rel.version), rel.cuda if gpu else None
        extra = "[and-cuda]" if gpu and rel.version >= Version("2.14") else ""
        package = (rel.package or "tensorflow").replace("_", "-") if gpu else "tensorflow"
        answer.build = "and-cuda" if extra else ("gpu" if gpu else "cpu")
        answer.requirement = f"{package}{extra}=={rel.version}.*"
        answer.sources = [rel.source] + ([code.source] if code else [])
        answer.notes.extend(jit)
        old = [cc for cc in machine.ccs if Version(cc) < _TF_CUDA12_LOWEST] if gpu else []
        cuda12 = rel.cuda is not None and Version(rel.cuda).major >= 12
        if old and code is None and rel.cuda is not None and cuda12:
            answer.notes.append(_tf_arch_caveat(rel.cuda, old))
        break
    if answer.ruled_out and answer.release is not None:
        answer.cliff = (
            f"tensorflow {answer.ruled_out[0]}: {answer.release} is the last that runs here"
        )
    return answer


def resolve_jax(compat: Compat, machine: Machine, wanted: Wanted) -> PackageAnswer:
    """The plugin wheels (jax[cuda12], jax[cuda13]); the older monolithic jaxlib+cuda wheels
    came from Google's own index, which the compat data does not list."""
    answer = PackageAnswer(name="jax")
    lines: dict[Version, JaxRelease] = {}
    for row in compat.jax.releases:
        lines[Version(f"{row.version.major}.{row.version.minor}")] = row  # the line's last row
    for line in sorted(lines, reverse=True):
        row = lines[line]
        if not admits(wanted.specifier, line):
            continue
        reason = _python_reason(machine, row.python_min, None)
        if reason is None and machine.gpus and machine.os != "linux":
            reason = "has CUDA wheels for Linux only"
        major = None
        if reason is None and machine.gpus:
            plugins = [m for m in row.cuda_majors if f"jax-cuda{m}-plugin" in row.packages]
            why = []
            for m in sorted(plugins, key=int, reverse=True):
                fails = driver_reason(compat, machine, f"{m}.0") or arch_reason(
                    compat, machine, f"{m}.0"
                )
                if fails is None:
                    major = m
                    break
                why.append(fails)
            if major is None:
                reason = "; ".join(why) or "has no CUDA plugin wheels (jaxlib's own index)"
        if reason is not None:
            answer.ruled_out.append(f"{line}: {reason}")
            continue
        extra = f"[cuda{major}]" if major else ""
        answer.release, answer.build = str(line), f"cuda{major}" if major else "cpu"
        answer.cuda = f"{major}" if major else None
        answer.requirement = f"jax{extra}=={line}.*"
        answer.sources = [row.source]
        break
    if answer.ruled_out and answer.release is not None:
        answer.cliff = f"jax {answer.ruled_out[0]}: {answer.release} is the last that runs here"
    return answer
