"""What importing the frameworks showed (doctor --deep): the GPUs each one sees, and a smoke
test on each GPU, with failures mapped to their causes from the other facts. A cause another
check already reports (a CPU-only build, a driver too old, cuInit failing) is pointed to, not
reported twice."""

from __future__ import annotations

import re

from gpucheck.checks.context import Context
from gpucheck.checks.fixes import share_gpus
from gpucheck.checks.frameworks.arch import parse_arch_list
from gpucheck.checks.frameworks.builds import tf_facts, torch_facts
from gpucheck.checks.frameworks.driver_fit import judge_driver, targets
from gpucheck.checks.frameworks.jax_builds import jax_facts
from gpucheck.checks.frameworks.numpy_abi import numpy_cause
from gpucheck.checks.frameworks.per_environment import (
    env_label,
    environment_check,
    merge,
    runtime,
)
from gpucheck.checks.frameworks.runtime_causes import XID, built_cuda, catalog_cause, cause_of
from gpucheck.checks.frameworks.runtime_fixes import (
    by_hand,
    by_hand_step,
    library_fix,
    reinstall_step,
)
from gpucheck.checks.frameworks.tensorflow_libraries import essential_loader_warning
from gpucheck.checks.registry import check
from gpucheck.model.environments import FrameworkRuntime, PythonEnvironment
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import Fix, Step
from gpucheck.model.frameworks import JAX, TENSORFLOW, TORCH, installed_frameworks
from gpucheck.model.layers import Layer

# (Patterns as text: re compiles one on first use, not at every start-up.)
_MISSING_LIB = r"(lib[\w+-]+(?:\.[\w+-]+)*?\.so(?:\.[0-9]+)*): cannot open shared object file"


def _label(rt: FrameworkRuntime) -> str:
    return f"{rt.framework} {rt.version}" if rt.version else rt.framework


# --- frameworks.device-count ---------------------------------------------------------------------


def _gpu_devices(rt: FrameworkRuntime) -> int | None:
    """GPU devices the framework sees (JAX on its CPU backend sees none)."""
    if rt.framework == JAX.key and rt.backend is not None and rt.backend not in ("gpu", "cuda"):
        return 0
    return rt.device_count


@environment_check(
    "frameworks.device-count",
    "each framework sees every GPU CUDA_VISIBLE_DEVICES shows (doctor --deep)",
)
def device_count(ctx: Context, env: PythonEnvironment) -> Outcome | None:
    seen = [(rt, n) for rt in env.runtimes if (n := _gpu_devices(rt))]
    if not seen:
        return None  # nothing imported, or no GPU seen at all: frameworks.smoke-test says why
    lines = [f"{_label(rt)} sees {n} GPU device(s)" for rt, n in seen]
    if ctx.visibility.mig_entries or any(g.mig_enabled for g in ctx.gpus):
        return Outcome.passed(
            "The frameworks see MIG devices (a CUDA process enumerates one MIG device, so "
            "counts are not compared)",
            *lines,
        )
    if ctx.nvml_ok:
        expected = len([g for g in ctx.visibility.visible if g.handle_error is None])
    else:
        expected = ctx.snapshot.cuda.driver.device_count or 0
    if not expected:
        return Outcome.skip("Not judged: how many GPUs CUDA should show is not known", *lines)
    short = [(rt, n) for rt, n in seen if n < expected]
    if not short:
        who = ", ".join(_label(rt) for rt, _ in seen)
        return Outcome.passed(f"{who} see(s) all {expected} GPU(s)", *lines)
    causes, fixes = _count_causes(ctx, env, short, expected)
    fixes += [
        Step.run("find which GPU is missing: compare the driver's list", "nvidia-smi -L"),
        Step.run(
            "with the framework's own list",
            by_hand(short[0][0].framework),
            environment=env.python,
        ),
    ]
    return Outcome.warn(
        f"{', '.join(_label(rt) for rt, _ in short)} see(s) fewer GPUs than the {expected} "
        "the driver shows (CUDA_VISIBLE_DEVICES honoured)",
        *lines,
        *causes,
        fix=Fix.of(*fixes),
    )


