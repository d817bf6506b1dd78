"""Markdown for a GitHub job summary from gpucheck's JUnit report: the verdict, then one row per
check that failed, broke or (with --strict) warned. Used by the top-level action.yml.

    python3 junit_summary.py gpucheck-junit.xml >> "$GITHUB_STEP_SUMMARY"

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import sys
from xml.etree import ElementTree as ET


def cell(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def summary(path: str) -> str:
    suite = ET.parse(path).getroot().find("testsuite")
    if suite is None:
        return "### gpucheck\n\nNo test suite in the JUnit report.\n"
    tests, failures = int(suite.get("tests", 0)), int(suite.get("failures", 0))
    errors, skipped = int(suite.get("errors", 0)), int(suite.get("skipped", 0))
    host = suite.get("hostname", "?")
    bad = []
    for case in suite.iter("testcase"):
        for kind in ("error", "failure"):
            node = case.find(kind)
            if node is not None:
                status = "error" if kind == "error" else node.get("type", "fail")
                fix = [ln for ln in (node.text or "").splitlines() if ln.startswith("fix: ")]
                bad.append((case.get("name", "?"), status, node.get("message", ""), fix))
    if not bad:
        verdict = f"✓ ready on `{host}`: {tests - skipped} checks judged, {skipped} skipped"
        return f"### gpucheck\n\n{verdict}\n"
    lines = [
        "### gpucheck",
        "",
        f"✗ not ready on `{host}`: {failures} failed, {errors} broke, of {tests} checks",
        "",
        "| check | status | problem | fix |",
        "|---|---|---|---|",
    ]
    for name, status, message, fix in bad:
        fixed = cell(fix[0][len("fix: ") :]) if fix else ""
        lines.append(f"| `{name}` | {status} | {cell(message)} | {fixed} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(summary(sys.argv[1]))
