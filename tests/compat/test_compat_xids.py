"""NVIDIA's Xid catalog (compat/xids.toml): every code NVIDIA's catalog page lists, rows as the
page prints them, each Xid line read as its own number only, and bad data refused."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpucheck.compat import Compat, CompatError, data_dir, load
from gpucheck.compat.matching import Lines, Matcher
from gpucheck.compat.messages import MessageCatalog
from gpucheck.compat.xids import line_pattern

XIDS = load().xids
PAGE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

# Rows as NVIDIA's catalog page prints them (code: mnemonic, immediate, investigatory).
ON_THE_PAGE = {
    8: ("ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "RESTART_APP", "CONTACT_SUPPORT"),
    13: (
        "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
        "RESTART_APP",
        "WORKFLOW_XID_13",
    ),
    43: ("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "IGNORE", "CONTACT_SUPPORT"),
    48: ("ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
    54: ("SILENT_RUNNING_PWR_REDUCED_CLOCKING", "CHECK_MECHANICALS", "CONTACT_SUPPORT"),
    61: ("PMU_BREAKPOINT", "CONTACT_SUPPORT", "N/A; Unused"),
    74: ("NVLINK_ERROR", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"),
    78: ("VGPU_START_ERROR", "UPDATE_SWFW", "UPDATE_SWFW"),
    79: ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "CONTACT_SUPPORT"),
    92: ("EXCESSIVE_SBE_INTERRUPTS", "IGNORE", "CONTACT_SUPPORT"),
    94: ("ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", "IGNORE (sympathetic)"),
    95: ("ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "IGNORE (sympathetic)"),
    119: ("GSP_RPC_TIMEOUT", "RESET_GPU", "INVESTIGATE_SW"),
    140: ("UNRECOVERABLE_ECC_ERROR_ESCAPE", "RESET_GPU", "CONTACT_SUPPORT"),
    149: ("NVLINK_NETIR_ERROR", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
    151: ("ROBUST_CHANNEL_KEY_ROTATION_ERROR", "RESTART_VM", "CONTACT_SUPPORT"),
    154: ("GPU_RECOVERY_ACTION_CHANGED", "XID_154", "N/A Informational only regarding another Xid"),
    159: ("ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO"),
    172: ("UNCORRECTABLE_SRAM_ERROR", "", ""),
}


def test_every_code_of_nvidias_catalog_is_there_and_cited() -> None:
    assert sorted(XIDS.xids) == list(range(1, 173))  # the page's Xids table: 1 to 172
    assert XIDS.source == PAGE
    for xid in XIDS.xids.values():
        assert xid.source.startswith(PAGE), xid.code
        assert xid.mnemonic and xid.description, xid.code


def test_rows_are_as_the_catalog_page_prints_them() -> None:
    for code, (mnemonic, immediate, investigatory) in ON_THE_PAGE.items():
        xid = XIDS.get(code)
        assert xid is not None
        assert (xid.mnemonic, xid.immediate, xid.investigatory) == (
            mnemonic,
            immediate,
            investigatory,
        ), code
    assert XIDS.get(79) is not None and XIDS.get(79).applies_to == ("A100", "H100", "B100", "GB200")  # type: ignore[union-attr]
    assert XIDS.get(93) is not None and XIDS.get(93).applies_to == ("A100",)  # type: ignore[union-attr]


def test_the_action_is_the_bucket_and_the_severity_follows_it() -> None:
    assert XIDS.message(79).severity == "fail" and XIDS.message(79).step == "reboot"
    assert XIDS.message(95).command == "sudo nvidia-smi -r -i <GPU>"
    assert XIDS.message(63).severity == "info"  # IGNORE: a row marked for remapping
    assert XIDS.message(43).severity == "warn"  # the application stopped; the GPU is fine
    assert "CONTACT_SUPPORT" in XIDS.message(79).fix  # the investigatory action, if it repeats
    assert XIDS.message(61).title.endswith("(listed as unused on A100 and newer GPUs)")
    unknown = XIDS.message(999)
    assert unknown.severity == "warn" and "not in NVIDIA's catalog" in unknown.title


def test_each_line_is_read_as_its_own_number_only() -> None:
    matcher = Matcher(MessageCatalog([]), XIDS)
    for code in (13, 31, 79, 131, 154):
        line = f"NVRM: Xid (PCI:0000:3b:00): {code}, pid=1234, something"
        assert re.search(line_pattern(code), line)
        assert not re.search(line_pattern(code), line.replace(f" {code},", f" {code}1,"))
        (match,) = matcher.matches(Lines(line))
        assert match.message.id == f"xid.{code}"
    # The catalog page's own example of an old driver's line, without "PCI:".
    (match,) = matcher.matches(Lines("[...] NVRM: Xid (0000:03:00): 14, Channel 00000001"))
    assert match.message.id == "xid.14"


def test_every_quoted_example_is_read_as_its_xid() -> None:
    matcher = Matcher(MessageCatalog([]), XIDS)
    quoted = [x for x in XIDS.xids.values() if x.examples]
    assert len(quoted) >= 14
    for xid in quoted:
        assert xid.examples_from, xid.code
        for example in xid.examples:
            ids = [m.message.id for m in matcher.matches(Lines(example))]
            assert ids == [f"xid.{xid.code}"], example


def _copy(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "compat"
    shutil.copytree(data_dir(), folder)
    shutil.rmtree(folder / "parsed")
    path = folder / "xids.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            'immediate = "RESTART_BM"',
            'immediate = "REBOOT_IT"',
            r"xid\[78\]: immediate = 'REBOOT_IT'",
        ),
        ("code = 2\n", "code = 1\n", "Xid 1 appears twice"),
        ('severity = "info"\nlayer = "gpus"', 'severity = "fatal"\nlayer = "gpus"', "bucket"),
    ],
)
def test_bad_xid_data_is_refused_with_the_row_named(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    with pytest.raises(CompatError, match=problem):
        _ = Compat.from_dir(_copy(tmp_path, old, new)).xids
