"""A command that needs an optional extra (dockerfile, mcp) names the pip of the interpreter
running gpucheck, and, run from this source checkout, an editable install of this clone: a
bare `pip install 'gpucheck-doctor[docker]'` can land in another Python, or fetch a release
that is not this checkout."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from conftest import REPO, run_gpucheck

MISSING = 'raise ModuleNotFoundError("No module named {0!r}", name="{0}")\n'


def without(module: str, tmp_path: Path) -> dict[str, str]:
    """An environment in which importing `module` fails as an uninstalled one does."""
    (tmp_path / f"{module}.py").write_text(MISSING.format(module))
    return {"PYTHONPATH": str(tmp_path)}


def test_dockerfile_without_its_extra_names_this_pythons_pip_and_the_clone(
    tmp_path: Path,
) -> None:
    recipe = tmp_path / "Dockerfile"
    recipe.write_text("FROM ubuntu:24.04\n")
    out = run_gpucheck("dockerfile", str(recipe), env=without("dockerfile_parse", tmp_path))
    assert out.returncode == 2
    pip = f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{REPO}[docker]')}"
    assert out.stderr == f"gpucheck: gpucheck dockerfile needs dockerfile_parse: {pip}\n"


def test_mcp_without_its_extra_names_this_pythons_pip_and_the_clone(tmp_path: Path) -> None:
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text(MISSING.format("mcp"))
    out = run_gpucheck("mcp", env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 2
    pip = f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{REPO}[mcp]')}"
    assert out.stderr == f"gpucheck: gpucheck mcp needs the MCP SDK (mcp): {pip}\n"
