"""System checks: is there a GPU at all, and is the environment set up to let CUDA see it."""

from __future__ import annotations

from gpucheck.checks.context import Context, gpu_label
from gpucheck.checks.registry import check
from gpucheck.checks.system.container_host import container_host, docker_runtime
from gpucheck.model.distros import linux_family
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.shell import quote


def container_steps(kind: str | None) -> list[Step]:
    """How a container is given the host's GPUs, by container engine."""
    if kind == "kubernetes":
        return [
            Step.manual(
                "request the GPU in the pod spec (resources: limits: nvidia.com/gpu: 1) on a "
                "node running the NVIDIA device plugin (or GPU Operator)"
            )
        ]
    if kind == "podman":
        return [
            Step.run(
                "on the host, write the CDI spec of its GPUs",
                "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
            ),
            Step.manual(
                "start the container with the GPU passed in: "
                "podman run --device nvidia.com/gpu=all ..."
            ),
        ]
    return [
        *docker_runtime(
            "on the host (with the NVIDIA Container Toolkit), register its runtime with Docker"
        ),
        Step.manual("start the container with the GPU passed in: docker run --gpus all ..."),
    ]


def container_fix(kind: str | None) -> Fix:
    return Fix.of(*container_steps(kind))


@check("system.gpu-present", "an NVIDIA GPU is on this machine (PCI bus, NVML)")
def gpu_present(ctx: Context) -> Outcome:
    sysf = ctx.snapshot.system
    pci = sysf.pci_gpus
    if pci:
        names = [f"{d.name or 'device ' + d.device_id} at {d.address}" for d in pci]
        return Outcome.passed(
            f"{len(pci)} NVIDIA GPU{'s' if len(pci) > 1 else ''} on the PCI bus",
            *names,
        )
    if ctx.snapshot.nvml.gpus:
        gpus = ctx.snapshot.nvml.gpus
        return Outcome.passed(
            f"{len(gpus)} NVIDIA GPU{'s' if len(gpus) > 1 else ''} reported by the driver",
            *[gpu_label(g) for g in gpus],
        )
    if sysf.wsl and ctx.has_gpu is None:
        return Outcome.skip(
            "WSL2: GPUs are not on a PCI bus here; the driver's answer below decides"
        )
    if ctx.has_gpu is False:
        where = f", as seen from this {sysf.container} container" if sysf.container else ""
        return Outcome.fail(
            "This machine has no NVIDIA GPU",
            f"no NVIDIA (vendor 0x10de) display or 3D controller among the "
            f"{sysf.pci_device_count} PCI devices{where}",
            fix=Fix.of(
                Step.manual(
                    "run on a machine with an NVIDIA GPU (a GPU cloud instance or node); in a "
                    "virtual machine, attach the GPU to it first (PCI passthrough or a vGPU "
                    "profile)",
                    Layer.JOB,
                )
            ),
        )
    if sysf.container:
        return Outcome.fail(
            f"No NVIDIA GPU visible in this {sysf.container} container",
            f"the PCI bus is hidden here ({sysf.container_evidence}) and the driver sees no GPU",
            "no /dev/nvidia* device nodes" if not _any_node(ctx) else "device nodes exist",
            fix=Fix.of(
                *container_steps(sysf.container),
                OR,
                Step.manual(
                    "if the host itself has no NVIDIA GPU, run the job on a GPU node", Layer.JOB
                ),
            ),
        )
    where = (  # a bus that lists nothing at all is a restricted sysfs (some sandboxes)
        "/sys/bus/pci lists no device at all (a restricted sysfs)"
        if sysf.pci_scanned
        else "/sys/bus/pci is not readable"
    )
    return Outcome.skip(
        f"Could not look for GPUs: {where}",
        "Without it, the driver checks below say whether a GPU is there.",
    )


def _any_node(ctx: Context) -> bool:
    return any(n.exists for n in ctx.snapshot.system.device_nodes if n.path != "/dev/dxg")


@check("system.container-gpu-access", "a container was given the host's GPUs")
def container_access(ctx: Context) -> Outcome | None:
    sysf = ctx.snapshot.system
    if not sysf.container:
        return container_host(ctx)
    if not sysf.pci_gpus:
        return None  # system.gpu-present says whether there is a GPU at all
    if ctx.nvml_ok or _any_node(ctx):
        return Outcome.passed(f"Running in a {sysf.container} container with GPU access")
    return Outcome.fail(
        f"The host's GPU is not passed into this {sysf.container} container",
        f"{len(sysf.pci_gpus)} NVIDIA GPU(s) on the host's PCI bus",
        "but no /dev/nvidia* device nodes and no usable NVIDIA driver library inside",
        fix=container_fix(sysf.container),
    )


# The open-source drivers that claim an NVIDIA GPU before nvidia.ko can: nouveau, and nova_core,
# its Rust successor, which some distribution kernels build as a module (Ubuntu 26.04's 7.0
# kernel: "NVRM: GPU 0000:01:00.0 is already bound to NovaCore", beclab/Olares#3963). Each is
# blacklisted by its own module names.
OPEN_DRIVERS = {
    "nouveau": ("nouveau",),
    "nova_core": ("nova_core", "nova_drm"),
}


def _open_driver(name: str | None) -> str | None:
    """nouveau / nova_core for a PCI device's bound driver (sysfs says nova-core or NovaCore)."""
    key = (name or "").lower().replace("-", "_")
    if key == "novacore":
        key = "nova_core"
    return key if key in OPEN_DRIVERS else None


