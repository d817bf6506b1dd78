"""The system probe against fabricated root trees (system_tree.py): naming GPUs from an excerpt of
the real PCI ID database (tests/fixtures/pci.ids, pci.ids 2023.04.10 as Debian ships it), the
nvidia module on disk, the container host and the kernel log's NVRM lines."""

from __future__ import annotations

import lzma
import os
import platform
import shutil
from pathlib import Path

import pytest
from support.system_tree import PCI_IDS, Tree, probe

from gpucheck.probes.pci_ids import find_pci_ids, parse_pci_ids


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


# --- naming from pci.ids -----------------------------------------------------------------------


def test_the_fixture_is_an_excerpt_of_the_real_database() -> None:
    text = PCI_IDS.read_text()
    assert text.startswith("#\n#\tList of PCI ID's\n")
    assert "#\tVersion: 2023.04.10\n" in text
    assert "\n10de  NVIDIA Corporation\n" in text
    assert "\n10df  Emulex Corporation\n" in text


def test_parse_pci_ids_reads_nvidias_section_only() -> None:
    ids = parse_pci_ids(PCI_IDS)
    assert ids.path == PCI_IDS
    assert ids.devices["2330"] == "GH100[H100 SXM5 80GB]"
    assert ids.devices["20b2"] == "GA100 [A100 SXM4 80GB]"
    assert ids.devices["1eb8"] == "TU104GL [Tesla T4]"
    assert ids.devices["2503"] == "GA106 [GeForce RTX 3060]"
    assert ids.devices["2504"] == "GA106 [GeForce RTX 3060 Lite Hash Rate]"
    assert ids.devices["2684"] == "AD102 [GeForce RTX 4090]"
    assert ids.subsystems[("1db8", "10de", "131d")] == "Tesla V100-SXM3-32GB-H"
    assert ids.subsystems[("2206", "1462", "3892")] == "RTX 3080 10GB GAMING X TRIO"
    # the vendors around NVIDIA's are not read
    assert "0100" not in ids.devices  # Evans & Sutherland's Lightning 1200
    assert not [k for k in ids.subsystems if k[1] == "10dd"]


def test_names_prefer_the_subsystem_and_fall_back_to_the_device() -> None:
    ids = parse_pci_ids(PCI_IDS)
    assert ids.name("0x1db8", "0x10de", "0x131d") == "Tesla V100-SXM3-32GB-H"
    assert ids.name("0x1db8", "0x10de", "0x9999") == "GV100GL [Tesla V100 SXM3 32GB]"
    assert ids.name("0x1db8") == "GV100GL [Tesla V100 SXM3 32GB]"
    assert ids.name("0x2206", "0x1462", "0x3892") == "RTX 3080 10GB GAMING X TRIO"
    assert ids.name("0x1EB8") == "TU104GL [Tesla T4]"
    assert ids.name("0x2331") is None  # H100 PCIe: not in the excerpt
    assert ids.name("0xffff", "0x10de", "0x131d") is None


def test_probe_names_gpus_from_a_given_database(tree: Tree) -> None:
    tree.h100_host()
    tree.pci("0000:81:00.0", "0x10de", "0x1db8", "0x030200", ("0x10de", "0x131d"), "nvidia")
    tree.pci("0000:82:00.0", "0x10de", "0x2331", "0x030200", ("0x10de", "0x1626"), "nvidia")
    facts = probe(tree, pci_ids=parse_pci_ids(PCI_IDS))
    names = {d.address: d.name for d in facts.pci_gpus}
    assert names == {
        "0000:17:00.0": "GH100[H100 SXM5 80GB]",
        "0000:2a:00.0": "GH100[H100 SXM5 80GB]",
        "0000:81:00.0": "Tesla V100-SXM3-32GB-H",
        "0000:82:00.0": None,
    }
    assert facts.pci_ids_path == str(PCI_IDS)


def test_probe_finds_the_systems_database_under_its_root(tree: Tree) -> None:
    tree.h100_host()
    tree.pci("0000:01:00.0", "0x10de", "0x1eb8", "0x030200", ("0x10de", "0x12a2"), "nvidia")
    target = tree.root / "usr/share/misc/pci.ids"
    target.parent.mkdir(parents=True)
    shutil.copy(PCI_IDS, target)
    found = find_pci_ids(tree.root)
    assert found is not None and found.path == target
    facts = probe(tree)
    assert facts.pci_ids_path == str(target)
    assert {d.address: d.name for d in facts.pci_gpus}["0000:01:00.0"] == "TU104GL [Tesla T4]"


