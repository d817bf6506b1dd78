"""Requirements a job states (--min-gpus, --min-memory, --min-compute-capability), and how
the runner treats a check that breaks."""

from __future__ import annotations

import io

import pytest
from support import builders
from support import more_builders as mb
from support.evaluate import finding, run_checks, the
from support.framework_checks import FRAMEWORK_CHECKS

from gpucheck import checks
from gpucheck.checks import Requirements
from gpucheck.checks.registry import Check
from gpucheck.exit_status import ExitStatus
from gpucheck.model.decoding import to_dict
from gpucheck.model.finding import Outcome, Status
from gpucheck.model.snapshot import NvmlError
from gpucheck.report.core import Report, exit_code
from gpucheck.report.text import render_plain

MIB = 1024**2
GIB = 1024**3

REQUIREMENT_CHECKS = (
    "requirements.min-gpus",
    "requirements.min-memory",
    "requirements.min-compute-capability",
)


def test_no_requirement_no_finding() -> None:
    ids = {f.id for f in run_checks(builders.h100_node(8), Requirements())}
    assert not ids & set(REQUIREMENT_CHECKS)


# --- requirements.min-gpus --------------------------------------------------------------------------


def test_min_gpus_met_passes() -> None:
    f = the(builders.h100_node(8), "requirements.min-gpus", Requirements(min_gpus=8))
    assert f.status is Status.PASS
    assert "8 usable GPU(s)" in f.title


def test_min_gpus_counts_only_what_cuda_visible_devices_shows() -> None:
    snap = builders.h100_node(8)
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"
    f = the(snap, "requirements.min-gpus", Requirements(min_gpus=8))
    assert f.status is Status.FAIL
    assert f.title == "Needs 8 GPU(s), has 4"
    assert "4 usable GPU(s) of 8 (CUDA_VISIBLE_DEVICES)" in f.evidence
    assert f.fix and "8 or more GPUs" in f.fix.text


def test_min_gpus_does_not_count_a_lost_gpu() -> None:
    snap = builders.h100_node(8)
    snap.nvml.gpus[2].handle_error = NvmlError(15, "GpuIsLost", "GPU is lost")
    f = the(snap, "requirements.min-gpus", Requirements(min_gpus=8))
    assert f.status is Status.FAIL
    assert f.title == "Needs 8 GPU(s), has 7"


def test_min_gpus_without_a_driver_fails_saying_why() -> None:
    snap = mb.nvml_fails(builders.h100_node(8), "DriverNotLoaded")
    f = the(snap, "requirements.min-gpus", Requirements(min_gpus=1))
    assert f.status is Status.FAIL
    assert "the driver gives no GPU list (see driver checks)" in f.evidence


# --- requirements.min-memory ------------------------------------------------------------------------


def test_min_memory_80gb_decimal_passes_on_h100() -> None:
    """80GB (decimal, 80e9 bytes) is below the H100's 81559 MiB."""
    snap = builders.h100_node(8)
    assert snap.nvml.gpus[0].memory_total == 81559 * MIB
    req = Requirements(min_memory_bytes=80 * 10**9, min_memory_text="80GB")
    f = the(snap, "requirements.min-memory", req)
    assert f.status is Status.PASS
    assert f.title == "All 8 usable GPU(s) have at least 80GB"


def test_min_memory_80gib_fails_on_h100() -> None:
    """80 GiB = 81920 MiB is more than the H100's 81559 MiB."""
    snap = builders.h100_node(2)
    req = Requirements(min_memory_bytes=80 * GIB, min_memory_text="80GiB")
    f = the(snap, "requirements.min-memory", req)
    assert f.status is Status.FAIL
    assert f.title == "2 GPU(s) have less than 80GiB of memory"
    assert "GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): 79.6 GiB" in f.evidence
    assert f.fix and "80GiB" in f.fix.text


def test_min_memory_without_text_shows_gib() -> None:
    snap = builders.workstation()  # 12 GiB RTX 3060
    f = the(snap, "requirements.min-memory", Requirements(min_memory_bytes=16 * GIB))
    assert f.status is Status.FAIL
    assert "less than 16.0 GiB" in f.title


