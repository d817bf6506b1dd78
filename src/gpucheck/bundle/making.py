"""`gpucheck snapshot --bundle FILE.tar.gz`: what a support ticket needs, in one file. The
snapshot (redacted unless --no-redact), the doctor's report on it as JSON, text and HTML, the
fix plan, the kernel log's NVRM lines, `nvidia-smi -q` where nvidia-smi exists, and a
manifest of every member: what it holds and what was redacted.

Deterministic: members sorted by name, each with mtime 0, uid and gid 0, no owner names and
mode 0644, and gzip's own header without a time or a name; the same facts give the same bytes
but for the times the report and the manifest record. Bounded: nvidia-smi's output is cut at
NVSMI_LIMIT and given NVSMI_TIMEOUT seconds; model/bundle.py reads it back."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from datetime import datetime, timezone
from typing import IO

from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.render import render_json as plan_json
from gpucheck.fixplan.render import render_text as plan_text
from gpucheck.inputs import load_compat
from gpucheck.model.bundle import MANIFEST_MEMBER, MEMBERS, REPORT_MEMBER, SNAPSHOT_MEMBER
from gpucheck.model.redact import REDACTED, UUID, redact_here
from gpucheck.model.snapshot import Snapshot, dumps
from gpucheck.report.core import Report
from gpucheck.report.formats import render_json
from gpucheck.report.html import render_html
from gpucheck.report.text import printable, render_plain
from gpucheck.version import __version__

BUNDLE_FORMAT_VERSION = "1.0"
NVSMI_TIMEOUT = 20.0  # seconds: `nvidia-smi -q` on a node of 8 GPUs takes 1-3 s
NVSMI_LIMIT = 4 << 20  # bytes of its output kept
# `nvidia-smi -q` lines that name one board: their values are replaced in a redacted bundle.
NVSMI_IDENTIFYING = re.compile(r"^(?P<key>\s*(?:Chassis )?Serial Number\s*:)[^\n]*$", re.MULTILINE)


def nvidia_smi_query(redact: bool) -> tuple[str | None, str]:
    """`nvidia-smi -q`'s output (None where it cannot be had) and what the manifest says of it."""
    program = shutil.which("nvidia-smi")
    if program is None:
        return None, "nvidia-smi is not on PATH"
    try:
        done = subprocess.run(
            [program, "-q"],
            capture_output=True,
            timeout=NVSMI_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, f"nvidia-smi -q did not finish in {NVSMI_TIMEOUT:g} s"
    except OSError as exc:
        return None, f"nvidia-smi -q could not start: {exc.strerror}"
    text = done.stdout[:NVSMI_LIMIT].decode("utf-8", "replace")
    said = f"nvidia-smi -q (exit {done.returncode})"
    if len(done.stdout) > NVSMI_LIMIT:
        said += f", cut at {NVSMI_LIMIT >> 20} MiB"
    if redact:
        text = NVSMI_IDENTIFYING.sub(lambda m: f"{m.group('key')} {REDACTED}", text)
        text = UUID.sub(lambda m: f"{m.group('kind')}-{REDACTED}", text)
        said += "; serial numbers and UUIDs replaced by <redacted>"
    return printable_lines(text), said


def printable_lines(text: str) -> str:
    """`text` with its control characters escaped, line by line (its line breaks kept)."""
    return "".join(printable(line) + "\n" for line in text.splitlines())


def make_bundle(
    snapshot: Snapshot,
    redact: bool = True,
    compat_dirs: tuple[str, ...] = (),
    now: str | None = None,
) -> bytes:
    """The bundle's bytes (a gzipped tar) for `snapshot`, redacted unless `redact` is False;
    `now`, the time the report, the plan and the manifest record (default: now). Redaction's
    tokens are keyed anew each time (model/redact.py: two bundles cannot be linked), so only
    an unredacted bundle is the same bytes for the same facts and time."""
    now = now or datetime.now(timezone.utc).isoformat(timespec="seconds")
    snap = redact_here(snapshot) if redact else snapshot
    findings = diagnose(snap, load_compat(list(compat_dirs)))
    report = Report(snap, findings, created_at=now)
    plan = plan_for(snap, findings, None)
    plan.created_at = now
    texts: dict[str, tuple[str, str]] = {}  # name -> (content, what it holds)

    def add(name: str, render: Callable[[IO[str]], object], holds: str) -> None:
        out = io.StringIO()
        render(out)
        texts[name] = (out.getvalue(), holds)

    how = "redacted (hostname, user names, serials, UUIDs, unlisted environment values)"
    said = how if redact else "not redacted (--no-redact): names, serials and UUIDs as they are"
    add(SNAPSHOT_MEMBER, lambda s: s.write(dumps(snap)), f"the facts, {said}")
    add(
        REPORT_MEMBER,
        lambda s: render_json(report, s),
        "the doctor's report (gpucheck schema report)",
    )
    add(
        "report.txt",
        lambda s: render_plain(report, s, True),
        "the doctor's report for a person (-v)",
    )
    add("report.html", lambda s: render_html(report, s, True), "the doctor's report as a page")
    add("fix-plan.txt", lambda s: plan_text(plan, s), "the fix plan (gpucheck fix), a dry run")
    add("fix-plan.json", lambda s: plan_json(plan, s), "the fix plan as JSON (schema fix-plan)")
    nvrm = snap.system.kernel_log_nvrm
    log = "".join(printable(line) + "\n" for line in nvrm or [])
    why = snap.system.kernel_log_error or "none since boot"
    holds = "the kernel log's NVRM lines since boot (Xid, RmInitAdapter)"
    texts["kernel-log.txt"] = (log, holds if nvrm else f"{holds}: {why}")
    query, query_said = nvidia_smi_query(redact)
    if query is not None:
        texts["nvidia-smi-q.txt"] = (query, query_said)
    members = {name: body.encode("utf-8", "backslashreplace") for name, (body, _) in texts.items()}
    manifest = {
        "kind": "gpucheck-bundle",
        "bundle_format_version": BUNDLE_FORMAT_VERSION,
        "tool": {"name": "gpucheck", "version": __version__},
        "created_at": now,
        "redacted": redact,
        "files": [
            {
                "name": name,
                "holds": texts[name][1],
                "bytes": len(members[name]),
                "sha256": hashlib.sha256(members[name]).hexdigest(),
            }
            for name in sorted(members)
        ],
        "left_out": [] if query is not None else [{"name": "nvidia-smi-q.txt", "why": query_said}],
    }
    members[MANIFEST_MEMBER] = (json.dumps(manifest, indent=2) + "\n").encode("utf-8")
    assert set(members) <= set(MEMBERS)
    return archive(members)


def archive(members: dict[str, bytes]) -> bytes:
    """A gzipped tar of `members` that depends on nothing but their names and bytes."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.USTAR_FORMAT) as tar,
    ):
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(members[name]))
    return raw.getvalue()
