"""The system probe against fabricated root trees (sysfs, procfs, /dev, /etc laid out as the
kernel lays them out), and naming GPUs from an excerpt of the real PCI ID database
(tests/fixtures/pci.ids, pci.ids 2023.04.10 as Debian ships it)."""

from __future__ import annotations

import lzma
import os
import platform
import shutil
from pathlib import Path

import pytest

from gpucheck.probes.pci_ids import find_pci_ids, parse_pci_ids
from gpucheck.probes.system import (
    ENV_ALLOWLIST,
    SECURE_BOOT_VAR,
    detect_container,
    parse_module_version,
    probe_system,
)

PCI_IDS = Path(__file__).resolve().parent / "fixtures" / "pci.ids"

BANNER_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
)
# The two banner formats (proprietary and open kernel module); the open one's build time after
# "Mon Dec  8" is filled in for the test, as are the GCC lines.
BANNER_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build  "
    "(dvs-builder@U22-I3-AE18-23-3)  Mon Dec  8 13:45:31 UTC 2025\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)
PROC_MODULES = (
    "nvidia_uvm 1544192 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia_drm 77824 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia_modeset 1314816 1 nvidia_drm, Live 0x0000000000000000 (POE)\n"
    "nvidia 56799232 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
    "ext4 1003520 2 - Live 0x0000000000000000\n"
)
OS_RELEASE = (
    'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
    'VERSION="22.04.5 LTS (Jammy Jellyfish)"\nID=ubuntu\n'
)