def test_probe_without_a_database_leaves_names_unknown(tree: Tree) -> None:
    tree.h100_host()
    assert find_pci_ids(tree.root) is None
    facts = probe(tree)
    assert facts.pci_ids_path is None
    assert all(d.name is None for d in facts.pci_gpus)


def test_find_pci_ids_tries_hwdata_too(tree: Tree) -> None:
    target = tree.root / "usr/share/hwdata/pci.ids"
    target.parent.mkdir(parents=True)
    os.symlink(PCI_IDS, target)
    found = find_pci_ids(tree.root)
    assert found is not None
    assert found.name("0x2684") == "AD102 [GeForce RTX 4090]"


# --- the nvidia module on disk (what the next boot loads) ---------------------------------------


# The .modinfo section of a module is NUL-separated key=value strings; these are the nvidia
# module's own keys (as `modinfo nvidia` prints them), around some ELF-ish noise.
def _ko(version: str) -> bytes:
    modinfo = b"\x00".join(
        [b"license=NVIDIA", b"version=" + version.encode(), b"supported=external"]
    )
    return b"\x7fELF" + b"\x00" * 4000 + modinfo + b"\x00" + b"\x01" * 100


def test_the_module_on_disk_and_its_version_are_read(tree: Tree) -> None:
    # illinois#70: 520.56.06 loads again after every reboot, user space is 525.85.12.
    kernel = platform.release()
    tree.h100_host()
    tree.write(f"lib/modules/{kernel}/updates/dkms/nvidia.ko", _ko("520.56.06"))
    tree.write(f"lib/modules/{kernel}/kernel/drivers/video/nvidia.ko", _ko("510.47.03"))
    tree.write("var/lib/dkms/nvidia/520.56.06/source", "")
    tree.write("var/lib/dkms/nvidia/kernel-6.1.0-amd64-x86_64", "")  # DKMS's own links
    facts = probe(tree)
    assert facts.nvidia_module_file == f"/lib/modules/{kernel}/updates/dkms/nvidia.ko"
    assert facts.nvidia_module_file_version == "520.56.06"
    assert facts.nvidia_module_file_error is None
    assert facts.dkms_nvidia_versions == ["520.56.06"]


def test_an_xz_compressed_module_is_read_in_a_stream(tree: Tree) -> None:
    kernel = platform.release()
    tree.h100_host()
    tree.write(f"lib/modules/{kernel}/extra/nvidia.ko.xz", lzma.compress(_ko("535.104.05")))
    facts = probe(tree)
    assert facts.nvidia_module_file == f"/lib/modules/{kernel}/extra/nvidia.ko.xz"
    assert facts.nvidia_module_file_version == "535.104.05"


def test_debians_nvidia_current_module_is_found_and_its_companions_are_not(tree: Tree) -> None:
    # Debian's nvidia-kernel-dkms builds nvidia-current.ko (its README.Debian: 'could not insert
    # module .../nvidia-current.ko'; modprobe.d aliases it to nvidia),
    # beside nvidia-current-uvm.ko and nvidia-current-modeset.ko: Debian's names.
    kernel = platform.release()
    tree.h100_host()
    tree.write(f"lib/modules/{kernel}/updates/dkms/nvidia-current-uvm.ko", _ko("999.0.0"))
    tree.write(f"lib/modules/{kernel}/updates/dkms/nvidia-current-modeset.ko", _ko("999.0.0"))
    tree.write(
        f"lib/modules/{kernel}/updates/dkms/nvidia-current.ko.xz", lzma.compress(_ko("535.216.01"))
    )
    facts = probe(tree)
    assert facts.nvidia_module_file == f"/lib/modules/{kernel}/updates/dkms/nvidia-current.ko.xz"
    assert facts.nvidia_module_file_version == "535.216.01"


