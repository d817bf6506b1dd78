"""Machine formats of the report: JSON (versioned schema), JUnit XML (what CI systems
show as test results), Prometheus metrics (report/prometheus.py) and a self-contained HTML
page (report/html.py). Each is a Format
(output_format.py) in FORMATS, by the name --format takes."""

from __future__ import annotations

from typing import IO

from gpucheck.model.finding import Finding, Status
from gpucheck.report.core import Report
from gpucheck.report.output_format import Format, FunctionFormat, format_table, write_json


def render_json(report: Report, stream: IO[str], verbose: bool = False) -> None:
    write_json(report.to_dict(), stream)


def render_junit(report: Report, stream: IO[str], verbose: bool = False) -> None:
    """JUnit XML: a test case per finding. Fail and error are failures and errors, skip is
    skipped; a warning (a failure with --strict) passes but says so in its system-out and a
    `status` property, since JUnit has no warning state."""
    write_junit(
        report.findings,
        stream,
        exit_code=int(report.exit_code),
        strict=report.strict,
        timestamp=report.created_at,
        hostname=report.snapshot.system.hostname or "unknown",
        reason=report.not_ready_reason,
    )


def write_junit(
    findings: list[Finding],
    stream: IO[str],
    *,
    exit_code: int,
    strict: bool = False,
    timestamp: str | None = None,
    hostname: str | None = None,
    reason: str | None = None,
    suite_name: str = "gpucheck",
) -> None:
    """Findings as JUnit XML (the doctor's report, `gpucheck explain`'s answer): one test case
    per finding, the verdict's exit code as a suite property."""
    from xml.etree import ElementTree as ET  # only JUnit pays for it

    from gpucheck.report.text import printable

    failing = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
    attributes = {
        "name": suite_name,
        "tests": str(len(findings)),
        "failures": str(sum(1 for f in findings if f.status in failing - {Status.ERROR})),
        "errors": str(sum(1 for f in findings if f.status is Status.ERROR)),
        "skipped": str(sum(1 for f in findings if f.status is Status.SKIP)),
    }
    if timestamp is not None:
        attributes["timestamp"] = timestamp
    if hostname is not None:
        attributes["hostname"] = printable(hostname)
    suite = ET.Element("testsuite", attributes)
    # The verdict, whose "could not tell" (exit 5) no test case carries: a CI reading only
    # the XML would see every case pass.
    verdict = ET.SubElement(suite, "properties")
    ET.SubElement(verdict, "property", name="exit_code", value=str(exit_code))
    if reason is not None:
        ET.SubElement(verdict, "property", name="reason", value=printable(reason))
    for f in findings:
        case = ET.SubElement(suite, "testcase", classname=f"gpucheck.{f.section.value}", name=f.id)
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="status", value=f.status.value)
        # The fix's steps as data, in order: fix.N.KIND = the command (or, for a step no
        # command does, its sentence); the text below says the same for a person.
        for i, step in enumerate(f.fix.steps if f.fix else [], 1):
            value = step.command if step.command is not None else step.text
            name = f"fix.{i}.{step.kind.value}" + (f".{step.tool.value}" if step.tool else "")
            ET.SubElement(props, "property", name=name, value=printable(value))
        title = printable(f.title)
        lines = [title, *map(printable, f.evidence)]
        body = "\n".join(lines + ([f"fix: {printable(f.fix.text)}"] if f.fix else []))
        if f.status == Status.ERROR:
            ET.SubElement(case, "error", message=title).text = body
        elif f.status in failing:
            ET.SubElement(case, "failure", message=title, type=f.status.value).text = body
        elif f.status == Status.SKIP:
            ET.SubElement(case, "skipped", message=title)
        elif f.status == Status.WARN:
            ET.SubElement(case, "system-out").text = f"WARNING: {body}"
        else:
            ET.SubElement(case, "system-out").text = body
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    stream.write(ET.tostring(root, encoding="unicode", xml_declaration=True))
    stream.write("\n")


def render_text(report: Report, stream: IO[str], verbose: bool = False) -> None:
    """Rich on a terminal (or stdout with FORCE_COLOR), plain text everywhere else: a file
    written with -o never gets colour codes."""
    import os
    import sys

    forced = stream is sys.stdout and bool(os.environ.get("FORCE_COLOR"))
    if forced or (hasattr(stream, "isatty") and stream.isatty()):
        from gpucheck.report.terminal import render

        render(report, stream, verbose)
    else:
        from gpucheck.report.text import render_plain

        render_plain(report, stream, verbose)


def render_html(report: Report, stream: IO[str], verbose: bool = False) -> None:
    from gpucheck.report.html import render_html as render

    render(report, stream, verbose)


def render_prometheus(report: Report, stream: IO[str], verbose: bool = False) -> None:
    from gpucheck.report.prometheus import render_prometheus as render

    render(report, stream, verbose)


# The report's formats (doctor, dockerfile), by the name --format takes; text is the default.
FORMATS: dict[str, Format[Report]] = format_table(
    FunctionFormat("text", render_text, takes_verbose=True),
    FunctionFormat("json", render_json, takes_verbose=True),
    FunctionFormat("junit", render_junit, takes_verbose=True),
    FunctionFormat("prometheus", render_prometheus, takes_verbose=True),
    FunctionFormat("html", render_html, takes_verbose=True),
)
