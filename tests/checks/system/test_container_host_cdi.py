"""system.container-gpu-access on hosts whose engines use CDI (podman, containerd): NVIDIA's
CDI support page installs only the toolkit's base components (nvidia-ctk, from
nvidia-container-toolkit-base) for them, with no nvidia-container-cli; docker --gpus still
needs the cli, which its runtime hook runs."""

from __future__ import annotations

from support import builders
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import ContainerHostFacts, Snapshot


def _host(engines: list[str], toolkit: list[str], cdi_specs: list[str]) -> Snapshot:
    snap = builders.workstation()
    snap.system.container_host = ContainerHostFacts(
        engines=engines, toolkit=toolkit, cdi_specs=cdi_specs
    )
    return snap


def test_podman_with_the_base_toolkit_and_a_cdi_spec_passes() -> None:
    snap = _host(["podman"], ["nvidia-ctk"], ["/etc/cdi/nvidia.yaml"])
    assert the(snap, "system.container-gpu-access").status is Status.PASS


def test_podman_with_the_base_toolkit_and_no_spec_warns_to_generate_one() -> None:
    f = the(_host(["podman"], ["nvidia-ctk"], []), "system.container-gpu-access")
    assert f.status is Status.WARN
    assert "no CDI spec" in f.title
    assert f.fix is not None
    assert f.fix.commands == ["sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"]


def test_docker_without_nvidia_container_cli_still_fails() -> None:
    snap = _host(["docker"], ["nvidia-ctk"], ["/etc/cdi/nvidia.yaml"])
    f = the(snap, "system.container-gpu-access")
    assert f.status is Status.FAIL
    assert "nvidia-container-cli (libnvidia-container-tools)" in " ".join(f.evidence)


FULL_TOOLKIT = [
    "nvidia-container-cli",
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
    "nvidia-ctk",
]


def test_containerd_with_the_full_toolkit_and_no_spec_passes() -> None:
    # The full toolkit's runtime and hook inject the GPUs without CDI (legacy mode): NVIDIA's
    # device plugin asks only for nvidia-container-runtime as the default low-level runtime
    # (NVIDIA/k8s-device-plugin README, Prerequisites).
    for engines in (["containerd"], ["containerd", "podman"]):
        f = the(_host(engines, FULL_TOOLKIT, []), "system.container-gpu-access")
        assert f.status is Status.PASS, engines
        assert any("no CDI spec" in line for line in f.evidence)


def test_podman_alone_with_the_full_toolkit_and_no_spec_still_needs_one() -> None:
    # Podman uses no nvidia runtime unless configured by hand, and the toolkit's .deb installs
    # no OCI hook for it (NVIDIA/nvidia-container-toolkit#17): its GPU path is CDI.
    f = the(_host(["podman"], FULL_TOOLKIT, []), "system.container-gpu-access")
    assert f.status is Status.WARN
    assert f.fix is not None and any("nvidia-ctk cdi generate" in c for c in f.fix.commands)
