"""One reading of /etc/os-release's PRETTY_NAME for every fix that installs packages: the
driver install, the half-upgraded driver's repair, the user-space catch-up, the container
toolkit and the initramfs rebuild agree on which family a machine is."""

from __future__ import annotations

from support import builders

from gpucheck import checks
from gpucheck.checks.driver.fixes import package_steps, userspace_of
from gpucheck.checks.fixes import distro
from gpucheck.checks.system.container_host import toolkit_install
from gpucheck.model.distros import linux_family

# PRETTY_NAME as each distribution's /etc/os-release ships it.
FAMILIES = {
    "Ubuntu 22.04.5 LTS": "ubuntu",
    "Pop!_OS 22.04 LTS": "ubuntu",
    "Linux Mint 21.3": "ubuntu",
    "Debian GNU/Linux 12 (bookworm)": "debian",
    "Red Hat Enterprise Linux 9.4 (Plow)": "rpm",
    "Rocky Linux 9.4 (Blue Onyx)": "rpm",
    "AlmaLinux 9.4 (Seafoam Ocelot)": "rpm",
    "Fedora Linux 40 (Workstation Edition)": "rpm",
    "CentOS Stream 9": "rpm",
    "Amazon Linux 2023.5.20240624": "rpm",
    "Arch Linux": "other",
    "openSUSE Tumbleweed": "other",
}


def test_each_distribution_has_one_family() -> None:
    for release, family in FAMILIES.items():
        assert linux_family(release) == family, release
        snap = builders.h100_node(1)
        snap.system.os_release = release
        assert distro(checks.Context(snap)) == family, release
    assert linux_family(None) == "other"


def test_every_installing_fix_reads_the_family_the_same_way() -> None:
    for release, family in FAMILIES.items():
        repair = [s.command for s in package_steps(release, "550.54.14")]
        userspace = userspace_of(release, "550.54.14").commands
        toolkit = toolkit_install(release, "install it").commands[0]
        if family == "ubuntu":
            assert "sudo apt install --reinstall nvidia-driver-550" in repair, release
            assert userspace[0] == "sudo apt install libnvidia-compute-550 nvidia-utils-550"
        elif family == "debian":
            assert "sudo apt install --reinstall nvidia-driver nvidia-kernel-dkms" in repair
            assert userspace[0] == "sudo apt install libcuda1 nvidia-smi"
        elif family == "rpm":
            assert repair[0] == "sudo dnf distro-sync 'nvidia-*' 'kmod-nvidia*'", release
        else:
            assert repair[0] == "sudo sh NVIDIA-Linux-x86_64-550.54.14.run", release
        if family not in ("ubuntu", "debian"):
            assert userspace == ["sudo sh NVIDIA-Linux-x86_64-550.54.14.run --no-kernel-modules"]
        want = "dnf" if family == "rpm" else "apt-get"
        assert toolkit == f"sudo {want} install -y nvidia-container-toolkit", release
