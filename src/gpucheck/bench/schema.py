"""The JSON Schema of `gpucheck bench --json`: a doctor report (its summary, findings and
snapshot) plus the measurements under "bench", generated from the dataclasses that hold them."""

from __future__ import annotations

from typing import Any

from gpucheck.bench.measurements import BenchRun
from gpucheck.bench.report import BENCH_FORMAT_VERSION
from gpucheck.model.json_schema import components, document, version_property
from gpucheck.report.core import REPORT_SCHEMA_VERSION
from gpucheck.report.schema import report_body


def bench_schema() -> dict[str, Any]:
    (run_ref,), defs = components([BenchRun])
    # A GPU's NVML facts are the snapshot's: the bench keeps its index in their place.
    gpu = defs["GpuRun"]
    del gpu["properties"]["facts"]
    gpu["properties"] = {"index": {"type": ["integer", "null"]}, **gpu["properties"]}
    gpu["required"] = list(gpu["properties"])
    bench = {
        "allOf": [
            run_ref,
            {
                "type": "object",
                "required": ["format_version"],
                "properties": {
                    "format_version": version_property(BENCH_FORMAT_VERSION, "bench format")
                },
            },
        ]
    }
    body = report_body({"bench": bench})
    body["$defs"].update(defs)
    return document(
        "bench",
        BENCH_FORMAT_VERSION,
        "gpucheck bench report",
        f"Output of `gpucheck bench --json`: a report (schema {REPORT_SCHEMA_VERSION}) plus the "
        f"measurements under `bench` (format {BENCH_FORMAT_VERSION}).",
        body,
    )
