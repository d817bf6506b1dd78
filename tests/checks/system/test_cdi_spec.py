"""system.cdi-spec: a CDI spec generated for another driver than the running one."""

from __future__ import annotations

from support import builders
from support.evaluate import finding, the

from gpucheck.model.finding import Status
from gpucheck.model.install_state import CdiSpec, InstallStateFacts
from gpucheck.model.snapshot import Snapshot


def with_specs(*specs: CdiSpec) -> Snapshot:
    snap = builders.workstation()  # driver 570.124.04
    snap.install_state = InstallStateFacts(cdi_specs=list(specs))
    return snap


def test_a_spec_for_the_running_driver_passes() -> None:
    f = the(
        with_specs(CdiSpec("/etc/cdi/nvidia.yaml", "nvidia.com/gpu", ["570.124.04"])),
        "system.cdi-spec",
    )
    assert f.status is Status.PASS


def test_a_spec_left_from_before_a_driver_upgrade_warns_and_regenerates_that_file() -> None:
    # Igalia/webkit-container-sdk#23: /etc/cdi/nvidia.yaml still named 535.161.07's libraries.
    f = the(
        with_specs(CdiSpec("/etc/cdi/nvidia.yaml", "nvidia.com/gpu", ["535.161.07"])),
        "system.cdi-spec",
    )
    assert f.status is Status.WARN
    assert "driver 535.161.07's libraries, but driver 570.124.04 runs" in f.title
    assert f.fix is not None
    assert "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in f.fix.text
    assert "sudo systemctl enable --now nvidia-cdi-refresh.path" in f.fix.text


def test_the_toolkits_own_spec_is_refreshed_by_its_service() -> None:
    f = the(
        with_specs(CdiSpec("/var/run/cdi/nvidia.yaml", "nvidia.com/gpu", ["565.57.01"])),
        "system.cdi-spec",
    )
    assert f.fix is not None
    assert "sudo systemctl start nvidia-cdi-refresh.service" in f.fix.text
    assert "cdi generate" not in f.fix.text


def test_no_spec_or_one_naming_no_driver_is_not_judged() -> None:
    assert finding(with_specs(), "system.cdi-spec") is None
    spec = CdiSpec("/etc/cdi/other.yaml", "vendor.com/device", [])
    assert finding(with_specs(spec), "system.cdi-spec") is None


def test_a_spec_path_from_the_snapshot_is_one_quoted_word_in_the_command() -> None:
    """A snapshot is data: a spec path holding shell syntax stays inside one word (a
    property test found it unquoted: `--output=/etc/cdi/$(touch PWNED).yaml` ran)."""
    f = the(
        with_specs(CdiSpec("/etc/cdi/$(touch PWNED).yaml", "nvidia.com/gpu", ["535.161.07"])),
        "system.cdi-spec",
    )
    assert f.fix is not None
    assert "sudo nvidia-ctk cdi generate '--output=/etc/cdi/$(touch PWNED).yaml'" in [
        s.command for s in f.fix.steps
    ]