def _count_causes(
    ctx: Context, env: PythonEnvironment, short: list[tuple[FrameworkRuntime, int]], expected: int
) -> tuple[list[str], list[Step]]:
    """(evidence, fix steps) for the causes the other facts show."""
    causes: list[str] = []
    fixes: list[Step] = []
    drv = ctx.snapshot.cuda.driver
    if drv.device_count is not None and drv.device_count < expected:
        causes.append(f"libcuda itself enumerates {drv.device_count} (see cuda.driver-api)")
    prohibited = [g for g in ctx.visibility.visible if g.compute_mode == "prohibited"]
    if prohibited:
        ids = ",".join(str(g.index) for g in prohibited)
        causes.append(f"GPU {ids}: compute mode prohibited")
        fixes.append(share_gpus(prohibited, "let CUDA use them"))
    t = tf_facts(env)
    if t is not None and any(rt.framework == TENSORFLOW.key for rt, _ in short):
        compiled = parse_arch_list(t.archs, "build_info")
        skipped = [g for g in targets(ctx) if compiled and compiled.covers(g.cc) is None]
        if skipped:
            causes.append(
                "TensorFlow ignores GPUs it has no code for: "
                + "; ".join(f"{g.label}, compute {g.cc}" for g in skipped)
            )
            fixes.append(
                Step.info(
                    "see frameworks.tensorflow.arch-support for a TensorFlow with code for them"
                )
            )
    if ctx.snapshot.system.container:
        env_vars = ctx.snapshot.system.env
        given = env_vars.get("NVIDIA_VISIBLE_DEVICES")
        causes.append(
            f"in a {ctx.snapshot.system.container} container"
            + (f" given NVIDIA_VISIBLE_DEVICES={given!r}" if given else "")
        )
        fixes.append(
            Step.manual(
                "give the container every GPU (docker run --gpus all, or the pod's limits)",
                Layer.SYSTEM,
            )
        )
    return causes, fixes


# --- frameworks.smoke-test ----------------------------------------------------------------------


@check(
    "frameworks.smoke-test",
    "each framework imports, sees the GPUs and multiplies matrices on each (doctor --deep)",
)
def smoke_test(ctx: Context) -> Outcome | None:
    installed = [
        (env, fws) for env in ctx.snapshot.environments if (fws := installed_frameworks(env))
    ]
    if not installed:
        return None
    if not ctx.snapshot.deep:
        names = sorted({f for _, fws in installed for f in fws})
        return Outcome.skip(
            f"{', '.join(names)} not imported: gpucheck doctor --deep imports each framework and "
            "runs a small matmul on every GPU"
        )
    items: list[tuple[str | None, Outcome | None]] = []
    for env, fws in installed:
        label = env_label(ctx, env)
        items += [(label, _smoke(ctx, env, rt)) for rt in env.runtimes]
        missing = [f for f in fws if runtime(env, f) is None]
        if missing:
            items.append((label, Outcome.skip(f"{', '.join(missing)}: not imported")))
    return merge(items)


def _smoke(ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime) -> Outcome:
    name = _label(rt)
    if rt.status in ("crashed", "timeout"):
        return _died(ctx, env, rt)
    if rt.status == "import_error":
        return _import_error(ctx, env, rt)
    if rt.status not in ("ok", "error"):
        return Outcome.fail(
            f"importing {rt.framework} failed: {rt.error or rt.status}",
            fix=Fix.of(by_hand_step(env, rt.framework, "see why")),
        )
    if rt.cuda_available is False or _gpu_devices(rt) == 0:
        if not (ctx.has_gpu and (targets(ctx) or ctx.pci_gpu_count)):
            return Outcome.info(f"{name} imports; there is no NVIDIA GPU here to use")
        return _not_available(ctx, env, rt)
    if not rt.smoke_tests:
        cause = cause_of(ctx, env, rt, rt.error or "", None)
        if cause is not None:
            return Outcome.fail(f"{name}: {cause[0]}", rt.error or "", fix=cause[1])
        if rt.status == "error":
            return Outcome.fail(
                f"{name} failed while looking at the GPUs",
                rt.error or "",
                *rt.warnings[-5:],
                fix=Fix.of(by_hand_step(env, rt.framework), XID),
            )
        return Outcome.skip(f"{name}: no smoke test ran")
    failed = [s for s in rt.smoke_tests if not s.ok]
    if not failed:
        return Outcome.passed(
            f"{name}: the smoke test passed on {len(rt.smoke_tests)} device(s)",
            ", ".join(s.device for s in rt.smoke_tests),
        )
    items: list[tuple[str | None, Outcome | None]] = []
    for test in failed:
        error = test.error or "failed"
        cause = cause_of(ctx, env, rt, error, test.device)
        if cause is not None:
            outcome = Outcome.fail(f"{name} on {test.device}: {cause[0]}", error, fix=cause[1])
        else:
            outcome = Outcome.fail(
                f"{name}: the smoke test failed on {test.device}",
                error,
                fix=Fix.of(by_hand_step(env, rt.framework), XID),
            )
        items.append((None, outcome))
    return merge(items) or Outcome.skip(f"{name}: no smoke test result")


def _died(ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime) -> Outcome:
    step = rt.failure.stage if rt.failure and rt.failure.stage else _step_from_facts(rt)
    how = "timed out" if rt.status == "timeout" else "crashed"
    device = step.split(" ", 1)[1] if step.startswith("smoke ") else None
    cause = cause_of(ctx, env, rt, " ".join([rt.error or "", *rt.warnings[-5:]]), device)
    if cause is not None:
        return Outcome.fail(
            f"{_label(rt)} {how} in {step}: {cause[0]}", rt.error or "", fix=cause[1]
        )
    if how == "timed out":
        fix = Fix.of(
            Step.run(
                "a framework hanging in CUDA's start-up is usually waiting on the driver: check "
                "that it answers quickly",
                "nvidia-smi",
                layer=Layer.DRIVER,
            ),
            Step.run("turn persistence mode on", "sudo nvidia-smi -pm 1", layer=Layer.DRIVER),
            Step.run(
                "on NVSwitch systems, see that the fabric manager runs",
                "systemctl status nvidia-fabricmanager",
                layer=Layer.DRIVER,
            ),
            by_hand_step(env, rt.framework, "try again"),
        )
    else:
        fix = Fix.of(by_hand_step(env, rt.framework, "see the message"), XID)
    return Outcome.fail(f"{_label(rt)} {how} in {step}", rt.error or "", *rt.warnings[-5:], fix=fix)


