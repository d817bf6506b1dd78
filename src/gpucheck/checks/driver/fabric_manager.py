"""NVSwitch systems' fabric manager (the driver's service that trains the NVSwitch fabric).

On an HGX/DGX board the GPUs reach each other through NVSwitches, and CUDA does not start
(cuInit: CUDA_ERROR_SYSTEM_NOT_READY) until the fabric manager, of exactly the driver's version,
has trained the fabric. (NVLink links and peer-to-peer: gpus/interconnect.py.)
"""

from __future__ import annotations

from gpucheck.checks.context import Context, gpu_refs, gpu_subjects, sentence
from gpucheck.checks.registry import check
from gpucheck.model.distros import linux_family
from gpucheck.model.fabric import FabricHostFacts
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.fix import Change, Fix, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

FABRIC_STARTED = ("not_started", "in_progress", "completed")


def nvswitch_system(ctx: Context) -> bool:
    fab = ctx.snapshot.system.fabric
    host = fab is not None and bool(fab.nvswitch_pci or fab.nvswitch_nodes)
    return host or any(g.fabric_state in FABRIC_STARTED for g in ctx.gpus)


def install_fabric_manager(ctx: Context, driver: str) -> Step:
    """The step that installs and starts the fabric manager of exactly this driver release,
    with this machine's package manager. Its version must equal the driver's; NVIDIA's packages
    carry it: nvidia-fabricmanager-BRANCH on Ubuntu/Debian, nvidia-fabric-manager on the RHEL
    family (github.com/NVIDIA/yum-packaging-fabric-manager, fabricmanager.spec, which renamed
    nvidia-fabricmanager-BRANCH to it)."""
    start = "sudo systemctl enable --now nvidia-fabricmanager"
    if linux_family(ctx.snapshot.system.os_release) == "rpm":
        return Step.run(
            f"install the fabric manager of driver {driver} exactly (RHEL family: "
            f"nvidia-fabric-manager {driver}; `dnf list --showduplicates nvidia-fabric-manager` "
            "lists the versions), then start it",
            join(["sudo", "dnf", "install", "-y", f"nvidia-fabric-manager-{driver}"])
            + f" && {start}",
            Tool.DNF,
            changes=[Change("nvidia-fabric-manager", None, driver)],
            layer=Layer.DRIVER,
        )
    branch = driver.split(".")[0]
    # The version pinned: with the branch's package already installed at another release, a
    # bare install changes nothing. The revision differs by repository: NVIDIA's names it
    # DRIVER-1 (nvidia-fabricmanager-460_460.32.03-1_amd64.deb: NVIDIA/apt-packaging-fabric-
    # manager's README), Ubuntu's archive DRIVER-0ubuntu... (packages.ubuntu.com), so the pin is
    # the driver's release with any revision, an apt version pattern (one quoted word).
    package = f"nvidia-fabricmanager-{branch}"
    return Step.run(
        f"install the fabric manager of driver {driver} exactly (any packaging revision of it: "
        f"`apt-cache madison {package}` lists the versions there are), then start it",
        join(["sudo", "apt-get", "install", "-y", "--allow-downgrades", f"{package}={driver}-*"])
        + f" && {start}",
        Tool.APT,
        changes=[Change(f"nvidia-fabricmanager-{branch}", None, driver)],
        layer=Layer.DRIVER,
    )


JOURNAL = Step.run(
    "read why it stopped or what it reports",
    "sudo journalctl -u nvidia-fabricmanager -b --no-pager | tail -50",
    layer=Layer.DRIVER,
)


