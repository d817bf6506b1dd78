"""A report as a Jupyter cell's last expression: executed in a real notebook (nbclient driving a
real ipykernel), it gives exactly one output, the HTML report with its plain-text fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import builders

from gpucheck.model.snapshot import dumps


def _kernel_tools() -> tuple[object, object]:
    try:
        import nbclient
        import nbformat
    except ImportError:  # pragma: no cover - the test extra installs them
        pytest.fail("nbclient/ipykernel missing: pip install -e '.[test]'")
    return nbclient, nbformat


@pytest.mark.slow
def test_doctor_as_the_last_expression_of_a_cell_is_one_html_output(tmp_path: Path) -> None:
    nbclient, nbformat = _kernel_tools()
    snap = builders.h100_node(8)
    snap.nvml.gpus[6].ecc_uncorrected_volatile = 3
    path = tmp_path / "node.json"
    path.write_text(dumps(snap))
    notebook = nbformat.v4.new_notebook()  # type: ignore[attr-defined]
    notebook.cells = [
        nbformat.v4.new_code_cell(  # type: ignore[attr-defined]
            f"import gpucheck\ngpucheck.doctor(from_file={str(path)!r})"
        )
    ]
    # The kernel is this interpreter's (the test venv's ipykernel), not whatever is registered.
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    client = nbclient.NotebookClient(  # type: ignore[attr-defined]
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = notebook.cells[0].outputs
    assert [o["output_type"] for o in outputs] == ["execute_result"], outputs
    data = outputs[0]["data"]
    assert sorted(data) == ["text/html", "text/plain"]
    assert data["text/html"].startswith("<style>") and "<script" not in data["text/html"]
    assert "\x1b" not in data["text/plain"]  # plain text, no terminal colour codes
    assert "gpus.ecc-errors" in data["text/plain"] and "gpus.ecc-errors" in data["text/html"]
