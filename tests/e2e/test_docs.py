"""The documentation: the README as a front page, the MkDocs site under docs/, the generated
checks page. What they promise is held here: the commands a newcomer copies, links that lead
somewhere, a checks page that cannot drift from the registry, and a site that builds strictly."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
INSTALL_AND_RUN = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/gpucheck doctor"
COMMANDS = ["doctor", "snapshot", "procs", "watch", "bench", "fit", "fleet", "fix", "install"]
COMMANDS += ["preflight", "dockerfile", "explain", "mcp", "compat", "schema", "checks"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_checks_doc", REPO / "scripts" / "gen_checks_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)\n```$", text, flags=re.M | re.S)


def test_readme_is_a_front_page_with_the_two_commands_that_work_on_a_fresh_machine() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert _sh_blocks(text) == [INSTALL_AND_RUN, ci]
    assert '.venv/bin/python -m pytest -m "not slow" -n auto' in text


def test_readme_command_table_links_every_command_page_and_marks_the_extras() -> None:
    text = README.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| [`gpucheck ")]
    linked = [re.search(r"\(docs/commands/([a-z]+)\.md\)", row) for row in rows]
    assert [m.group(1) for m in linked if m] == COMMANDS
    (dockerfile,) = [row for row in rows if "commands/dockerfile.md" in row]
    (mcp,) = [row for row in rows if "commands/mcp.md" in row]
    assert "`[docker]` extra" in dockerfile and "`[mcp]` extra" in mcp


def _relative_links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return [
        link.split("#")[0]
        for link in LINK.findall(text)
        if not re.match(r"[a-z]+:", link) and not link.startswith("#")
    ]


def test_every_relative_link_in_the_readme_points_to_a_file_that_exists() -> None:
    links = _relative_links(README)
    assert "docs/index.md" in links and "CHANGELOG.md" in links
    missing = [link for link in links if not (REPO / link).exists()]
    assert missing == []


def test_every_page_under_docs_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True and config["theme"]["name"] == "material"

    def entries(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [page for item in nav for page in entries(item)]
        if isinstance(nav, dict):
            return [page for value in nav.values() for page in entries(value)]
        return []

    listed = entries(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(listed) == pages
    assert {f"commands/{name}.md" for name in COMMANDS} <= set(listed)


def test_checks_page_is_exactly_what_the_generator_writes() -> None:
    written = (DOCS / "checks.md").read_text(encoding="utf-8")
    assert written == _generator().generate(), (
        "docs/checks.md is stale: run `python scripts/gen_checks_doc.py`"
    )


def test_checks_page_has_a_row_per_registered_check_with_its_prose() -> None:
    from gpucheck.checks.registry import all_checks

    page = (DOCS / "checks.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [c.id for c in all_checks()]
    (ecc,) = [row for row in rows if row.startswith("| `gpus.ecc-errors` |")]
    assert ecc == (
        "| `gpus.ecc-errors` | no uncorrectable ECC memory errors | uncorrectable ECC counts "
        "(volatile; lifetime as evidence) | errors since boot |"
    )


def test_prose_for_a_check_the_registry_does_not_have_is_refused_by_name() -> None:
    gen = _generator()
    prose = {"checks": {"gpu.renamed-away": {"looks_at": "x", "judges": "y"}}}
    with pytest.raises(gen.ProseError, match=r"gpu\.renamed-away \(renamed\?"):
        gen.render(prose)


def test_generator_check_flag_exits_1_on_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = _generator()
    stale = tmp_path / "checks.md"
    stale.write_text("# Checks\n", encoding="utf-8")
    monkeypatch.setattr(gen, "PAGE", stale)
    assert gen.main(["--check"]) == 1
    assert "docs/checks.md is stale" in capsys.readouterr().err
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == (DOCS / "checks.md").read_text(encoding="utf-8")


def test_architecture_page_holds_the_layer_block_the_import_test_reads() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    assert text.count("<!-- layers: bottom up -->") == 1 and text.count("<!-- /layers -->") == 1
    assert "<!-- layers" not in README.read_text(encoding="utf-8")


@pytest.mark.slow
def test_mkdocs_builds_the_site_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.fail(
            "mkdocs is not installed: `pip install -e '.[test]' -c constraints-dev.txt` "
            "(the README's test command) installs mkdocs and mkdocs-material"
        )
    config, site = str(REPO / "mkdocs.yml"), str(tmp_path / "site")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--config-file", config, "--site-dir", site],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "site" / "commands" / "doctor" / "index.html").is_file()
    assert (tmp_path / "site" / "checks" / "index.html").is_file()