def test_min_memory_counts_unknown_memory_as_too_small() -> None:
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].memory_total = None
    f = the(snap, "requirements.min-memory", Requirements(min_memory_bytes=40 * GIB))
    assert f.status is Status.FAIL
    assert f.evidence == ["GPU 1 (NVIDIA H100 80GB HBM3, 00000000:28:00.0): unknown"]


def test_min_memory_with_no_usable_gpu_fails() -> None:
    snap = builders.h100_node(2)
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "9"
    f = the(
        snap, "requirements.min-memory", Requirements(min_memory_bytes=GIB, min_memory_text="1GiB")
    )
    assert f.status is Status.FAIL
    assert "no usable GPU" in f.title


def test_min_memory_on_a_mig_gpu_counts_the_mig_device() -> None:
    snap = builders.node([builders.a100_mig(0)])  # 4 x 1g.20gb MIG devices
    req = Requirements(min_memory_bytes=40 * 10**9, min_memory_text="40GB")
    f = the(snap, "requirements.min-memory", req)
    assert f.status is Status.FAIL


# --- requirements.min-compute-capability ------------------------------------------------------------


def test_min_cc_on_an_a100_fails_for_hopper() -> None:
    snap = builders.node([builders.a100_mig(0)])
    snap.nvml.gpus[0].mig_enabled = snap.nvml.gpus[0].mig_enabled_pending = False
    snap.nvml.gpus[0].mig_devices = []
    f = the(snap, "requirements.min-compute-capability", Requirements(min_compute_capability="9.0"))
    assert f.status is Status.FAIL
    assert "below compute capability 9.0" in f.title
    assert f.evidence == ["GPU 0 (NVIDIA A100-SXM4-80GB, 00000000:01:00.0): 8.0"]


def test_min_cc_met_passes_and_compares_numerically() -> None:
    snap = builders.h100_node(2)
    f = the(snap, "requirements.min-compute-capability", Requirements(min_compute_capability="8.6"))
    assert f.status is Status.PASS
    # 10.0 > 9.0 as numbers, not as strings
    for g in snap.nvml.gpus:
        g.compute_capability = "10.0"
    f = the(snap, "requirements.min-compute-capability", Requirements(min_compute_capability="9.0"))
    assert f.status is Status.PASS


def test_min_cc_unknown_is_below() -> None:
    snap = builders.h100_node(1)
    snap.nvml.gpus[0].compute_capability = None
    f = the(snap, "requirements.min-compute-capability", Requirements(min_compute_capability="7.0"))
    assert f.status is Status.FAIL
    assert f.evidence == ["GPU 0 (NVIDIA H100 80GB HBM3, 00000000:18:00.0): unknown"]


@pytest.mark.parametrize(
    "req",
    [
        Requirements(min_gpus=1),
        Requirements(min_memory_bytes=GIB),
        Requirements(min_compute_capability="5.0"),
    ],
)
def test_requirements_on_the_no_gpu_machine_fail_with_a_fix(req: Requirements) -> None:
    findings = [f for f in run_checks(builders.no_gpu_machine(), req) if f.id in REQUIREMENT_CHECKS]
    assert len(findings) == 1
    assert findings[0].status is Status.FAIL
    assert findings[0].fix


# --- a check that breaks -----------------------------------------------------------------------


