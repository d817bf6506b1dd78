"""The install-state probe on a simulated root: the kernel log's module-loading lines, the
signing keys, DKMS's tree, /etc/ld.so.conf.d and the CDI specs, as the tools write them."""

from __future__ import annotations

from pathlib import Path

import sim.scenario as sim
from sim import install_tree

from gpucheck.model.install_state import DkmsBuild
from gpucheck.probes.install_state import probe_install_state


def root_of(tmp_path: Path, scenario: sim.Scenario) -> Path:
    root = tmp_path / "root"
    sim.write_root(scenario, root)
    return root


def test_a_refused_key_is_read_from_the_kernel_log_and_nvrm_lines_are_not(tmp_path: Path) -> None:
    scenario = sim.Scenario([sim.rtx_3060()], module_loaded=False)
    scenario.kernel_log = [
        "Linux version 6.2.0-34-generic",
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.113.01",
        "Loading of module with unavailable key is rejected",
        "usb 1-1: new high-speed USB device",
    ]
    scenario.files = {"/var/lib/shim-signed/mok/MOK.der": "0"}
    facts = probe_install_state(root_of(tmp_path, scenario))
    assert facts.module_log == ["Loading of module with unavailable key is rejected"]
    assert facts.module_log_error is None
    assert facts.signing_keys == ["/var/lib/shim-signed/mok/MOK.der"]


def test_no_kernel_log_is_unknown_with_its_reason(tmp_path: Path) -> None:
    scenario = sim.Scenario([sim.rtx_3060()], kernel_log=None)  # no /dev/kmsg at all
    facts = probe_install_state(root_of(tmp_path, scenario))
    assert facts.module_log is None
    assert facts.module_log_error == "/dev/kmsg: No such file or directory"
    assert facts.dkms_builds is None  # no DKMS tree: unknown, not "no build"


def test_dkms_builds_per_kernel_and_the_failed_builds_log(tmp_path: Path) -> None:
    # NVIDIA/open-gpu-kernel-modules#558: 390.157 on Arch's 6.5.2 kernel.
    scenario = sim.Scenario([sim.rtx_3060()], module_loaded=False)
    scenario.files = install_tree.dkms_tree(
        "390.157",
        ["6.4.12-arch1-1"],
        failed_for="6.5.2-arch1-1",
        errors=[
            "/var/lib/dkms/nvidia/390.157/build/nvidia/os-interface.c:1234:5: error: implicit "
            "declaration of function 'get_user_pages'",
            "make: *** [Makefile:81: modules] Error 2",
        ],
    )
    facts = probe_install_state(root_of(tmp_path, scenario))
    assert facts.dkms_builds == [DkmsBuild("390.157", "6.4.12-arch1-1", "x86_64", True)]
    assert len(facts.dkms_failures) == 1
    failure = facts.dkms_failures[0]
    assert failure.kernel == "6.5.2-arch1-1"
    assert failure.log == "/var/lib/dkms/nvidia/390.157/build/make.log"
    assert failure.errors[-1] == "make: *** [Makefile:81: modules] Error 2"
    assert "implicit declaration of function 'get_user_pages'" in failure.errors[0]


def test_loader_entries_name_their_cuda_and_whether_each_folder_exists(tmp_path: Path) -> None:
    scenario = sim.Scenario([sim.rtx_3060()])
    scenario.files = {
        **install_tree.ld_so_conf("cuda-11-8.conf", "/usr/local/cuda-11.8/lib64", create=False),
        **install_tree.ld_so_conf("x86_64-linux-gnu.conf", "/usr/lib/x86_64-linux-gnu"),
    }
    entries = probe_install_state(root_of(tmp_path, scenario)).loader_entries
    assert entries is not None
    by_file = {e.file: e for e in entries}
    stale = by_file["/etc/ld.so.conf.d/cuda-11-8.conf"]
    assert (stale.directories, stale.cuda, stale.exists) == (
        ["/usr/local/cuda-11.8/lib64"],
        "11.8",
        [False],
    )
    system = by_file["/etc/ld.so.conf.d/x86_64-linux-gnu.conf"]
    assert (system.cuda, system.exists) == (None, [True])


def test_a_cdi_spec_names_the_driver_it_was_generated_for(tmp_path: Path) -> None:
    scenario = sim.Scenario([sim.rtx_3060()])
    scenario.files = install_tree.cdi_spec("550.54.15")
    specs = probe_install_state(root_of(tmp_path, scenario)).cdi_specs
    assert [(s.path, s.kind, s.driver_versions) for s in specs] == [
        ("/etc/cdi/nvidia.yaml", "nvidia.com/gpu", ["550.54.15"])
    ]