@check("system.nouveau", "no open-source driver (nouveau, nova_core) holds the GPU")
def nouveau(ctx: Context) -> Outcome | None:
    sysf = ctx.snapshot.system
    bound = [(d, drv) for d in sysf.pci_gpus if (drv := _open_driver(d.driver))]
    loaded = [
        name
        for name, flag in (("nouveau", sysf.nouveau_loaded), ("nova_core", sysf.nova_core_loaded))
        if flag
    ]
    culprits = sorted({*loaded, *(drv for _, drv in bound)})
    if not culprits:
        if not sysf.pci_gpus:
            return None
        if sysf.nouveau_loaded is None:
            return Outcome.skip("Could not tell whether nouveau is loaded (no module list)")
        return Outcome.passed("Neither nouveau nor nova_core is loaded")
    evidence = [f"the {name} kernel module is loaded" for name in loaded]
    evidence += [f"{d.address} is bound to {d.driver}" for d, _ in bound]
    modules = [m for name in culprits for m in OPEN_DRIVERS[name]]
    lines = "\\n".join(f"blacklist {m}" for m in modules)
    if "nouveau" in culprits:
        lines += "\\noptions nouveau modeset=0"
    conf = "/etc/modprobe.d/blacklist-" + "-".join(culprits).replace("_", "-") + ".conf"
    return Outcome.fail(
        f"{' and '.join(culprits)}, not NVIDIA's driver, holds the GPU (CUDA cannot run on it)",
        *evidence,
        fix=Fix.of(
            Step.run(
                f"keep {' and '.join(culprits)} from loading",
                "printf " + quote(lines + "\\n") + " | sudo tee " + quote(conf),
                layer=Layer.DRIVER,
            ),
            Step.run(
                "rebuild the initramfs (on RHEL/Fedora: sudo dracut --force)",
                "sudo dracut --force"
                if linux_family(sysf.os_release) == "rpm"
                else "sudo update-initramfs -u",
                layer=Layer.DRIVER,
            ),
            Step.reboot(),
        ),
    )


@check(
    "system.cuda-visible-devices",
    "CUDA_VISIBLE_DEVICES does not hide GPUs or name ones that do not exist",
)
def cuda_visible_devices(ctx: Context) -> Outcome | None:
    value = ctx.snapshot.system.env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    if not ctx.gpus:
        return Outcome.skip(f"CUDA_VISIBLE_DEVICES={value!r}: no GPU list to compare it with")
    vis = ctx.visibility
    total = len(ctx.gpus)
    shown = f"CUDA_VISIBLE_DEVICES={value!r}"
    indices = ",".join(str(g.index) for g in ctx.gpus)
    if vis.invalid_token is not None:
        evidence = [
            shown,
            f"{vis.invalid_token!r} matches no GPU (indices {indices}, or GPU-/MIG- UUIDs); "
            "CUDA ignores it and every entry after it",
        ]
        status = Outcome.fail if not vis.visible else Outcome.warn
        return status(
            f"CUDA_VISIBLE_DEVICES names a GPU that does not exist: CUDA sees "
            f"{len(vis.visible)} of {total}",
            *evidence,
            fix=Fix.of(
                Step.set_env("CUDA_VISIBLE_DEVICES", indices),
                OR,
                Step.unset_env("CUDA_VISIBLE_DEVICES"),
            ),
        )
    if not vis.visible:
        return Outcome.fail(
            f"CUDA_VISIBLE_DEVICES hides all {total} GPU{'s' if total > 1 else ''}",
            shown,
            fix=Fix.of(
                Step.unset_env("CUDA_VISIBLE_DEVICES"),
                OR,
                Step.set_env("CUDA_VISIBLE_DEVICES", indices, "list the GPUs to use"),
            ),
        )
    if len(vis.visible) < total:
        hidden = [g for g in ctx.gpus if g not in vis.visible]
        return Outcome.info(
            f"CUDA_VISIBLE_DEVICES shows {len(vis.visible)} of {total} GPUs",
            shown,
            "hidden: " + ", ".join(gpu_label(g) for g in hidden),
        )
    return Outcome.passed(f"CUDA_VISIBLE_DEVICES shows all {total} GPUs", shown)


@check("system.cuda-launch-blocking", "CUDA_LAUNCH_BLOCKING is not left on")
def cuda_launch_blocking(ctx: Context) -> Outcome | None:
    value = ctx.snapshot.system.env.get("CUDA_LAUNCH_BLOCKING")
    if value is None or value.strip() in ("", "0"):
        return None
    return Outcome.warn(
        "CUDA_LAUNCH_BLOCKING is on: every kernel launch waits for the GPU (a silent slowdown)",
        f"CUDA_LAUNCH_BLOCKING={value!r}",
        fix=Fix.of(
            Step.unset_env(
                "CUDA_LAUNCH_BLOCKING", "unset it (set it only while debugging a CUDA error)"
            )
        ),
    )


@check("system.probes", "gpucheck could gather the system and library facts")
def probes(ctx: Context) -> Outcome | None:
    # NVML and libcuda probe failures are judged by their own checks; these are the rest.
    # A framework that crashed or hung in --deep is judged by frameworks.smoke-test.
    bad = [
        p
        for p in ctx.snapshot.probes
        if (p.name in ("system", "libraries", "frameworks") and p.status != "ok")
        or (p.name == "frameworks_deep" and p.status in ("error", "skipped"))
    ]
    if not bad:
        return None
    return Outcome.warn(
        "Some facts could not be gathered",
        *[f"{p.name} probe: {p.status}: {p.error}" for p in bad],
        fix=Fix.of(
            Step.info("the findings that depend on these facts are marked skipped or unknown"),
            Step.run(
                "if this repeats, report it with a snapshot attached",
                "gpucheck snapshot --redact -o gpucheck-snapshot.json",
            ),
        ),
    )
