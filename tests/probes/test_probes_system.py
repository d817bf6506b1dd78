"""The system probe against fabricated root trees (system_tree.py): the PCI bus, kernel modules,
containers, WSL and the OS, the environment, device nodes and Secure Boot."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.system_tree import (
    BANNER_OPEN,
    BANNER_PROPRIETARY,
    OS_RELEASE,
    PROC_MODULES,
    Tree,
    probe,
)

from gpucheck.probes.system import (
    ENV_ALLOWLIST,
    SECURE_BOOT_VAR,
    detect_container,
    parse_module_version,
    probe_system,
)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


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
