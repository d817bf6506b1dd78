"""gpus.xid-events: the kernel log's Xid lines since boot, judged with NVIDIA's Xid catalog
(compat/xids.toml): what each means and the action NVIDIA gives, a warning where the machine
must act, info where only the application failed or nothing is to be done."""

from __future__ import annotations

from support import builders
from support.evaluate import the

from gpucheck.model.finding import Status

# Lines quoted from public threads (cited in compat/xids.toml's examples_from).
XID_95 = "NVRM: Xid (PCI:0000:68:00): 95, pid=371232, Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No"
XID_13 = (
    "NVRM: Xid (PCI:0000:41:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): "
    "Illegal Instruction Encoding"
)
XID_63 = (
    "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
    "reset gpu to activate."
)


def test_a_kernel_log_without_xids_passes() -> None:
    snap = builders.h100_node(8)
    snap.system.kernel_log_nvrm = ["NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15"]
    f = the(snap, "gpus.xid-events")
    assert f.status is Status.PASS
    assert f.title == "No Xid in the kernel log since boot"


def test_an_unread_kernel_log_is_a_skip_saying_why() -> None:
    snap = builders.h100_node(8)
    snap.system.kernel_log_nvrm = None
    snap.system.kernel_log_error = "the kernel log is not readable by this user"
    f = the(snap, "gpus.xid-events")
    assert f.status is Status.SKIP
    assert "not readable by this user" in f.title


def test_an_xid_needing_a_gpu_reset_warns_with_nvidias_action_and_the_gpu_index() -> None:
    snap = builders.h100_node(8)  # GPU 5 is at 0000:68:00.0
    snap.system.kernel_log_nvrm = [XID_95, XID_13]
    f = the(snap, "gpus.xid-events")
    assert f.status is Status.WARN
    assert f.title.startswith("Xid 95 in the kernel log since boot")
    assert (
        "Xid 95 (Uncontained memory error): NVIDIA's action RESET_GPU on 0000:68:00" in f.evidence
    )
    assert "Xid 13 (Graphics Engine Exception): NVIDIA's action RESTART_APP on 0000:41:00" in (
        f.evidence
    )
    assert f.fix is not None and f.fix.commands == ["sudo nvidia-smi -r -i 5"]


def test_only_an_applications_fault_or_an_ignorable_xid_is_info() -> None:
    snap = builders.h100_node(8)
    snap.system.kernel_log_nvrm = [XID_13, XID_63]
    f = the(snap, "gpus.xid-events")
    assert f.status is Status.INFO
    assert "Xid 63 (GPU memory remapping event): NVIDIA's action IGNORE on 0000:10:1c" in f.evidence


def test_an_xid_on_a_gpu_the_driver_does_not_list_resets_that_bus_id_never_every_gpu() -> None:
    snap = builders.h100_node(4)  # no GPU at 0000:99:00
    snap.system.kernel_log_nvrm = [XID_95.replace("0000:68:00", "0000:99:00")]
    f = the(snap, "gpus.xid-events")
    assert f.fix is not None and f.fix.commands == ["sudo nvidia-smi -r -i 00000000:99:00.0"]


def test_an_xid_line_naming_no_gpu_is_a_persons_reset_with_no_command() -> None:
    snap = builders.h100_node(4)
    snap.system.kernel_log_nvrm = ["NVRM: Xid (GPU?): 95, pid=1, Uncontained: LTC TAG"]
    f = the(snap, "gpus.xid-events")
    assert f.status is Status.WARN
    assert f.fix is not None and f.fix.commands == []
    assert "give nvidia-smi -i the one that logged it" in f.fix.steps[0].text
