"""A CDI spec generated for another driver: `nvidia-ctk cdi generate` writes each driver library
by its versioned file name (libcuda.so.550.54.15), so after a driver upgrade a container
started through CDI asks for files that are gone ("error stat'ing file
/lib/x86_64-linux-gnu/libEGL_nvidia.so.535.161.07": Igalia/webkit-container-sdk#23;
NVIDIA/nvidia-container-toolkit#856). NVIDIA Container Toolkit 1.18 regenerates
/var/run/cdi/nvidia.yaml itself (its nvidia-cdi-refresh systemd units); a spec written by hand
to /etc/cdi stays as it was."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.checks.registry import check
from gpucheck.model.finding import Outcome, Subjects
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

REFRESH_SPEC = "/var/run/cdi/nvidia.yaml"  # where nvidia-cdi-refresh writes (toolkit 1.18+)


@check("system.cdi-spec", "CDI specs name the running driver's libraries")
def cdi_spec(ctx: Context) -> Outcome | None:
    state = ctx.snapshot.install_state
    specs = [s for s in (state.cdi_specs if state else []) if s.driver_versions]
    sysf = ctx.snapshot.system
    running = (ctx.snapshot.nvml.driver_version if ctx.nvml_ok else None) or (
        sysf.nvidia_module_version
    )
    if not specs or running is None:
        return None  # no spec naming a driver, or no driver to compare with
    stale = [s for s in specs if running not in s.driver_versions]
    if not stale:
        return Outcome.passed(
            f"{len(specs)} CDI spec(s) name driver {running}'s libraries",
            *[s.path for s in specs],
        )
    steps = []
    for spec in stale:
        if spec.path == REFRESH_SPEC:
            steps.append(
                Step.run(
                    f"regenerate {spec.path} now (the toolkit's own refresh service)",
                    "sudo systemctl start nvidia-cdi-refresh.service",
                    layer=Layer.SYSTEM,
                )
            )
        else:
            steps.append(
                Step.run(
                    f"regenerate {spec.path} for driver {running}",
                    join(["sudo", "nvidia-ctk", "cdi", "generate", f"--output={spec.path}"]),
                    layer=Layer.SYSTEM,
                )
            )
    steps.append(
        Step.run(
            "keep it current after the next driver upgrade (NVIDIA Container Toolkit 1.18+, which "
            f"writes {REFRESH_SPEC})",
            "sudo systemctl enable --now nvidia-cdi-refresh.path",
            layer=Layer.SYSTEM,
        )
    )
    return Outcome.warn(
        f"A CDI spec names driver {', '.join(stale[0].driver_versions)}'s libraries, but driver "
        f"{running} runs: containers started through CDI fail to find those files",
        *[f"{s.path}: libraries of driver {', '.join(s.driver_versions)}" for s in stale],
        f"running driver: {running}",
        fix=Fix.of(*steps),
        subjects=Subjects(paths=[s.path for s in stale]),
    )
