"""The fabric manager's version on RPM systems: no dpkg status entry, a real RPM database in the
fake root (built with the host's rpm and rpmbuild: tests/sim/rpmdb.py), read by the probe with
`rpm -qa` under a time bound.

Package names: NVIDIA's RPM spec names it nvidia-fabric-manager, which Provides and Obsoletes
the earlier nvidia-fabricmanager-BRANCH (github.com/NVIDIA/yum-packaging-fabric-manager,
fabricmanager.spec; commit c7977a3 "Rename package name from nvidia-fabricmanager-XXX to
nvidia-fabric-manager"); RHEL repository files are named nvidia-fabric-manager-550.90.07-1.x86_64.rpm;
an Amazon Linux 2023 package list shows nvidia-fabricmanager-580.126.09-1 beside
nvidia-fabric-manager-devel-580.126.09-1."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import sim.scenario as sim
from sim import rpmdb
from sim.fabric import hgx_fabric
from support.sim_doctor import doctor

from gpucheck.probes.fabric import probe_fabric_host, rpm_fabricmanager

SWITCHES = ["0000:05:00.0"]


def test_the_rpm_s_version_is_read_on_an_nvswitch_system(tmp_path: Path) -> None:
    rpmdb.install(tmp_path, "nvidia-fabric-manager", "570.86.15-1")
    rpmdb.install(tmp_path, "nvidia-fabric-manager-devel", "570.86.15-1")
    facts = probe_fabric_host(tmp_path, in_container=False, nvswitch_pci=SWITCHES)
    assert (facts.fabricmanager_package, facts.fabricmanager_version) == (
        "nvidia-fabric-manager",
        "570.86.15",
    )


def test_the_older_and_amazon_linux_names_count_the_devel_package_does_not(
    tmp_path: Path,
) -> None:
    rpmdb.install(tmp_path, "nvidia-fabric-manager-devel", "580.126.09-1")
    assert rpm_fabricmanager(tmp_path) == (None, None)
    rpmdb.install(tmp_path, "nvidia-fabricmanager", "580.126.09-1")
    assert rpm_fabricmanager(tmp_path) == ("nvidia-fabricmanager", "580.126.09")
    other = tmp_path / "branch"
    rpmdb.install(other, "nvidia-fabricmanager-460", "460.32.03-1")
    assert rpm_fabricmanager(other) == ("nvidia-fabricmanager-460", "460.32.03")


def test_a_database_under_usr_lib_sysimage_is_found(tmp_path: Path) -> None:
    rpmdb.install(tmp_path, "nvidia-fabric-manager", "590.48.01-1", "/usr/lib/sysimage/rpm")
    assert rpm_fabricmanager(tmp_path) == ("nvidia-fabric-manager", "590.48.01")


def test_rpm_is_not_run_without_nvswitches_or_the_unit_file(tmp_path: Path) -> None:
    rpmdb.install(tmp_path, "nvidia-fabric-manager", "570.86.15-1")
    facts = probe_fabric_host(tmp_path, in_container=False, nvswitch_pci=[])
    assert facts.fabricmanager_version is None and facts.fabricmanager_unit is False
    unit = tmp_path / "usr/lib/systemd/system/nvidia-fabricmanager.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    facts = probe_fabric_host(tmp_path, in_container=False, nvswitch_pci=[])
    assert facts.fabricmanager_version == "570.86.15"  # the unit file alone is reason enough


def test_without_rpm_on_path_the_version_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rpmdb.install(tmp_path, "nvidia-fabric-manager", "570.86.15-1")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    facts = probe_fabric_host(tmp_path, in_container=False, nvswitch_pci=SWITCHES)
    assert (facts.fabricmanager_package, facts.fabricmanager_version) == (None, None)


def test_an_rpm_that_hangs_is_killed_at_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "var/lib/rpm").mkdir(parents=True)
    (tmp_path / "var/lib/rpm/rpmdb.sqlite").write_bytes(b"")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    slow = bin_dir / "rpm"  # a stand-in rpm that never answers (a locked database waits)
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    assert rpm_fabricmanager(tmp_path, timeout=0.3) == (None, None)


def test_the_doctor_reads_an_rpm_fabric_manager_of_another_version(simulate: Any) -> None:
    fabric = hgx_fabric(
        fabricmanager_package="nvidia-fabric-manager",
        fabricmanager_version="580.95.05-1",
        fabricmanager_rpm=True,
    )
    gpus = [sim.replace(sim.h100(i), persistence=True) for i in range(8)]
    d = doctor(simulate(sim.Scenario(gpus, fabric=fabric)))
    fab = d.snapshot["system"]["fabric"]
    assert fab["fabricmanager_package"] == "nvidia-fabric-manager"
    assert fab["fabricmanager_version"] == "580.95.05"
    # the GPUs here are in the fabric (trained before the upgrade): a warning, with the version
    assert d.status("driver.fabric-manager") == "warn"
    assert "fabric manager is version 580.95.05 and the driver 590.48.01" in d.text(
        "driver.fabric-manager"
    )
