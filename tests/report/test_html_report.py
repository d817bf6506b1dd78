"""`doctor --format html`: one self-contained page with the text report's content, every
snapshot string escaped, statuses as icon and word, fixes' commands in copyable blocks."""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from support import builders
from support.evaluate import run_checks

from gpucheck.model.snapshot import dumps
from gpucheck.report.core import Report
from gpucheck.report.formats import FORMATS
from gpucheck.report.html_style import CSS


def ecc_node_report() -> Report:
    snap = builders.h100_node(8)
    snap.nvml.gpus[6].ecc_uncorrected_volatile = 3
    return Report(snap, run_checks(snap))


def html_of(report: Report, verbose: bool = False) -> str:
    out = io.StringIO()
    FORMATS["html"].write(report, out, verbose)
    return out.getvalue()


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text, as a browser's parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> _Tags:
    tags = _Tags()
    tags.feed(page)
    tags.close()
    return tags


def test_the_page_is_self_contained_and_fetches_nothing() -> None:
    page = html_of(ecc_node_report())
    tags = parsed(page)
    names = {t for t, _ in tags.tags}
    assert page.startswith("<!DOCTYPE html>")
    assert not names & {"script", "link", "img", "iframe", "object", "embed", "base"}
    for _, attrs in tags.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), name  # no event handler runs anything
            assert not (value or "").startswith(("http:", "https:", "//")), value
    assert "url(" not in page and "@import" not in page
    csp = [
        a["content"] or "" for t, a in tags.tags if a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert csp and csp[0].startswith("default-src 'none'")
    assert ("html", {"lang": "en"}) in tags.tags
    assert (
        "meta",
        {"name": "viewport", "content": "width=device-width, initial-scale=1"},
    ) in tags.tags


def test_the_page_says_what_the_text_report_says() -> None:
    page = html_of(ecc_node_report())
    text = "".join(parsed(page).text)
    assert "<title>gpucheck doctor: gpu-node-01</title>" in page
    assert "gpu-node-01 · Ubuntu 22.04.5 LTS · Linux 5.15.0-185-generic x86_64" in text
    assert "Uncorrectable ECC memory errors on 1 GPU(s)" in text
    assert "[gpus.ecc-errors]" in text
    # The verdict, as the text report's last line says it.
    assert "✗ 1 problem (1 failed)" in text
    # Each layer under its own heading, in the stack's order.
    headings = re.findall(r'<h2 id="layer-(\w+)">', page)
    assert headings[:3] == ["system", "driver", "gpus"]
    # The status is an icon and a word, never a colour alone.
    assert '<span class="st st-fail"><span aria-hidden="true">✗</span> fail</span>' in page


def test_a_fix_command_is_in_a_copyable_code_block() -> None:
    snap = builders.h100_node(1)
    snap.system.nouveau_loaded = True
    report = Report(snap, run_checks(snap))
    page = html_of(report)
    commands = [c for f in report.problems if f.fix for c in f.fix.commands]
    assert commands
    for command in commands:
        assert f"<pre><code>{command}</code></pre>" in page.replace("&#x27;", "'").replace(
            "&quot;", '"'
        ).replace("&amp;", "&").replace("&gt;", ">").replace("&lt;", "<")


def test_snapshot_text_is_escaped_and_control_characters_never_reach_the_page() -> None:
    snap = builders.h100_node(1)
    snap.system.hostname = '<script>alert(1)</script>\x1b[31m"evil"\u202e'
    snap.nvml.gpus[0].name = "<img src=x onerror=alert(2)>"
    report = Report(snap, run_checks(snap))
    page = html_of(report, verbose=True)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m&quot;evil&quot;\\u202e" in page
    assert "\x1b" not in page and "\u202e" not in page
    tags = parsed(page)
    assert not {t for t, _ in tags.tags} & {"script", "img"}


def test_verbose_shows_every_finding_with_its_evidence() -> None:
    report = ecc_node_report()
    passed = next(f for f in report.findings if f.status.value == "pass" and f.evidence)
    assert passed.evidence[0] not in "".join(parsed(html_of(report)).text)
    assert passed.evidence[0] in "".join(parsed(html_of(report, verbose=True)).text)


def test_the_style_sheet_is_responsive_printable_and_scoped() -> None:
    assert "@media print" in CSS and "@media (max-width:480px)" in CSS
    # Every rule is under .gpucheck, so a notebook's own page is not restyled.
    rules = re.findall(r"(?:^|})\s*([^{}@]+)\{", re.sub(r"@media[^{]*\{", "}", CSS))
    for selectors in rules:
        for selector in selectors.split(","):
            assert selector.strip().startswith(".gpucheck"), selector


def test_doctor_from_a_snapshot_writes_the_page(
    tmp_path: Path, gpucheck: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    saved = tmp_path / "snap.json"
    snap = builders.h100_node(2)
    snap.nvml.gpus[1].ecc_uncorrected_volatile = 3
    saved.write_text(dumps(snap), encoding="utf-8")
    out = tmp_path / "report.html"
    result = gpucheck("doctor", "--from", str(saved), "--format", "html", "-o", str(out))
    assert result.returncode == 1, result.stderr
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "Uncorrectable ECC memory errors on 1 GPU(s)" in page


def _luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of #rrggbb."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_every_text_colour_of_the_style_sheet_reads_on_its_backgrounds() -> None:
    """WCAG AA for text (4.5:1), from the colours the style sheet itself declares."""
    declared = dict(re.findall(r"--gc-([a-z-]+):(#[0-9a-f]{6})", CSS))
    texts = ["ink", "muted", "pass", "warn", "fail", "skip", "info", "error"]
    for background in ("paper", "soft"):
        for name in texts:
            high, low = sorted((_luminance(declared[name]), _luminance(declared[background])))[::-1]
            ratio = (high + 0.05) / (low + 0.05)
            assert ratio >= 4.5, (name, background, round(ratio, 2))
    code_ink, code_paper = _luminance(declared["code-ink"]), _luminance(declared["code-paper"])
    assert (code_paper + 0.05) / (code_ink + 0.05) >= 4.5
