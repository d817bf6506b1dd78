"""The TensorFlow build a fix installs: the same line where it has tensorflow[and-cuda] and
fits, else the newest that runs on this driver with these GPUs; on native Windows, WSL2 or the
last release with GPU support there."""

from __future__ import annotations

from packaging.version import Version

from gpucheck.checks.context import Context
from gpucheck.checks.frameworks.builds import TfFacts, pick_tensorflow, pinners, satisfies_text
from gpucheck.checks.frameworks.driver_fit import cc_list, targets, upgrade_driver
from gpucheck.checks.frameworks.per_environment import (
    change,
    env_os,
    in_range,
    pip_step,
    python_mm,
)
from gpucheck.compat.answers import TF_AND_CUDA_FIRST
from gpucheck.compat.frameworks import TfRelease, major_minor
from gpucheck.model.environments import PythonEnvironment
from gpucheck.model.fix import OR, Change, Fix, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join


def tf_release(ctx: Context, t: TfFacts) -> TfRelease | None:
    return ctx.compat.tensorflow.release(t.version) if t.version else None


def tf_line(t: TfFacts) -> Version | None:
    return major_minor(t.version) if t.version else None


def windows_native(ctx: Context, env: PythonEnvironment) -> bool:
    return env_os(ctx, env) == "windows"


def past_windows_gpu(ctx: Context, t: TfFacts) -> bool:
    last, line = ctx.compat.tensorflow.windows_native_gpu_last, tf_line(t)
    return last is not None and line is not None and line > last


def tf_uninstall(t: TfFacts, also: tuple[str, ...] = ()) -> str:
    names = list(dict.fromkeys([*(d.name for d in t.dists), *also]))
    return join(["pip", "uninstall", "-y", *names]) + " && " if names else ""


def tf_removed(env: PythonEnvironment, t: TfFacts, also: tuple[str, ...] = ()) -> list[Change]:
    names = list(dict.fromkeys([*(d.name for d in t.dists), *also]))
    return [change(env, name, remove=True) for name in names]


def tf_step(
    ctx: Context,
    env: PythonEnvironment,
    t: TfFacts,
    why: str,
    install: str,
    also: tuple[str, ...] = (),
    version: str | None = None,
) -> Step:
    """Replace this environment's TensorFlow distributions by what `install` installs; what
    pins tensorflow outside `version` (tf-keras, tensorflow-text) moves in the same command,
    pip picking its release for that TensorFlow (PyPI carries both)."""
    wanted = change(env, "tensorflow", requirement=f"=={version}.*" if version else None)
    skip = tuple(d.name for d in t.dists) + also
    moved = [
        (d, spec)
        for d, spec in pinners(ctx, env, "tensorflow", skip)
        if version and not satisfies_text(spec, version)
    ]
    if moved:
        install += " " + " ".join(d.name for d, _ in moved)
        why += "; " + ", ".join(f"{d.name} {d.version} (tensorflow{s})" for d, s in moved)
        why += " move with it"
    return pip_step(
        ctx,
        env,
        why,
        tf_uninstall(t, also) + install,
        [*tf_removed(env, t, also), wanted, *(change(env, d.name) for d, _ in moved)],
    )


def tf_switch(
    ctx: Context, env: PythonEnvironment, t: TfFacts, also: tuple[str, ...] = ()
) -> Step | None:
    """The command that replaces this environment's TensorFlow by a GPU build that runs on
    this driver with these GPUs (Linux): the same line where it has tensorflow[and-cuda] and
    fits, else the newest that does; None when the compat data has none."""
    ccs, driver, line = cc_list(targets(ctx)), ctx.driver_version, tf_line(t)
    same = pick_tensorflow(ctx, env, ccs, driver, line=line) if line else None
    pick = same if same and Version(same.version) >= TF_AND_CUDA_FIRST else None
    pick = pick or pick_tensorflow(ctx, env, ccs, driver)
    if pick is None:
        return None
    why = f"CUDA {pick.cuda}" + (f", runs on driver {driver}" if driver else "")
    return tf_step(
        ctx, env, t, f"install TensorFlow {pick.version} ({why})", pick.install, also, pick.version
    )


def tf_gpu_fix(ctx: Context, env: PythonEnvironment, t: TfFacts, also: tuple[str, ...] = ()) -> Fix:
    """tf_switch, else a newer driver and then the newest GPU build."""
    switch = tf_switch(ctx, env, t, also)
    if switch is not None:
        return Fix.of(switch)
    other = pick_tensorflow(ctx, env, cc_list(targets(ctx)), None)
    if other is not None:
        return Fix.of(
            upgrade_driver(ctx, other.cuda),
            tf_step(
                ctx,
                env,
                t,
                f"then install TensorFlow {other.version}",
                other.install,
                also,
                other.version,
            ),
        )
    return Fix.of(
        tf_step(
            ctx,
            env,
            t,
            "install TensorFlow's Linux GPU build",
            "pip install 'tensorflow[and-cuda]'",
            also,
        )
    )


def windows_fix(ctx: Context, env: PythonEnvironment) -> Fix:
    """WSL2, or the last native-Windows GPU release with the CUDA/cuDNN it was tested with."""
    data = ctx.compat.tensorflow
    last = data.windows_native_gpu_last
    linux = pick_tensorflow(ctx, env, cc_list(targets(ctx)), ctx.driver_version, os="windows")
    install = linux.install if linux else "pip install 'tensorflow[and-cuda]'"
    wsl = Step.run(
        "use WSL2: in an Ubuntu WSL2 shell (the Windows NVIDIA driver serves WSL2; install no "
        "Linux driver inside it)",
        install,
        Tool.PIP,
        changes=[Change("tensorflow", None, None, f"=={linux.version}.*" if linux else None)],
    )
    row = next((r for r in data.windows_gpu if r.version == last), None)
    if last is None or row is None:
        return Fix.of(wsl)
    py, where = python_mm(env), ""
    if py is not None and not in_range(py, row.python_min, row.python_max):
        where = f" in a Python {row.python_min} to {row.python_max} environment"
    return Fix.of(
        wsl,
        OR,
        pip_step(
            ctx,
            env,
            f"stay native with TensorFlow {last}, the last release with GPU support on native "
            f"Windows{where}",
            f"pip install 'tensorflow=={last}.*'",
            [change(env, "tensorflow", requirement=f"=={last}.*")],
        ),
        Step.run(
            f"with CUDA {row.cuda} and cuDNN {row.cudnn}",
            f"conda install -c conda-forge cudatoolkit={row.cuda} cudnn={row.cudnn}",
            Tool.CONDA,
            changes=[
                Change("cudatoolkit", None, row.cuda),
                Change("cudnn", None, row.cudnn),
            ],
            environment=env.python,
            layer=Layer.CUDA,
        ),
    )
