"""The driver's helpers every CUDA program relies on: the nvidia-uvm module, and persistence
(the daemon that keeps the driver initialised between jobs on server GPUs)."""

from __future__ import annotations

from gpucheck.checks.context import Context, gpu_label, gpu_refs, indices
from gpucheck.checks.driver.fixes import UVM_FIX
from gpucheck.checks.registry import check
from gpucheck.checks.system.machine import container_fix
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step


@check("driver.uvm", "nvidia-uvm (needed by every CUDA program) is present")
def uvm(ctx: Context) -> Outcome | None:
    sysf = ctx.snapshot.system
    if sysf.os != "Linux" or sysf.wsl or not sysf.nvidia_module_loaded:
        return None
    node = next((n for n in sysf.device_nodes if n.path == "/dev/nvidia-uvm"), None)
    if node is None:
        return Outcome.skip("Whether /dev/nvidia-uvm exists is not known")
    driver = ctx.snapshot.cuda.driver
    if node.exists or driver.init_result == 0:
        return Outcome.passed("nvidia-uvm is loaded")
    loaded = "nvidia_uvm" in sysf.nvidia_modules
    evidence = [
        "/dev/nvidia-uvm does not exist",
        "nvidia_uvm module " + ("loaded" if loaded else "not loaded"),
    ]
    if driver.init_error_name:
        evidence.append(f"cuInit: {driver.init_error_name}")
    fix = UVM_FIX
    if driver.init_result not in (None, 0) and not sysf.container:
        return Outcome.fail("nvidia-uvm is missing: CUDA cannot start", *evidence, fix=fix)
    if sysf.container:
        # Inside a container nothing can load it or create the node: CUDA cannot start.
        return Outcome.fail(
            "nvidia-uvm is missing in this container: CUDA cannot start",
            *evidence,
            fix=container_fix(sysf.container),
        )
    return Outcome.warn(
        "nvidia-uvm is not set up yet: the first CUDA program must load it (through the setuid "
        "nvidia-modprobe helper; without that helper, or unprivileged, CUDA fails to start)",
        *evidence,
        fix=fix,
    )


@check("driver.persistence-mode", "persistence mode is on for server GPUs")
def persistence_mode(ctx: Context) -> Outcome | None:
    if ctx.snapshot.system.os != "Linux" or not ctx.gpus:
        return None
    server = [
        g for g in ctx.healthy_handles if g.brand in ("Tesla", "NVIDIA") and not g.display_active
    ]
    if not server:
        return None
    off = [g for g in server if g.persistence_mode is False]
    if all(g.persistence_mode is None for g in server):
        return Outcome.skip("Persistence mode: not reported by these GPUs")
    fabric = ctx.snapshot.system.fabric
    daemon = fabric.persistenced_running if fabric else None
    said: dict[bool | None, list[str]] = {
        True: ["nvidia-persistenced: running"],
        False: ["nvidia-persistenced: not running"],
    }
    if not off:
        known = [g for g in server if g.persistence_mode is not None]
        silent = len(server) - len(known)
        return Outcome.passed(
            f"Persistence mode on for {len(known)} data-centre GPU(s)",
            *([f"not reported by {silent} GPU(s)"] if silent else []),
            *said.get(daemon, []),
            *(
                ["set by nvidia-smi -pm 1 (legacy, lost at reboot), not by the daemon"]
                if daemon is False
                else []
            ),
        )
    host = ctx.snapshot.system.container_host
    containers = bool(host and (host.toolkit or host.engines))
    return Outcome.warn(
        f"Persistence mode is off on {len(off)} data-centre GPU(s): every CUDA start pays the "
        "driver's initialisation, and GPU state resets between jobs"
        + (
            "; on this container host each container start initialises the GPUs again "
            "(slow or timing-out container starts)"
            if containers
            else ""
        ),
        *[gpu_label(g) for g in off],
        *said.get(daemon, []),
        fix=Fix.of(
            Step.run(
                "enable the persistence daemon",
                "sudo systemctl enable --now nvidia-persistenced",
                gpus=gpu_refs(off),
            ),
            OR,
            Step.run("turn it on", f"sudo nvidia-smi -i {indices(off)} -pm 1", gpus=gpu_refs(off)),
        ),
    )
