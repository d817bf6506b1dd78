"""Which Linux family a machine's /etc/os-release names: what installs its packages (apt with
Ubuntu's or Debian's package names, or dnf), one reading for every fix that installs."""

from __future__ import annotations

from typing import Literal

LinuxFamily = Literal["ubuntu", "debian", "rpm", "other"]

# Ubuntu and the distributions built on its repositories (same package names).
UBUNTU_FAMILY = ("ubuntu", "pop!_os", "mint")
# Red Hat and the distributions that install with dnf from NVIDIA's RHEL-family repositories.
RPM_FAMILY = ("red hat", "rhel", "rocky", "alma", "fedora", "centos", "amazon")


def linux_family(os_release: str | None) -> LinuxFamily:
    """The family of `os_release` (its PRETTY_NAME); "other" where none is named, or unknown."""
    release = (os_release or "").lower()
    if any(name in release for name in UBUNTU_FAMILY):
        return "ubuntu"
    if "debian" in release:
        return "debian"
    if any(name in release for name in RPM_FAMILY):
        return "rpm"
    return "other"
