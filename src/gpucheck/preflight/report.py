"""The job's verdict for a person (text), a script (JSON, `gpucheck schema preflight`) and CI
(JUnit XML: a test case per node, one for the all-reduce, one for stragglers)."""

from __future__ import annotations

from typing import IO, Any

from gpucheck.exit_status import ExitStatus
from gpucheck.model.decoding import to_dict
from gpucheck.model.json_schema import components, document, version_property
from gpucheck.model.plural import counted
from gpucheck.preflight.records import PREFLIGHT_SCHEMA_VERSION, JobVerdict
from gpucheck.report.output_format import Format, FunctionFormat, format_table, write_json
from gpucheck.report.text import printable
from gpucheck.version import __version__


def verdict_dict(verdict: JobVerdict) -> dict[str, Any]:
    return {"tool": {"name": "gpucheck", "version": __version__}, **to_dict(verdict)}


def render_json(verdict: JobVerdict, stream: IO[str], verbose: bool = False) -> None:
    write_json(verdict_dict(verdict), stream)


def _head(verdict: JobVerdict) -> str:
    nodes = counted(len(verdict.hosts), "node")
    how = f" · {verdict.allreduce.backend}" if verdict.allreduce else ""
    return (
        f"gpucheck {__version__} preflight  {counted(verdict.world, 'rank')} on {nodes} "
        f"({verdict.launcher}){how}"
    )


def render_text(verdict: JobVerdict, stream: IO[str], verbose: bool = False) -> None:
    lines = [_head(verdict)]
    for problem in verdict.problems:
        lines.append(f"  x {problem.title}")
        for rank_problem in problem.problems:
            gpus = f" (GPU {', '.join(map(str, rank_problem.gpus))})" if rank_problem.gpus else ""
            lines.append(
                f"      {rank_problem.status}: {rank_problem.title}{gpus}  [{rank_problem.id}]"
            )
            if rank_problem.fix:
                lines.append(f"        fix: {rank_problem.fix}")
        if not problem.problems:
            lines += [f"      {e}" for e in problem.evidence]
        if problem.fix:
            lines.append(f"      fix: {problem.fix}")
    if verdict.allreduce is not None:
        a = verdict.allreduce
        mark = "+" if a.correct else "x"
        lines.append(
            f"  {mark} all-reduce across {a.world} ranks ({a.backend}): busbw {a.busbw_gbs:,.2f} "
            f"GB/s at {a.bytes / 2**20:,.0f} MiB (algbw {a.algbw_gbs:,.2f}, {a.ms_per_op:,.2f} ms)"
        )
    if verdict.times and verbose:
        lines.append(
            "  i each rank's step: "
            + ", ".join(f"{t.rank}: {t.step_ms:,.2f} ms" for t in verdict.times)
        )
    if verdict.slowest_rank is not None and not any(
        p.kind == "straggler" for p in verdict.problems
    ):
        lines.append(
            f"  + slowest rank {verdict.slowest_rank}: within --min-fraction "
            f"{verdict.min_fraction:g} of the median"
        )
    lines += [
        "",
        _verdict_prefix(verdict.exit_code) + verdict.summary.split(": ", 1)[-1],
    ]
    stream.write("\n".join(printable(line) for line in lines) + "\n")


def _verdict_prefix(exit_code: int) -> str:
    """The last line's word, from the exit code: 0 ready, 1 not ready, 3 and 5 could not tell
    (a broken or unmeasured job is no verdict on the nodes)."""
    if exit_code == ExitStatus.OK:
        return "Ready: "
    if exit_code == ExitStatus.FAILED:
        return "Not ready: "
    return "Could not tell: "


def render_junit(verdict: JobVerdict, stream: IO[str], verbose: bool = False) -> None:
    """A test case per node (its ranks' failing checks), one for the ranks that never
    arrived or were lost, one for the all-reduce and one for stragglers; the exit code as a
    property, since "could not tell" fails no case."""
    from xml.etree import ElementTree as ET  # only JUnit pays for it

    cases: list[tuple[str, str, str | None, str]] = []  # (class, name, failure, body)
    for host in verdict.hosts:
        mine = [p for p in verdict.problems if p.kind == "checks" and host in p.hosts]
        body = "\n".join(f"{p.title}: " + "; ".join(p.evidence) for p in mine)
        cases.append(("gpucheck.preflight.node", host, mine[0].title if mine else None, body))
    for kind, name in (
        ("missing", "arrival"),
        ("lost", "collective"),
        ("collective", "sum"),
        ("straggler", "stragglers"),
    ):
        found = [p for p in verdict.problems if p.kind == kind]
        body = "\n".join(line for p in found for line in (p.title, *p.evidence))
        cases.append(("gpucheck.preflight.job", name, found[0].title if found else None, body))
    suite = ET.Element(
        "testsuite",
        name="gpucheck preflight",
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if c[2] is not None)),
        errors="0",
        skipped="0",
        timestamp=verdict.created_at,
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="exit_code", value=str(verdict.exit_code))
    ET.SubElement(props, "property", name="summary", value=printable(verdict.summary))
    for classname, name, failure, body in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=printable(name))
        if failure is not None:
            ET.SubElement(case, "failure", message=printable(failure)).text = printable(body)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    stream.write(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


FORMATS: dict[str, Format[JobVerdict]] = format_table(
    FunctionFormat("text", render_text, takes_verbose=True),
    FunctionFormat("json", render_json, takes_verbose=True),
    FunctionFormat("junit", render_junit, takes_verbose=True),
)


def preflight_schema() -> dict[str, Any]:
    """The JSON Schema of `gpucheck preflight --json`, generated from its records."""
    (verdict_ref,), defs = components([JobVerdict])
    body = defs.pop("JobVerdict")
    for own in ("title", "description"):  # the document's own, below
        body.pop(own, None)
    body["properties"]["schema_version"] = version_property(
        PREFLIGHT_SCHEMA_VERSION, "preflight schema"
    )
    body["properties"] = {
        "tool": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"const": "gpucheck"}, "version": {"type": "string"}},
        },
        **body["properties"],
    }
    body["required"] = list(body["properties"])
    del verdict_ref
    return document(
        "preflight",
        PREFLIGHT_SCHEMA_VERSION,
        "gpucheck preflight verdict",
        "Output of `gpucheck preflight --json` on rank 0: the job's one verdict, each rank's "
        "report, the all-reduce and each rank's times.",
        {**body, "$defs": defs},
    )
