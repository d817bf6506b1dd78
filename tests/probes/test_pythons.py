"""--python given several times, as an environment's folder, a glob or @FILE: every interpreter
it names is probed once, side by side, and the report names each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import run_gpucheck

import gpucheck
from gpucheck.probes.frameworks import PythonNotFound, expand_pythons


def make_envs(root: Path, *names: str) -> list[str]:
    """Environments as venv lays them out: NAME/bin/python, a link to a real interpreter."""
    pythons = []
    for name in names:
        (root / name / "bin").mkdir(parents=True)
        python = root / name / "bin" / "python"
        python.symlink_to(sys.executable)
        pythons.append(str(python))
    return pythons


def test_paths_folders_globs_and_lists_name_each_interpreter_once(tmp_path: Path) -> None:
    a, b, c = make_envs(tmp_path, "a", "b", "c")
    (tmp_path / "notes.txt").write_text("not an interpreter\n")
    listing = tmp_path / "envs.txt"
    listing.write_text(f"# the team's envs\n{tmp_path}/b\n\n{c}\n")
    assert expand_pythons([a, a]) == [a]
    assert expand_pythons([str(tmp_path / "b")]) == [b]
    # A glob keeps the interpreters it matches (notes.txt and envs.txt are not).
    assert expand_pythons([f"{tmp_path}/*"]) == [a, b, c]
    assert expand_pythons([c, f"@{listing}", f"{tmp_path}/*/bin/python"]) == [c, b, a]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{root}/nothing-*", "the pattern matches nothing"),
        ("{root}/*.txt", "the pattern matches no interpreter"),
        ("@{root}/missing.txt", "cannot read"),
        ("@{root}/empty.txt", "names no interpreter"),
        ("{root}/no-env", "no such interpreter"),
    ],
)
def test_a_value_naming_no_interpreter_is_refused(tmp_path: Path, value: str, message: str) -> None:
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    (tmp_path / "no-env").mkdir()
    with pytest.raises(PythonNotFound, match=message):
        expand_pythons([value.format(root=tmp_path)])


def test_doctor_probes_every_interpreter_given(tmp_path: Path) -> None:
    a, b, c = make_envs(tmp_path, "a", "b", "c")
    result = run_gpucheck("doctor", "--json", "--python", a, "--python", f"{tmp_path}/*")
    assert result.returncode in (0, 1), result.stderr
    environments = json.loads(result.stdout)["snapshot"]["environments"]
    assert [(e["python"], e["origin"]) for e in environments] == [
        (a, "--python"),
        (b, "--python"),
        (c, "--python"),
    ]
    assert all(e["version"] == sys.version.split()[0] for e in environments)
    text = run_gpucheck("doctor", "--python", a, "--python", b).stdout
    assert f"python {a} (Python" in text and f"python {b} (Python" in text


def test_a_bad_value_among_several_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (a,) = make_envs(tmp_path, "a")
    result = run_gpucheck("snapshot", "--python", a, "--python", f"@{tmp_path}/none.txt")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot read" in result.stderr


def test_the_python_api_takes_several_interpreters(tmp_path: Path) -> None:
    a, b = make_envs(tmp_path, "a", "b")
    snap = gpucheck.snapshot(python=[a, b, a])
    assert [e.python for e in snap.environments] == [a, b]
    with pytest.raises(ValueError, match="matches nothing"):
        gpucheck.snapshot(python=f"{tmp_path}/zzz*")
