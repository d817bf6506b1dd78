"""System checks on the CUDA_* environment variables (CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING),
the probes' own health, fixes for every problem, and container access on a container host. Each
test starts from a healthy builder and changes the one fact it is about."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support import builders
from support import more_builders as mb
from support.evaluate import finding, the

from gpucheck import checks
from gpucheck.model.finding import Status
from gpucheck.model.snapshot import ContainerHostFacts, Snapshot

# --- system.cuda-visible-devices ---------------------------------------------------------------


def _visible(value: str | None, snap=None):  # type: ignore[no-untyped-def]
    snap = snap or builders.h100_node(8)
    if value is not None:
        snap.system.env["CUDA_VISIBLE_DEVICES"] = value
    return finding(snap, "system.cuda-visible-devices")


def test_cuda_visible_devices_unset_says_nothing() -> None:
    assert _visible(None) is None


def test_cuda_visible_devices_listing_every_gpu_passes() -> None:
    f = _visible("0,1,2,3,4,5,6,7")
    assert f is not None
    assert f.status is Status.PASS
    assert "all 8 GPUs" in f.title


@pytest.mark.parametrize("value", ["", "-1"])
def test_cuda_visible_devices_hiding_every_gpu_fails(value: str) -> None:
    f = _visible(value)
    assert f is not None
    assert f.status is Status.FAIL
    assert "0 of 8" in f.title or "all 8" in f.title
    assert f.fix and "CUDA_VISIBLE_DEVICES" in f.fix.text


@pytest.mark.parametrize("value", ["", "-1"])
def test_cuda_visible_devices_hiding_every_gpu_says_so(value: str) -> None:
    f = _visible(value)
    assert f is not None
    assert f.title == "CUDA_VISIBLE_DEVICES hides all 8 GPUs"
    assert f.fix and f.fix.commands[0] == "unset CUDA_VISIBLE_DEVICES"


def test_cuda_visible_devices_showing_some_is_info_naming_the_hidden() -> None:
    f = _visible("2,5")
    assert f is not None
    assert f.status is Status.INFO
    assert "shows 2 of 8 GPUs" in f.title
    hidden = f.evidence[-1]
    assert hidden.startswith("hidden: GPU 0 ")
    assert "GPU 2 " not in hidden and "GPU 5 " not in hidden
    assert "GPU 7 (NVIDIA H100 80GB HBM3, 00000000:88:00.0)" in hidden


def test_cuda_visible_devices_with_a_nonexistent_index_warns_cuda_stops_there() -> None:
    f = _visible("0,9")
    assert f is not None
    assert f.status is Status.WARN
    assert "CUDA sees 1 of 8" in f.title
    assert any("'9' matches no GPU" in e and "every entry after it" in e for e in f.evidence)
    assert f.fix and "export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in f.fix.text


def test_cuda_visible_devices_stops_at_the_first_bad_entry() -> None:
    f = _visible("1,9,2")
    assert f is not None
    assert f.status is Status.WARN
    assert "CUDA sees 1 of 8" in f.title  # 2 comes after the bad entry: ignored


def test_cuda_visible_devices_naming_only_a_nonexistent_gpu_fails() -> None:
    f = _visible("9")
    assert f is not None
    assert f.status is Status.FAIL
    assert "CUDA sees 0 of 8" in f.title
    assert any("'9' matches no GPU" in e for e in f.evidence)


def test_cuda_visible_devices_accepts_a_unique_gpu_uuid_prefix() -> None:
    f = _visible("GPU-00000003")
    assert f is not None
    assert f.status is Status.INFO
    assert "shows 1 of 8" in f.title
    assert "GPU 3 " not in f.evidence[-1]


def test_cuda_visible_devices_ambiguous_uuid_prefix_matches_no_gpu() -> None:
    f = _visible("GPU-0000000")  # a prefix of all eight UUIDs
    assert f is not None
    assert f.status is Status.FAIL
    assert any("'GPU-0000000' matches no GPU" in e for e in f.evidence)


def test_cuda_visible_devices_mig_uuid_selects_its_parent_gpu() -> None:
    snap = builders.node([builders.a100_mig(0), builders.h100(1)])
    f = _visible("MIG-00000002-1111-2222-3333-444444444444", snap)
    assert f is not None
    assert f.status is Status.INFO
    assert "shows 1 of 2" in f.title
    assert f.evidence[-1] == "hidden: GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0)"
    ctx = checks.Context(snap)
    assert ctx.visibility.mig_entries == 1
    assert [g.index for g in ctx.visibility.visible] == [0]


def test_cuda_visible_devices_unknown_mig_uuid_fails() -> None:
    snap = builders.node([builders.a100_mig(0)])
    f = _visible("MIG-99999999-1111-2222-3333-444444444444", snap)
    assert f is not None
    assert f.status is Status.FAIL


def test_cuda_visible_devices_without_a_gpu_list_skips() -> None:
    snap = mb.nvml_fails(builders.h100_node(2), "DriverNotLoaded")
    f = _visible("0", snap)
    assert f is not None
    assert f.status is Status.SKIP


# --- system.cuda-launch-blocking ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["1", "yes"])
def test_cuda_launch_blocking_on_warns(value: str) -> None:
    snap = builders.h100_node(1)
    snap.system.env["CUDA_LAUNCH_BLOCKING"] = value
    f = the(snap, "system.cuda-launch-blocking")
    assert f.status is Status.WARN
    assert f"CUDA_LAUNCH_BLOCKING={value!r}" in f.evidence
    assert f.fix and "unset CUDA_LAUNCH_BLOCKING" in f.fix.text


@pytest.mark.parametrize("value", [None, "0", ""])
def test_cuda_launch_blocking_off_says_nothing(value: str | None) -> None:
    snap = builders.h100_node(1)
    if value is not None:
        snap.system.env["CUDA_LAUNCH_BLOCKING"] = value
    assert finding(snap, "system.cuda-launch-blocking") is None


# --- system.probes -----------------------------------------------------------------------------


def test_probes_all_ok_says_nothing() -> None:
    assert finding(builders.h100_node(1), "system.probes") is None


def test_a_failed_library_probe_warns_with_its_error() -> None:
    snap = mb.probe(builders.h100_node(1), "libraries", "timeout", "timed out after 10 s")
    f = the(snap, "system.probes")
    assert f.status is Status.WARN
    assert f.evidence == ["libraries probe: timeout: timed out after 10 s"]
    assert f.fix and "gpucheck snapshot" in f.fix.text


def test_nvml_probe_failures_are_left_to_driver_nvml() -> None:
    snap = mb.probe(builders.h100_node(1), "nvml", "timeout", "timed out after 10 s in nvmlInit")
    assert finding(snap, "system.probes") is None
    assert the(snap, "driver.nvml").status is Status.FAIL


# --- fixes for every problem -------------------------------------------------------------------


SCENARIOS: dict[str, Callable[[], Snapshot]] = {
    "no_gpu": builders.no_gpu_machine,
    "docker_without_gpu": lambda: mb.container_without_gpu("docker"),
    "k8s_without_gpu": lambda: mb.container_without_gpu("kubernetes", "kubepods"),
    "hidden_bus": mb.hidden_bus_container,
    "wsl": mb.wsl_machine,
    "module_not_loaded": lambda: mb.module_not_loaded(builders.h100_node(2)),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_problem_in_these_scenarios_has_a_fix(name: str) -> None:
    findings = checks.run(checks.Context(SCENARIOS[name]()))
    problems = [f for f in findings if f.status in (Status.WARN, Status.FAIL)]
    for f in problems:
        assert f.fix and f.fix.text.strip(), f"{name}: {f.id} has no fix"


# --- system.container-gpu-access on a container host -------------------------------------------


def _docker_host(*toolkit: str) -> Snapshot:
    snap = builders.workstation()
    snap.system.container_host = ContainerHostFacts(engines=["docker"], toolkit=list(toolkit))
    return snap


def test_a_half_installed_container_toolkit_fails_with_the_install() -> None:
    # nvidia-docker#1243: nvidia-container-toolkit installed, nvidia-container-cli missing;
    # docker run --gpus: could not select device driver "" with capabilities: [[gpu]].
    f = the(_docker_host("nvidia-container-toolkit"), "system.container-gpu-access")
    assert f.status is Status.FAIL
    assert "missing: nvidia-container-cli (libnvidia-container-tools)" in f.evidence
    assert f.fix and "sudo apt-get install -y nvidia-container-toolkit" in f.fix.commands
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in f.fix.commands


def test_docker_without_the_toolkit_warns_with_the_install_and_with_it_passes() -> None:
    # No toolkit, no nvidia runtime, no CDI spec: `docker run --gpus` cannot work, a warning with the install.
    f = the(_docker_host(), "system.container-gpu-access")
    assert f.status is Status.WARN
    assert "NVIDIA Container Toolkit: not installed" in f.evidence
    assert f.fix and "sudo apt-get install -y nvidia-container-toolkit" in f.fix.commands
    # With a CDI spec (podman, or docker's CDI support), it is information only.
    cdi = _docker_host()
    assert cdi.system.container_host is not None
    cdi.system.container_host.cdi_specs = ["/etc/cdi/nvidia.yaml"]
    assert the(cdi, "system.container-gpu-access").status is Status.INFO
    full = _docker_host("nvidia-ctk", "nvidia-container-cli", "nvidia-container-runtime")
    assert the(full, "system.container-gpu-access").status is Status.PASS
    assert finding(builders.workstation(), "system.container-gpu-access") is None  # no engine


def test_a_runtime_registered_outside_usr_bin_is_not_missing() -> None:
    # The GPU Operator registers /usr/local/nvidia/toolkit/nvidia-container-runtime in
    # daemon.json: that program is what dockerd runs, though /usr/bin has none: it counts as installed.
    snap = _docker_host("nvidia-ctk", "nvidia-container-cli")
    host = snap.system.container_host
    assert host is not None
    host.docker_runtimes = ["nvidia"]
    host.docker_nvidia_runtime_path = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    host.docker_nvidia_runtime_found = True
    assert the(snap, "system.container-gpu-access").status is Status.PASS
    host.docker_nvidia_runtime_found = False
    f = the(snap, "system.container-gpu-access")
    assert f.status is Status.FAIL
    assert (
        "missing: /usr/local/nvidia/toolkit/nvidia-container-runtime, which daemon.json names"
        in f.evidence
    )


def test_nova_core_bound_to_the_gpu_fails_like_nouveau_with_its_own_blacklist() -> None:
    # beclab/Olares#3963: Ubuntu 26.04's 7.0 kernel, "NVRM: GPU ... is already bound to NovaCore".
    snap = builders.workstation()
    snap.system.nova_core_loaded = True
    snap.system.nouveau_loaded = False
    snap.system.pci_gpus[0].driver = "NovaCore"
    f = the(snap, "system.nouveau")
    assert f.status is Status.FAIL
    assert f.title.startswith("nova_core, not NVIDIA's driver")
    assert f.fix is not None
    assert f.fix.commands == [
        "printf 'blacklist nova_core\\nblacklist nova_drm\\n' | sudo tee "
        "/etc/modprobe.d/blacklist-nova-core.conf",
        "sudo update-initramfs -u",
    ]
    assert "nouveau" not in f.fix.text
