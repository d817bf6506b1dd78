"""What `gpucheck explain` answers: the doctor's findings (one per message found, best
explanation first), the exit rule, and its two formats (text for a person, JSON for a script,
with its published schema)."""

from __future__ import annotations

from collections import Counter
from typing import IO, Any

from msgspec import Struct, field

from gpucheck.exit_status import ExitStatus
from gpucheck.model.decoding import to_dict
from gpucheck.model.finding import Finding, Status
from gpucheck.model.json_schema import components, document, version_property
from gpucheck.report.formats import write_junit
from gpucheck.report.text import printable
from gpucheck.version import __version__

EXPLAIN_SCHEMA_VERSION = "1.0"
NOTHING_KNOWN = (
    "nothing known was found in this text: no message of the catalog matched. "
    "`gpucheck doctor` checks the machine itself."
)
_MARK = {Status.FAIL: "FAIL", Status.WARN: "WARN", Status.INFO: "INFO"}


class Source(Struct):
    """What was read: its name (a path, "-" for standard input, "--text"), its size, and the
    snapshot that supplied facts, if any."""

    name: str
    lines: int
    bytes: int
    facts_from: str | None = None
    # The facts the decisions read from it (the driver, the GPUs, the torch builds); empty
    # where no finding needed a fact or no facts were given.
    facts: list[str] = field(default_factory=list)


class Explanation(Struct):
    source: Source
    findings: list[Finding] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """1 when a message that stops the work was explained; else 0 (nothing found, or only
        warnings and harmless messages)."""
        failed = any(f.status is Status.FAIL for f in self.findings)
        return ExitStatus.FAILED if failed else ExitStatus.OK

    @property
    def counts(self) -> dict[str, int]:
        found = Counter(f.status.value for f in self.findings)
        return {status: found.get(status, 0) for status in ("fail", "warn", "info")}

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": EXPLAIN_SCHEMA_VERSION,
            "tool": {"name": "gpucheck", "version": __version__},
            "source": to_dict(self.source),
            "summary": {
                "exit_code": self.exit_code,
                "counts": self.counts,
                "explained": bool(self.findings),
                "note": None if self.findings else NOTHING_KNOWN,
            },
            "findings": [to_dict(f) for f in self.findings],
        }

    def write_text(self, stream: IO[str]) -> None:
        """For a person: each finding with its quoted lines, what they mean, the fix and the
        source; every line escaped (the text is the user's, never executed by a terminal)."""
        source = self.source
        where = "standard input" if source.name == "-" else source.name
        facts = f", with the facts of {source.facts_from}" if source.facts_from else ""
        heading = f"gpucheck explain: {where}, {source.lines} lines{facts}"
        stream.write(printable(heading) + "\n")
        if source.facts:
            stream.write(printable(f"facts joined: {'; '.join(source.facts)}") + "\n")
        stream.write("\n")
        if not self.findings:
            stream.write(NOTHING_KNOWN + "\n")
            return
        for finding in self.findings:
            mark = _MARK.get(finding.status, finding.status.value.upper())
            harmless = " (harmless)" if finding.status is Status.INFO else ""
            stream.write(
                printable(f"{mark}{harmless}  [{finding.section.label}] {finding.title}") + "\n"
            )
            stream.write(f"      {finding.id}\n")
            for line in finding.evidence:
                stream.write(f"      {printable(line)}\n")
            if finding.fix is not None and finding.status is not Status.INFO:
                for step in finding.fix.steps:
                    stream.write(f"      fix: {printable(step.sentence())}\n")
            stream.write("\n")
        counts = self.counts
        stream.write(
            f"{counts['fail']} failing, {counts['warn']} warning, {counts['info']} harmless "
            f"(exit {self.exit_code})\n"
        )

    def write_junit(self, stream: IO[str]) -> None:
        """JUnit XML, as the doctor's report writes it: a test case per finding."""
        write_junit(
            self.findings,
            stream,
            exit_code=self.exit_code,
            reason=None if self.findings else NOTHING_KNOWN,
            suite_name="gpucheck explain",
        )


def explain_schema() -> dict[str, Any]:
    """The JSON Schema of `gpucheck explain --json` (Explanation.to_dict)."""
    (finding, source), defs = components([Finding, Source])
    count = {"type": "integer", "minimum": 0}
    body = {
        "type": "object",
        "required": ["schema_version", "tool", "source", "summary", "findings"],
        "properties": {
            "schema_version": version_property(EXPLAIN_SCHEMA_VERSION, "explain output"),
            "tool": {
                "type": "object",
                "required": ["name", "version"],
                "properties": {"name": {"const": "gpucheck"}, "version": {"type": "string"}},
            },
            "source": source,
            "summary": {
                "type": "object",
                "required": ["exit_code", "counts", "explained", "note"],
                "properties": {
                    "exit_code": {"enum": [0, 1]},
                    "counts": {
                        "type": "object",
                        "required": ["fail", "warn", "info"],
                        "properties": {"fail": count, "warn": count, "info": count},
                    },
                    "explained": {"type": "boolean"},
                    "note": {"type": ["string", "null"]},
                },
            },
            "findings": {"type": "array", "items": finding},
        },
        "$defs": defs,
    }
    return document(
        "explain",
        EXPLAIN_SCHEMA_VERSION,
        "gpucheck explain --json",
        "The messages found in a pasted error text, each a finding of the doctor's model "
        "(id explain.<message id>), the best explanation first.",
        body,
    )
