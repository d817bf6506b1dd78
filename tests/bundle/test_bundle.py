"""`gpucheck snapshot --bundle FILE.tar.gz`: the members and their manifest, redaction on by
default, the same bytes for the same facts, `tar` reading it, and `doctor --from BUNDLE` and
`fleet BUNDLE` reading it back safely (only known members, bounded, nothing extracted)."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import run_gpucheck
from support import builders

from gpucheck.bundle.making import archive, make_bundle
from gpucheck.model import bundle as bundle_model
from gpucheck.model.bundle import BundleError, bundle_member
from gpucheck.model.snapshot import Snapshot

NOW = "2026-11-28T10:00:00+00:00"
FIXTURES = Path(__file__).parents[1] / "fixtures"
# A real `nvidia-smi -q` of an H100 (R590): lines 1478-1735 of nvidia_gpu_exporter's capture.
NVSMI_CAPTURE = (
    FIXTURES / "nvsmi/nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
)


def ecc_node() -> Snapshot:
    snap = builders.h100_node(2)
    snap.system.hostname = "lab-gpu-07"
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    snap.system.kernel_log_nvrm = ["NVRM: Xid (PCI:0000:28:00): 48, pid=1234, DBE"]
    return snap


def members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


@pytest.fixture
def fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An nvidia-smi on PATH that prints the real capture's `-q` section."""
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "nvidia-smi"
    program.write_text(f"#!/bin/sh\nsed -n 1478,1735p '{NVSMI_CAPTURE}'\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_the_bundle_holds_every_member_with_its_manifest(fake_nvidia_smi: None) -> None:
    got = members(make_bundle(ecc_node(), redact=True, now=NOW))
    assert sorted(got) == [
        "fix-plan.json", "fix-plan.txt", "kernel-log.txt", "manifest.json", "nvidia-smi-q.txt",
        "report.html", "report.json", "report.txt", "snapshot.json",
    ]  # fmt: skip
    manifest = json.loads(got["manifest.json"])
    assert manifest["redacted"] is True and manifest["created_at"] == NOW
    listed = {f["name"]: f for f in manifest["files"]}
    assert sorted(listed) == sorted(set(got) - {"manifest.json"})
    assert listed["snapshot.json"]["holds"].startswith("the facts, redacted (hostname")
    assert listed["report.html"]["bytes"] == len(got["report.html"])
    assert got["kernel-log.txt"] == b"NVRM: Xid (PCI:0000:28:00): 48, pid=1234, DBE\n"
    report = json.loads(got["report.json"])
    assert [f["id"] for f in report["findings"] if f["status"] == "fail"] == ["gpus.ecc-errors"]
    assert b"Uncorrectable ECC memory errors on 1 GPU(s)" in got["report.txt"]
    assert got["report.html"].startswith(b"<!DOCTYPE html>")
    assert b"gpus.ecc-errors" in got["fix-plan.txt"]


def test_redaction_is_on_by_default_and_reaches_every_member(fake_nvidia_smi: None) -> None:
    got = members(make_bundle(ecc_node(), now=NOW))
    for name, body in got.items():
        assert b"lab-gpu-07" not in body, name
        assert b"GPU-00000001-0000-0000-0000-000000000000" not in body, name
        assert b"1650000000001" not in body, name  # GPU 1's serial (builders.h100)
    smi = got["nvidia-smi-q.txt"].decode()
    assert "    Serial Number                                      : <redacted>" in smi
    assert "    GPU UUID                                           : GPU-<redacted>" in smi
    assert "    Product Name                                       : NVIDIA H100 80GB HBM3" in smi
    kept = members(make_bundle(ecc_node(), redact=False, now=NOW))
    assert b'"hostname": "lab-gpu-07"' in kept["snapshot.json"]
    assert json.loads(kept["manifest.json"])["redacted"] is False


def test_the_same_facts_give_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi: its output is not the facts'
    first = make_bundle(ecc_node(), redact=False, now=NOW)
    assert first == make_bundle(ecc_node(), redact=False, now=NOW)
    assert first[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip: no time, no name
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        infos = tar.getmembers()
    assert [m.name for m in infos] == sorted(m.name for m in infos)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in infos} == {
        (0, 0, 0, "", "", 0o644)
    }
    manifest = json.loads(members(first)["manifest.json"])
    assert manifest["left_out"] == [
        {"name": "nvidia-smi-q.txt", "why": "nvidia-smi is not on PATH"}
    ]


def test_tar_lists_it_and_doctor_and_fleet_read_it_back(tmp_path: Path) -> None:
    bundle = tmp_path / "ticket.tar.gz"
    bundle.write_bytes(make_bundle(ecc_node(), now=NOW))
    listed = subprocess.run(
        ["tar", "-tzf", str(bundle)], capture_output=True, text=True, check=True
    )
    assert "snapshot.json" in listed.stdout.split() and "manifest.json" in listed.stdout.split()
    doctor = run_gpucheck("doctor", "--from", str(bundle))
    assert doctor.returncode == 1, doctor.stderr
    assert "Uncorrectable ECC memory errors on 1 GPU(s)" in doctor.stdout
    fleet = run_gpucheck("fleet", str(bundle), "--format", "json")
    assert fleet.returncode == 1, fleet.stderr
    data = json.loads(fleet.stdout)
    assert data["summary"]["hosts"] == 1 and data["summary"]["bad_reports"] == 0


def test_the_command_writes_a_bundle_and_refuses_o_with_it(tmp_path: Path) -> None:
    bundle = tmp_path / "here.tar.gz"
    done = run_gpucheck("snapshot", "--bundle", str(bundle), "--timeout", "30")
    assert done.returncode == 0, done.stderr
    got = members(bundle.read_bytes())
    assert json.loads(got["manifest.json"])["redacted"] is True
    assert json.loads(got["snapshot.json"])["redacted"] is True
    both = run_gpucheck("snapshot", "--bundle", str(bundle), "-o", str(tmp_path / "s.json"))
    assert (both.returncode, both.stderr) == (
        2,
        "gpucheck: --bundle FILE and -o FILE: the bundle holds the snapshot; give one\n",
    )


def _tar(entries: list[tarfile.TarInfo], bodies: list[bytes]) -> bytes:
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w") as tar,
    ):
        for info, body in zip(entries, bodies, strict=True):
            tar.addfile(info, io.BytesIO(body) if info.isreg() else None)
    return raw.getvalue()