def fabric_cause(ctx: Context) -> tuple[str, list[str], Fix] | None:
    """The exact reason an NVSwitch system's fabric is not ready, from what was gathered
    (None: not an NVSwitch system, or nothing found wrong)."""
    if not nvswitch_system(ctx):
        return None
    fab = ctx.snapshot.system.fabric or FabricHostFacts()
    driver = ctx.driver_version
    evidence = _evidence(ctx, fab)
    not_started = [g for g in ctx.gpus if g.fabric_state == "not_started"]
    if ctx.snapshot.system.container:
        # The fabric manager runs on the host: a container's files cannot say how it is.
        if not not_started:
            return None
        title = (
            f"{len(not_started)} GPU(s) are not in the NVSwitch fabric (state: not started): "
            "the host's fabric manager is not running, or not of the driver's version"
        )
        on_host = Step.manual(
            "on the host: see that nvidia-fabricmanager runs, at the driver's version "
            "(systemctl status nvidia-fabricmanager; journalctl -u nvidia-fabricmanager)",
            Layer.DRIVER,
        )
        return title, evidence, Fix.of(on_host)
    installed = fab.fabricmanager_version is not None or bool(fab.fabricmanager_unit)
    if not installed:
        fix = (
            Fix.of(install_fabric_manager(ctx, driver))
            if driver
            else Fix.of(Step.manual("install it"))
        )
        return "the fabric manager (nvidia-fabricmanager) is not installed", evidence, fix
    fm = fab.fabricmanager_version
    if fm and driver and fm != driver:
        title = (
            f"the fabric manager is version {fm} and the driver {driver}: it refuses to run "
            "unless they are equal"
        )
        return title, evidence, Fix.of(install_fabric_manager(ctx, driver), JOURNAL)
    if fab.fabricmanager_running is False:
        fix = Fix.of(
            Step.run(
                "start the fabric manager, and at every boot",
                "sudo systemctl enable --now nvidia-fabricmanager",
                layer=Layer.DRIVER,
            ),
            JOURNAL,
        )
        return "the fabric manager is installed but not running", evidence, fix
    if not_started:
        title = (
            f"the fabric manager runs but {len(not_started)} GPU(s) are not in the fabric "
            "(state: not started)"
        )
        restart = Step.run(
            "restart it", "sudo systemctl restart nvidia-fabricmanager", layer=Layer.DRIVER
        )
        return title, evidence, Fix.of(JOURNAL, restart)
    failed = [g for g in ctx.gpus if g.fabric_state == "completed" and g.fabric_status]
    if failed:
        title = f"fabric training failed on {len(failed)} GPU(s)"
        hw = Step.hardware("if it persists, the NVSwitch board needs service", gpu_refs(failed))
        return title, evidence, Fix.of(JOURNAL, Step.reboot("reset the node"), hw)
    return None


def _evidence(ctx: Context, fab: FabricHostFacts) -> list[str]:
    out = [
        f"NVSwitch: {len(fab.nvswitch_pci)} PCI device(s), {len(fab.nvswitch_nodes)} device node(s)"
    ]
    if fab.fabricmanager_version:
        out.append(f"fabric manager: {fab.fabricmanager_package} {fab.fabricmanager_version}")
    else:
        out.append("fabric manager package: none found (dpkg)")
    service = {True: "running", False: "not running", None: "unknown"}[fab.fabricmanager_running]
    enabled = {True: "enabled", False: "not enabled", None: "unknown"}[fab.fabricmanager_enabled]
    out.append(f"nvidia-fabricmanager service: {service}, {enabled} at boot")
    out.append(f"driver: {ctx.driver_version or 'unknown'}")
    # GPUs grouped by what their fabric says: one line for a board whose GPUs agree.
    groups: dict[str, list[int]] = {}
    for g in ctx.gpus:
        if g.fabric_state is not None:
            status = "" if not g.fabric_status else f", status {g.fabric_status} (an NVML error)"
            groups.setdefault(f"{g.fabric_state}{status}", []).append(g.index)
    for said, which in groups.items():
        out.append(f"fabric {said}: GPU {', '.join(map(str, which))}")
    return out


@check(
    "driver.fabric-manager",
    "NVSwitch systems: the fabric manager runs, at the driver's version, and the fabric is up",
)
def fabric_manager(ctx: Context) -> Outcome | None:
    if not nvswitch_system(ctx):
        return None
    fab = ctx.snapshot.system.fabric or FabricHostFacts()
    cause = fabric_cause(ctx)
    known = [g for g in ctx.gpus if g.fabric_state is not None]
    states = [g.fabric_state for g in known]
    trained = bool(known) and all(
        g.fabric_state == "completed" and not g.fabric_status for g in known
    )
    cuda_802 = ctx.snapshot.cuda.driver.init_error_name == "CUDA_ERROR_SYSTEM_NOT_READY"
    if cause is not None:
        title, evidence, fix = cause
        # With every GPU's fabric trained and CUDA starting, a stopped or mismatched fabric
        # manager hurts only later (a GPU reset, the next boot): a warning, not a failure.
        status = Status.WARN if trained and not cuda_802 else Status.FAIL
        title = sentence(title)
        if status is Status.WARN:
            title += " (the fabric is trained now; the next reset or boot will not be)"
        return Outcome.make(status, title, tuple(evidence), fix, gpu_subjects(ctx.gpus))
    in_progress = [g for g in ctx.gpus if g.fabric_state == "in_progress"]
    if in_progress:
        return Outcome.warn(
            f"The NVSwitch fabric is still training on {len(in_progress)} GPU(s): CUDA "
            "programs started now fail with CUDA_ERROR_SYSTEM_NOT_READY",
            *_evidence(ctx, fab),
            fix=Fix.of(Step.manual("wait a minute after boot, then run gpucheck again")),
        )
    version = fab.fabricmanager_version or "(version unknown)"
    if not states:  # NVSwitch GPUs before Hopper do not report a fabric state
        return Outcome.passed(
            f"NVSwitch system: fabric manager {version}, no fault seen (the GPUs report no "
            "fabric state)",
            *_evidence(ctx, fab),
        )
    return Outcome.passed(
        f"NVSwitch fabric up: fabric manager {version}, {len(states)} GPU(s) trained",
        *_evidence(ctx, fab),
    )
