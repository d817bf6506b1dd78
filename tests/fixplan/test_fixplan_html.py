"""`fix --format html`: the plan as a page: the steps in order, each command in a copyable
block, what it changes and which findings it repairs; values from the snapshot escaped."""

from __future__ import annotations

import io

from support.builders import workstation
from support.framework_builders import on, tensorflow_cpu

from gpucheck.fixplan import diagnose, plan_for
from gpucheck.fixplan.render import FORMATS
from gpucheck.inputs import load_compat


def test_the_plan_page_shows_each_step_with_its_command_and_changes() -> None:
    snap = on(workstation(), tensorflow_cpu())
    snap.system.hostname = "ws<1>\x1b"
    plan = plan_for(snap, diagnose(snap, load_compat(None)), None)
    out = io.StringIO()
    FORMATS["html"].write(plan, out)
    page = out.getvalue()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "<title>gpucheck fix: ws&lt;1&gt;\\x1b</title>" in page
    # The command as the text plan gives it, escaped once for HTML and copyable as it reads.
    assert (
        "<pre><code>pip uninstall -y tensorflow-cpu &amp;&amp; pip install "
        "&#x27;tensorflow[and-cuda]==2.15.*&#x27;</code></pre>"
    ) in page
    assert "<li>changes tensorflow-cpu 2.15.0 -&gt; removed</li>" in page
    assert "gpucheck fix --apply runs it" in page
    assert "Nothing was changed" in page