def test_debians_tesla_module_is_found(tree: Tree) -> None:
    kernel = platform.release()
    tree.h100_host()
    tree.write(f"lib/modules/{kernel}/updates/dkms/nvidia-tesla-535.ko", _ko("535.216.03"))
    tree.write(f"lib/modules/{kernel}/updates/dkms/nvidia-tesla-535-peermem.ko", _ko("1.0"))
    facts = probe(tree)
    assert facts.nvidia_module_file == f"/lib/modules/{kernel}/updates/dkms/nvidia-tesla-535.ko"
    assert facts.nvidia_module_file_version == "535.216.03"


def test_no_module_on_disk_is_unknown_with_the_reason(tree: Tree) -> None:
    tree.h100_host()
    facts = probe(tree)
    assert facts.nvidia_module_file is None
    assert facts.nvidia_module_file_version is None
    assert facts.nvidia_module_file_error == (
        f"no nvidia module under /lib/modules/{platform.release()}"
    )
    assert facts.dkms_nvidia_versions is None


# --- the container host: engines, the NVIDIA Container Toolkit, CDI, /dev/char ----------------


def _program(tree: Tree, rel: str) -> None:
    tree.write(rel, "#!/bin/sh\n").chmod(0o755)


def test_container_host_facts_are_read_from_files(tree: Tree) -> None:
    # nvidia-docker#1243: docker and nvidia-container-toolkit, but no nvidia-container-cli.
    tree.h100_host()
    _program(tree, "usr/bin/docker")
    _program(tree, "usr/bin/nvidia-container-toolkit")
    tree.write("etc/docker/daemon.json", '{"runtimes": {"nvidia": {"path": "x"}}}')
    tree.write("etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n")
    (tree.root / "dev/char").mkdir(parents=True)
    (tree.root / "dev/char/195:0").symlink_to("../nvidia0")
    (tree.root / "dev/char/1:3").symlink_to("../null")
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    host = probe(tree).container_host
    assert host is not None
    assert host.engines == ["docker"]
    assert host.toolkit == ["nvidia-container-toolkit"]
    assert host.docker_runtimes == ["nvidia"]
    assert host.cdi_specs == ["/etc/cdi/nvidia.yaml"]
    assert host.dev_char_links == 1
    assert host.cgroup_version == 2
    assert host.docker_nvidia_runtime_path == "x"
    assert host.docker_nvidia_runtime_found is False


def test_the_nvidia_runtime_daemon_json_registers_is_found_where_it_says(tree: Tree) -> None:
    tree.h100_host()
    _program(tree, "usr/bin/docker")
    _program(tree, "usr/local/nvidia/toolkit/nvidia-container-runtime")
    tree.write(
        "etc/docker/daemon.json",
        '{"runtimes": {"nvidia": {"path": "/usr/local/nvidia/toolkit/nvidia-container-runtime"}}}',
    )
    host = probe(tree).container_host
    assert host is not None
    assert host.docker_nvidia_runtime_path == "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    assert host.docker_nvidia_runtime_found is True


def test_no_container_host_facts_inside_a_container(tree: Tree) -> None:
    tree.h100_host()
    tree.write(".dockerenv", "")
    assert probe(tree).container_host is None


# --- the kernel log's NVRM lines --------------------------------------------------------------


def test_nvrm_lines_are_kept_from_the_kernel_log(tree: Tree) -> None:
    # open-gpu-kernel-modules#789's lines, as /dev/kmsg records (level,seq,usec,flags;text).
    tree.h100_host()
    tree.write(
        "dev/kmsg",
        "6,1,100,-;Linux version 5.15.0-131-generic\n"
        "4,2,200,-;NVRM: RmInitAdapter: Cannot initialize GSP firmware RM\n"
        "3,3,300,-;NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)\n"
        "6,4,400,-;usb 1-1: new high-speed USB device\n",
    )
    facts = probe(tree)
    assert facts.kernel_log_nvrm == [
        "NVRM: RmInitAdapter: Cannot initialize GSP firmware RM",
        "NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
    ]
    assert facts.kernel_log_error is None


def test_an_unreadable_kernel_log_is_unknown_with_the_reason(tree: Tree) -> None:
    tree.h100_host()
    facts = probe(tree)
    assert facts.kernel_log_nvrm is None
    assert facts.kernel_log_error == "/dev/kmsg: No such file or directory"