def _step_from_facts(rt: FrameworkRuntime) -> str:
    if rt.import_seconds is None:
        return f"import {rt.framework}"
    if rt.device_count is None:
        return "looking at the devices"
    done = sorted(s.device for s in rt.smoke_tests)
    return "the smoke test" + (f" after {', '.join(done)}" if done else "")


def _import_error(ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime) -> Outcome:
    error = rt.error or "import failed"
    missing = re.search(_MISSING_LIB, error)
    if missing:
        soname = missing.group(1)
        return Outcome.fail(
            f"import {rt.framework} fails: {soname} is missing",
            error,
            fix=library_fix(ctx, env, rt, soname),
        )
    numpy = numpy_cause(ctx, env, error)
    if numpy is not None:
        return Outcome.fail(f"import {rt.framework} fails: {numpy[0]}", error, fix=numpy[1])
    known = catalog_cause(ctx, error)
    if known is not None:
        return Outcome.fail(f"import {rt.framework} fails: {known[0]}", error, fix=known[1])
    extra = []
    ld_path = ctx.snapshot.system.env.get("LD_LIBRARY_PATH")
    if "undefined symbol" in error and ld_path:
        extra.append(
            "an undefined symbol usually means another copy of a library was loaded first: "
            f"LD_LIBRARY_PATH={ld_path} (see frameworks.library-shadowing)"
        )
    return Outcome.fail(
        f"import {rt.framework} fails",
        error,
        *extra,
        fix=Fix.of(reinstall_step(ctx, env, rt)),
    )


def _not_available(ctx: Context, env: PythonEnvironment, rt: FrameworkRuntime) -> Outcome:
    """The framework imports but sees no GPU while the driver has some: the cause another check
    reports is pointed to; else what the error and the framework's warnings say."""
    name = _label(rt)
    t, tf, j = torch_facts(env), tf_facts(env), jax_facts(env)
    if rt.framework == TORCH.key and t is not None and t.kind not in ("cuda", None):
        return Outcome.skip(
            f"{name} sees no GPU: it is not a CUDA build (see frameworks.torch.cpu-build)"
        )
    if rt.framework == TENSORFLOW.key and tf is not None and tf.kind not in ("cuda", None):
        return Outcome.skip(
            f"{name} sees no GPU: it is not a CUDA build (see frameworks.tensorflow.cpu-build)"
        )
    if rt.framework == JAX.key and j is not None and not j.majors:
        return Outcome.skip(
            f"{name} sees no GPU: no CUDA plugin is installed (see frameworks.jax.cpu-build)"
        )
    vis = ctx.visibility
    if vis.value is not None and not vis.visible:
        return Outcome.skip(
            f"{name} sees no GPU: CUDA_VISIBLE_DEVICES={vis.value!r} hides them all "
            "(see system.cuda-visible-devices)"
        )
    drv = ctx.snapshot.cuda.driver
    if drv.init_result not in (None, 0):
        return Outcome.skip(
            f"{name} sees no GPU: cuInit fails ({drv.init_error_name}; see cuda.driver-api)"
        )
    cuda = built_cuda(env, rt)
    verdict = judge_driver(ctx, cuda) if cuda else None
    if verdict is not None and verdict[0] is Status.FAIL:
        return Outcome.skip(
            f"{name} sees no GPU: its CUDA {cuda} needs a newer driver "
            f"(see frameworks.{rt.framework}.cuda-driver)"
        )
    keys = ("cuda", "gpu", "driver", "backend", "dlopen", "dynamic library")
    hints = [w for w in rt.warnings if any(k in w.lower() for k in keys)]
    if rt.framework == TENSORFLOW.key and any(essential_loader_warning(w) for w in hints):
        return Outcome.skip(
            f"{name} sees no GPU: it could not load its CUDA libraries "
            "(see frameworks.tensorflow.cuda-libraries)"
        )
    shown = len(targets(ctx)) or ctx.pci_gpu_count
    cause = cause_of(ctx, env, rt, " ".join([rt.error or "", *hints]), None)
    if cause is not None:
        return Outcome.fail(f"{name} sees no GPU: {cause[0]}", *hints[-5:], fix=cause[1])
    return Outcome.fail(
        f"{name} sees no GPU, although the driver shows {shown}",
        *([rt.error] if rt.error else []),
        *hints[-5:],
        fix=Fix.of(by_hand_step(env, rt.framework, "see CUDA's own error")),
    )


# --- CUDA errors and their causes ---------------------------------------------------------------