def test_a_hostile_bundle_is_refused_in_one_line() -> None:
    link = tarfile.TarInfo("snapshot.json")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
    with pytest.raises(BundleError, match=r"its snapshot\.json is not a regular file"):
        bundle_member(_tar([link], [b""]), "snapshot.json")
    traversal = tarfile.TarInfo("../../snapshot.json")
    traversal.size = 2
    with pytest.raises(BundleError, match=r"a bundle without snapshot\.json"):
        bundle_member(_tar([traversal], [b"{}"]), "snapshot.json")
    with pytest.raises(BundleError, match="not a member a bundle holds"):
        bundle_member(archive({"snapshot.json": b"{}"}), "../etc/passwd")
    with pytest.raises(BundleError, match="not a readable bundle"):
        bundle_member(b"\x1f\x8b" + b"garbage" * 10, "snapshot.json")


def test_a_bundle_that_inflates_past_the_bound_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A member claiming more than the bound (here 1 MiB, in place of 256 MiB) is never read
    to its end: the decompression stops at the bound."""
    monkeypatch.setattr(bundle_model, "INFLATED_LIMIT", 1 << 20)
    filler = tarfile.TarInfo("filler")
    filler.size = 2 << 20
    bomb = gzip.compress(filler.tobuf() + b"\0" * filler.size, mtime=0)
    assert len(bomb) < 1 << 14
    with pytest.raises(BundleError, match="over 1 MiB decompressed: not a bundle"):
        bundle_member(bomb, "snapshot.json")


def test_a_bundle_path_that_cannot_be_written_names_bundle(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "b.tar.gz"
    done = run_gpucheck("snapshot", "--bundle", str(missing), "--timeout", "30")
    assert done.returncode == 2
    assert done.stderr == f"gpucheck: --bundle: folder {missing.parent} does not exist\n"
    folder = run_gpucheck("snapshot", "--bundle", str(tmp_path), "--timeout", "30")
    assert folder.stderr == f"gpucheck: --bundle: {tmp_path} is a folder\n"
