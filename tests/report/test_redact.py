"""--redact: nothing that identifies a person or a site survives, tokens are consistent within
one report and unlinkable across reports, and the redacted snapshot diagnoses the same."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_gpucheck
from support import builders
from support import framework_builders as fb
from support import more_builders as mb
from support.evaluate import run_checks

from gpucheck.model.decoding import to_json
from gpucheck.model.redact import REDACTED, redact
from gpucheck.model.snapshot import HostIdentity, Snapshot, dumps

ALICE = "/home/alice/.venvs/train"


def identified(snap: Snapshot) -> Snapshot:
    """A snapshot carrying every kind of identity the redaction knows."""
    snap.system.hostname = "dgx-a100-042"
    snap.system.host = HostIdentity(
        host_id="mid-4f3c9b0e2a7d4e51b6c8d9e0f1a2b3c4",
        host_id_source="machine-id",
        fqdn="dgx-a100-042.research.example.org",
        boot_time="2025-11-21T09:00:00+00:00",
        cloud="aws",
        cloud_instance_id="i-0af01c0123456789a",
        board_serial="PCABC1234567",
    )
    snap.system.python_executable = f"{ALICE}/bin/python"
    snap.system.env.update(
        {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "XLA_FLAGS": "--xla_dump_to=/home/alice/dumps",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            "VIRTUAL_ENV": ALICE,
        }
    )
    return snap


def _torch_in_alice_env() -> Snapshot:
    return fb.on(identified(builders.h100_node(4)), fb.torch_cu124(fb.environment(ALICE)))


def _visible_by_uuid() -> Snapshot:
    snap = identified(builders.h100_node(4))
    uuids = [g.uuid or "" for g in snap.nvml.gpus]
    snap.system.env["CUDA_VISIBLE_DEVICES"] = f"{uuids[2]},{uuids[0][:13]}"
    return snap


def _visible_unknown_uuid() -> Snapshot:
    snap = identified(builders.h100_node(2))
    snap.system.env["CUDA_VISIBLE_DEVICES"] = "GPU-deadbeef-0000-0000-0000-000000000000"
    return snap


def _ecc() -> Snapshot:
    snap = identified(builders.h100_node(8))
    snap.nvml.gpus[5].ecc_uncorrected_volatile = 2
    return snap


def _shadowed() -> Snapshot:
    snap = _torch_in_alice_env()
    folder = "/home/alice/cuda-12.1/lib64"
    snap.system.env["LD_LIBRARY_PATH"] = f"{folder}:/opt/tools/lib"
    snap.cudnn.libraries = [fb.ld_library_path_copy("cudnn", folder, "9.0.0")]
    return snap


def _cuda_home_missing() -> Snapshot:
    snap = identified(builders.h100_node(1))
    snap.system.env["CUDA_HOME"] = "/home/alice/cuda"
    snap.cuda.cuda_home, snap.cuda.cuda_home_source = "/home/alice/cuda", "CUDA_HOME"
    return snap


SCENARIOS: dict[str, Callable[[], Snapshot]] = {
    "healthy": lambda: identified(builders.h100_node(8)),
    "ecc": _ecc,
    "mig": lambda: identified(builders.node([builders.a100_mig(0)])),
    "workstation": lambda: identified(builders.workstation()),
    "no gpu": lambda: identified(builders.no_gpu_machine()),
    "mismatch": lambda: mb.nvml_fails(identified(builders.h100_node(2)), "LibRmVersionMismatch"),
    "torch in a home folder": _torch_in_alice_env,
    "cpu torch": lambda: fb.on(identified(builders.workstation()), fb.torch_cpu()),
    "visible by uuid": _visible_by_uuid,
    "visible unknown uuid": _visible_unknown_uuid,
    "shadowed cudnn": _shadowed,
    "cuda home": _cuda_home_missing,
}


def diagnosis(snap: Snapshot) -> list[tuple[str, str, int, list[int]]]:
    return [
        (f.id, f.status.value, len(f.evidence), [g.index for g in f.subjects.gpus])
        for f in run_checks(snap)
    ]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_redacted_snapshot_diagnoses_the_same(name: str) -> None:
    snap = SCENARIOS[name]()
    assert diagnosis(redact(snap, ["alice"])) == diagnosis(snap)


def test_nothing_identifying_survives() -> None:
    snap = _shadowed()
    text = to_json(redact(snap, ["alice"])).decode()
    for secret in (
        "dgx-a100-042",
        "research.example.org",
        "4f3c9b0e2a7d4e51b6c8d9e0f1a2b3c4",
        "i-0af01c0123456789a",
        "PCABC1234567",
        "alice",
        "10.96.0.1",
        "xla_dump_to",
        *[g.uuid or "" for g in snap.nvml.gpus],
        *[g.serial or "" for g in snap.nvml.gpus],
    ):
        assert secret not in text, secret
    red = redact(snap, ["alice"])
    assert red.redacted and not snap.redacted
    assert red.system.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # a setting, kept
    assert red.system.env["KUBERNETES_SERVICE_HOST"] == REDACTED
    assert red.system.env["VIRTUAL_ENV"] == "/home/user/.venvs/train"
    assert red.system.env["LD_LIBRARY_PATH"] == "/home/user/cuda-12.1/lib64:/opt/tools/lib"
    assert red.system.host.boot_time == "2025-11-21T09:00:00+00:00"
    assert red.nvml.driver_version == "590.48.01"


def test_tokens_are_consistent_within_a_report_and_differ_across_reports() -> None:
    snap = _visible_by_uuid()
    red = redact(snap)
    uuids = [g.uuid for g in red.nvml.gpus]
    assert len(set(uuids)) == 4 and all(u and u.startswith("GPU-") for u in uuids)
    # the full UUID and the prefix name GPUs 2 and 0, by their tokens
    assert red.system.env["CUDA_VISIBLE_DEVICES"] == f"{uuids[2]},{uuids[0]}"
    assert red.system.hostname.startswith("host-")
    again = redact(snap)
    assert again.system.hostname != red.system.hostname
    assert again.nvml.gpus[0].uuid != red.nvml.gpus[0].uuid


def test_user_names_given_by_the_caller_are_replaced_in_any_path() -> None:
    snap = identified(builders.h100_node(1))
    snap.system.python_executable = "/scratch/bob/envs/x/bin/python"
    red = redact(snap, ["bob"])
    assert red.system.python_executable == "/scratch/user/envs/x/bin/python"


def test_a_hostname_that_is_also_a_path_word_keeps_the_paths() -> None:
    snap = _cuda_home_missing()
    snap.system.hostname = "cuda"
    snap.cuda.cuda_home = "/usr/local/cuda"
    red = redact(snap)
    assert red.system.hostname.startswith("host-")
    assert red.cuda.cuda_home == "/usr/local/cuda"


# --- the command -----------------------------------------------------------------------------


def test_doctor_redact_then_from_gives_the_same_findings(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(dumps(_ecc()))
    plain = json.loads(run_gpucheck("doctor", "--from", str(path), "--json").stdout)
    result = run_gpucheck("doctor", "--from", str(path), "--json", "--redact")
    assert result.returncode == 1, result.stderr
    assert "dgx-a100-042" not in result.stdout and "1650000000005" not in result.stdout
    redacted = tmp_path / "redacted.json"
    redacted.write_text(result.stdout)
    again = json.loads(run_gpucheck("doctor", "--from", str(redacted), "--json").stdout)
    key = [(f["id"], f["status"]) for f in plain["findings"]]
    assert [(f["id"], f["status"]) for f in again["findings"]] == key
    assert again["snapshot"]["redacted"] is True


def test_snapshot_redact_hides_this_machine_s_name() -> None:
    result = run_gpucheck("snapshot", "--redact")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["redacted"] is True
    assert data["system"]["hostname"] != socket.gethostname()
    assert data["system"]["hostname"].startswith("host-")