class Tree:
    """A fabricated root file system."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, rel: str, content: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def pci(
        self,
        address: str,
        vendor: str,
        device: str,
        cls: str,
        subsystem: tuple[str, str] | None = None,
        driver: str | None = None,
    ) -> None:
        """sysfs as the kernel has it: the device under /sys/devices, a symlink to it from
        /sys/bus/pci/devices, and its `driver` a symlink into /sys/bus/pci/drivers."""
        real = self.root / "sys/devices/pci0000:00" / address
        real.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", cls)):
            (real / name).write_text(value + "\n")
        if subsystem:
            (real / "subsystem_vendor").write_text(subsystem[0] + "\n")
            (real / "subsystem_device").write_text(subsystem[1] + "\n")
        bus = self.root / "sys/bus/pci/devices"
        bus.mkdir(parents=True, exist_ok=True)
        (bus / address).symlink_to(f"../../../devices/pci0000:00/{address}")
        if driver:
            drivers = self.root / "sys/bus/pci/drivers" / driver
            drivers.mkdir(parents=True, exist_ok=True)
            (real / "driver").symlink_to(f"../../../bus/pci/drivers/{driver}")

    def h100_host(self) -> None:
        """Two H100 SXM5 GPUs bound to nvidia, beside other devices on the bus."""
        self.pci("0000:00:00.0", "0x8086", "0x09a2", "0x060000")  # Intel host bridge
        self.pci("0000:17:00.0", "0x10de", "0x2330", "0x030200", ("0x10de", "0x16c1"), "nvidia")
        self.pci("0000:2a:00.0", "0x10de", "0x2330", "0x030200", ("0x10de", "0x16c1"), "nvidia")
        self.pci("0000:3d:00.0", "0x15b3", "0x1021", "0x020700", driver="mlx5_core")  # NIC
        self.write("proc/modules", PROC_MODULES)
        self.write("proc/driver/nvidia/version", BANNER_PROPRIETARY)
        self.write("dev/nvidiactl", "")
        self.write("dev/nvidia0", "")
        self.write("dev/nvidia1", "")
        self.write("dev/nvidia-uvm", "")
        self.write("etc/os-release", OS_RELEASE)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


def probe(tree: Tree, env: dict[str, str] | None = None, **kw):  # type: ignore[no-untyped-def]
    return probe_system(root=tree.root, env=env or {}, **kw)


# --- the PCI bus -------------------------------------------------------------------------------


def test_gpus_are_found_by_vendor_and_class(tree: Tree) -> None:
    tree.h100_host()
    # an RTX card: its VGA function counts, its HDMI audio function (class 0x040300) does not
    tree.pci("0000:65:00.0", "0x10de", "0x2684", "0x030000", ("0x1043", "0x889d"), "nvidia")
    tree.pci("0000:65:00.1", "0x10de", "0x22ba", "0x040300", ("0x1043", "0x889d"), "snd_hda_intel")
    facts = probe(tree)
    assert facts.pci_scanned is True
    assert facts.pci_device_count == 6
    assert [d.address for d in facts.pci_gpus] == ["0000:17:00.0", "0000:2a:00.0", "0000:65:00.0"]
    h100 = facts.pci_gpus[0]
    assert h100.vendor_id == "0x10de"
    assert h100.device_id == "0x2330"
    assert h100.class_code == "0x030200"
    assert h100.subsystem_vendor_id == "0x10de"
    assert h100.subsystem_device_id == "0x16c1"
    assert h100.driver == "nvidia"
    assert facts.pci_gpus[2].class_code == "0x030000"


def test_the_bound_driver_is_read_from_the_symlink(tree: Tree) -> None:
    tree.pci("0000:01:00.0", "0x10de", "0x2504", "0x030000", driver="nouveau")
    tree.pci("0000:02:00.0", "0x10de", "0x2330", "0x030200", driver="vfio-pci")
    tree.pci("0000:03:00.0", "0x10de", "0x2330", "0x030200")  # no driver bound
    facts = probe(tree)
    assert [d.driver for d in facts.pci_gpus] == ["nouveau", "vfio-pci", None]
    assert facts.pci_gpus[2].subsystem_vendor_id is None


def test_uppercase_ids_are_normalised(tree: Tree) -> None:
    tree.pci("0000:01:00.0", "0x10DE", "0x20B2", "0x030200")
    facts = probe(tree)
    assert [d.device_id for d in facts.pci_gpus] == ["0x20b2"]


def test_a_bus_without_nvidia_gpus_is_scanned_and_counted(tree: Tree) -> None:
    tree.pci("0000:00:00.0", "0x8086", "0x09a2", "0x060000")
    tree.pci("0000:00:02.0", "0x8086", "0x46a6", "0x030000", driver="i915")  # Intel iGPU
    facts = probe(tree)
    assert facts.pci_scanned is True
    assert facts.pci_device_count == 2
    assert facts.pci_gpus == []


def test_an_empty_bus_listing_is_scanned_with_zero_devices(tree: Tree) -> None:
    (tree.root / "sys/bus/pci/devices").mkdir(parents=True)
    facts = probe(tree)
    assert facts.pci_scanned is True
    assert facts.pci_device_count == 0


def test_a_missing_pci_bus_is_not_scanned(tree: Tree) -> None:
    facts = probe(tree)
    assert facts.pci_scanned is False
    assert facts.pci_device_count == 0
    assert facts.pci_gpus == []


def test_an_unreadable_pci_bus_is_not_scanned(tree: Tree) -> None:
    # (tests run as root, where chmod 000 does not stop a read: a file where the
    # directory should be fails the same way)
    tree.write("sys/bus/pci/devices", "")
    facts = probe(tree)
    assert facts.pci_scanned is False
    assert facts.pci_gpus == []


# --- kernel modules ----------------------------------------------------------------------------


def test_proprietary_module_banner_and_modules(tree: Tree) -> None:
    tree.h100_host()
    facts = probe(tree)
    assert facts.nvidia_module_loaded is True
    assert facts.nvidia_module_version == "535.104.05"
    assert facts.nvidia_module_banner == BANNER_PROPRIETARY.splitlines()[0]
    assert facts.nvidia_modules == ["nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"]
    assert facts.nouveau_loaded is False


def test_open_module_banner(tree: Tree) -> None:
    tree.write("proc/modules", PROC_MODULES)
    tree.write("proc/driver/nvidia/version", BANNER_OPEN)
    facts = probe(tree)
    assert facts.nvidia_module_version == "590.48.01"
    assert facts.nvidia_module_banner is not None
    assert facts.nvidia_module_banner.startswith("NVRM version: NVIDIA UNIX Open Kernel Module")


# Format variants (an aarch64 build, a two-part version); the dates are not from real banners.
@pytest.mark.parametrize(
    ("banner", "version"),
    [
        (BANNER_PROPRIETARY, "535.104.05"),
        (BANNER_OPEN, "590.48.01"),
        (
            "NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54.15  "
            "Tue Mar  5 22:15:33 UTC 2024",
            "550.54.15",
        ),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  418.39  Sat Feb  9 19:58:15 CST 2019",
            "418.39",
        ),
        ("something else entirely", None),
    ],
)
def test_parse_module_version(banner: str, version: str | None) -> None:
    assert parse_module_version(banner) == version


def test_module_version_from_sys_module_without_the_proc_banner(tree: Tree) -> None:
    tree.write("proc/modules", PROC_MODULES)
    tree.write("sys/module/nvidia/version", "570.124.04\n")
    facts = probe(tree)
    assert facts.nvidia_module_version == "570.124.04"
    assert facts.nvidia_module_banner is None


def test_nouveau_loaded_and_nvidia_not(tree: Tree) -> None:
    tree.write(
        "proc/modules",
        "nouveau 2433024 3 - Live 0x0000000000000000\n"
        "drm_ttm_helper 16384 1 nouveau, Live 0x0000000000000000\n",
    )
    tree.pci("0000:01:00.0", "0x10de", "0x2504", "0x030000", driver="nouveau")
    facts = probe(tree)
    assert facts.nouveau_loaded is True
    assert facts.nvidia_module_loaded is False
    assert facts.nvidia_module_version is None
    assert facts.nvidia_modules == []


def test_nova_core_loaded_and_bound(tree: Tree) -> None:
    tree.write(
        "proc/modules",
        "nova_core 204800 0 - Live 0x0000000000000000\n"
        "nova_drm 16384 0 - Live 0x0000000000000000\n",
    )
    tree.pci("0000:01:00.0", "0x10de", "0x2504", "0x030000", driver="NovaCore")
    facts = probe(tree)
    assert facts.nova_core_loaded is True
    assert facts.nouveau_loaded is False
    assert facts.pci_gpus[0].driver == "NovaCore"


def test_modules_from_sys_module_when_proc_modules_is_missing(tree: Tree) -> None:
    (tree.root / "sys/module/nvidia").mkdir(parents=True)
    (tree.root / "sys/module/nvidia_uvm").mkdir(parents=True)
    facts = probe(tree)
    assert facts.nvidia_module_loaded is True
    assert facts.nvidia_modules == ["nvidia", "nvidia_uvm"]


def test_modules_unknown_when_nothing_is_readable(tree: Tree) -> None:
    facts = probe(tree)
    assert facts.nvidia_module_loaded is None
    assert facts.nouveau_loaded is None


# --- containers, WSL, OS -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "env", "kind", "evidence"),
    [
        ({".dockerenv": ""}, {}, "docker", "/.dockerenv exists"),
        ({"run/.containerenv": ""}, {}, "podman", "/run/.containerenv exists"),
        (
            {
                "proc/1/cgroup": "12:memory:/kubepods/burstable/pod3f1c/0c8d1a\n"
                "0::/kubepods/burstable/pod3f1c/0c8d1a\n"
            },
            {},
            "kubernetes",
            "/proc/1/cgroup mentions kubepods",
        ),
        (
            {"proc/1/cgroup": "0::/system.slice/docker-5b0c1c9e.scope\n"},
            {},
            "docker",
            "/proc/1/cgroup mentions docker",
        ),
        ({}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "kubernetes", "KUBERNETES_SERVICE_HOST"),
        ({}, {"container": "systemd-nspawn"}, "systemd-nspawn", "container variable"),
    ],
)
def test_container_kind_for_each_marker(
    tree: Tree, files: dict[str, str], env: dict[str, str], kind: str, evidence: str
) -> None:
    for rel, content in files.items():
        tree.write(rel, content)
    found, why = detect_container(tree.root, env)
    assert found == kind and why and evidence in why
    # probe_system reads the environment only for its own /: under another root (GPUCHECK_ROOT,
    # a pod judging its host) the root's files alone say.
    facts = probe(tree, env)
    assert (facts.container, facts.container_evidence) == ((found, why) if files else (None, None))


def test_no_container_on_a_host(tree: Tree) -> None:
    tree.write("proc/1/cgroup", "0::/init.scope\n")
    facts = probe(tree)
    assert facts.container is None
    assert facts.container_evidence is None


def test_wsl_from_proc_version(tree: Tree) -> None:
    tree.write(
        "proc/version",
        "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) "
        "(gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n",
    )
    assert probe(tree).wsl is True


def test_wsl_from_dev_dxg(tree: Tree) -> None:
    tree.write("dev/dxg", "")
    facts = probe(tree)
    assert facts.wsl is True
    assert "/dev/dxg" in [n.path for n in facts.device_nodes]


def test_not_wsl_on_a_plain_kernel(tree: Tree) -> None:
    tree.write("proc/version", "Linux version 5.15.0-185-generic (buildd@lcy02-amd64-051)\n")
    assert probe(tree).wsl is False


def test_os_release_pretty_name(tree: Tree) -> None:
    tree.write("etc/os-release", OS_RELEASE)
    assert probe(tree).os_release == "Ubuntu 22.04.5 LTS"


def test_os_release_falls_back_to_usr_lib(tree: Tree) -> None:
    tree.write(
        "usr/lib/os-release", 'NAME="Rocky Linux"\nPRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"\n'
    )
    assert probe(tree).os_release == "Rocky Linux 9.4 (Blue Onyx)"


# --- environment -------------------------------------------------------------------------------


def test_only_allowlisted_environment_variables_are_kept() -> None:
    env = {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "MY_TOKEN": "ghp_0123456789abcdef",
        "HF_TOKEN": "hf_abcdef",
        "CUDA_VISIBLE_DEVICES_EXTRA": "x",  # a longer name, not the allowlisted one
        "PATH": "/usr/bin",
    }
    facts = probe_system(root=Path("/nonexistent-root"), env=env)
    assert facts.env == {"CUDA_VISIBLE_DEVICES": "0,1", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    assert "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" not in repr(facts)
    assert "ghp_0123456789abcdef" not in repr(facts)


def test_allowlist_has_no_secret_looking_names() -> None:
    for name in ENV_ALLOWLIST:
        assert not any(word in name for word in ("SECRET", "TOKEN", "PASSWORD", "KEY")), name


# --- device nodes and Secure Boot --------------------------------------------------------------


def test_device_nodes_are_shown_as_dev_paths(tree: Tree) -> None:
    tree.h100_host()
    tree.write("dev/nvidia10", "")
    tree.write("dev/nvidia2", "")
    tree.write("dev/nvidia-caps", "")  # not a GPU node
    nodes = {n.path: n for n in probe(tree).device_nodes}
    assert list(nodes) == [
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidia2",
        "/dev/nvidia10",
    ]
    ctl = nodes["/dev/nvidiactl"]
    assert ctl.exists and ctl.readable and ctl.writable
    assert (ctl.mode or "").startswith("-rw")  # stat.filemode of the plain file
    assert ctl.owner_group
    assert nodes["/dev/nvidia-uvm-tools"].exists is False
    assert not any(str(tree.root) in n.path for n in nodes.values())


def test_no_device_nodes_without_dev(tree: Tree) -> None:
    nodes = probe(tree).device_nodes
    assert [n.path for n in nodes] == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert not any(n.exists for n in nodes)


@pytest.mark.parametrize(("last", "expected"), [(1, True), (0, False)])
def test_secure_boot_from_efivars(tree: Tree, last: int, expected: bool) -> None:
    tree.write(SECURE_BOOT_VAR, bytes([0x06, 0x00, 0x00, 0x00, last]))  # attributes, value
    assert probe(tree).secure_boot is expected


def test_secure_boot_unknown_without_efi(tree: Tree) -> None:
    assert probe(tree).secure_boot is None


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
    # beside nvidia-current-uvm.ko and nvidia-current-modeset.ko (issue 23).
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