def test_a_check_that_raises_becomes_an_error_and_exit_code_3() -> None:
    registered = checks.all_checks()
    target = next(c for c in registered if c.id == "gpus.ecc-errors")

    def broken(ctx: checks.Context) -> Outcome | None:
        raise KeyError("ecc_uncorrected_volatile")

    patched = [Check(c.id, c.section, c.summary, broken) if c is target else c for c in registered]
    snap = builders.h100_node(2)
    findings = checks.run(checks.Context(snap), patched)
    f = next(x for x in findings if x.id == "gpus.ecc-errors")
    assert f.status is Status.ERROR
    assert "KeyError" in f.title and "gpus.ecc-errors" in f.title
    assert f.fix and "gpucheck bug" in f.fix.text
    assert "gpucheck doctor --json --only gpus.ecc-errors -o gpucheck-report.json" in f.fix.commands
    # The traceback stays with the finding (the JSON report), innermost frame last.
    assert f.error is not None and (f.error.type, f.error.message) == (
        "KeyError",
        "'ecc_uncorrected_volatile'",
    )
    assert f.error.frames[0].file == "gpucheck/checks/registry.py"
    assert (f.error.frames[-1].function, f.error.frames[-1].code) == (
        "broken",
        'raise KeyError("ecc_uncorrected_volatile")',
    )
    as_json = to_dict(f)["error"]
    assert as_json["frames"][-1]["file"] == "test_checks_requirements.py"
    # The text report names the check and how to report it, not the traceback.
    text = io.StringIO()
    render_plain(Report(snap, findings), text, False)
    assert "gpucheck's check gpus.ecc-errors failed: KeyError" in text.getvalue()
    assert "gpucheck doctor --json --only gpus.ecc-errors" in text.getvalue()
    assert "Traceback" not in text.getvalue() and "raise KeyError" not in text.getvalue()
    # the other checks still ran
    assert {x.id for x in findings} >= {"gpus.lost", "gpus.throttling", "cuda.driver-api"}
    assert exit_code(findings) == 3  # docs/exit-codes.md's code for a broken check
    # the registry itself is untouched
    assert next(c for c in checks.all_checks() if c.id == "gpus.ecc-errors").func is target.func
    assert exit_code(checks.run(checks.Context(snap))) == ExitStatus.OK


def test_exit_codes_follow_the_worst_finding() -> None:
    assert exit_code(run_checks(builders.h100_node(1))) == ExitStatus.OK
    assert exit_code(run_checks(builders.no_gpu_machine())) == ExitStatus.FAILED
    snap = builders.h100_node(1)
    snap.system.env["CUDA_LAUNCH_BLOCKING"] = "1"  # a warning only
    findings = run_checks(snap)
    assert exit_code(findings) == ExitStatus.OK
    assert exit_code(findings, strict=True) == ExitStatus.FAILED


def test_every_registered_check_is_exercised_by_these_modules() -> None:
    """A new check needs tests: this list is every id the check test modules cover."""
    covered = {
        *FRAMEWORK_CHECKS,
        "system.gpu-present",
        "system.container-gpu-access",
        "system.nouveau",
        "system.cuda-visible-devices",
        "system.cuda-launch-blocking",
        "system.probes",
        "system.cdi-spec",  # test_cdi_spec.py
        "system.image-cuda-requirement",  # test_image_requirement.py
        "driver.kernel-module",
        "driver.nvml",
        "driver.device-nodes",
        "driver.uvm",
        "driver.persistence-mode",
        "driver.fabric-manager",  # test_fabric.py, test_fabric_sim.py
        "gpus.lost",
        "gpus.ecc-errors",
        "gpus.memory-remapping",
        "gpus.throttling",
        "gpus.pcie-link",
        "gpus.xid-events",  # test_checks_gpus_xids.py, test_simulator_xids.py
        "gpus.nvlink",  # test_fabric.py, test_fabric_sim.py
        "gpus.p2p",
        "gpus.compute-mode",
        "gpus.mig",
        "gpus.memory-in-use",
        # checks/network/test_checks_network.py, e2e/test_network_sim.py
        "network.rdma-ports",
        "network.rdma-rate",
        "network.rdma-usable",
        "network.gpudirect-rdma",
        "network.nic-affinity",
        "network.acs-iommu",
        "network.shm",
        "network.memlock",
        "network.nccl-env",
        "cuda.driver-api",
        "cuda.toolkit",
        "cuda.runtime-libraries",
        "cudnn.libraries",
        *REQUIREMENT_CHECKS,
    }
    assert {c.id for c in checks.all_checks()} == covered


def test_finding_helper_sees_absent_findings() -> None:
    assert finding(builders.h100_node(1), "requirements.min-gpus") is None
