"""outputs.replace_atomically: the one way a file is replaced whole (`-o FILE`, fix --apply's
record). A failed write leaves the old file and no temporary one; a replaced file keeps its
mode; a new one gets the umask's; a folder that refuses the temporary file says which."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO

import pytest

from gpucheck.outputs import FolderError, replace_atomically


def test_a_replaced_file_keeps_its_mode_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "journal.json"
    target.write_text("old\n")
    target.chmod(0o640)
    replace_atomically(str(target), lambda out: out.write("new\n"))
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["journal.json"]


def test_a_new_file_gets_the_mode_the_umask_leaves(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        replace_atomically(str(tmp_path / "plan.json"), lambda out: out.write("{}\n"))
    finally:
        os.umask(old)
    assert (tmp_path / "plan.json").stat().st_mode & 0o777 == 0o640


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "env.sh"
    target.write_text("export A=1\n")

    def fails(out: IO[str]) -> None:
        out.write("export A=")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replace_atomically(str(target), fails)
    assert target.read_text() == "export A=1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["env.sh"]
    # Strict: a lone surrogate fails the write rather than landing escaped.
    with pytest.raises(UnicodeEncodeError):
        replace_atomically(str(target), lambda out: out.write("\udc80"), errors="strict")
    assert [p.name for p in tmp_path.iterdir()] == ["env.sh"]
    replace_atomically(str(target), lambda out: out.write("\udc80\n"))
    assert target.read_text() == "\\udc80\n"


def test_a_folder_that_refuses_the_temporary_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FolderError) as raised:
        replace_atomically(str(tmp_path / "gone" / "report.json"), lambda out: out.write("x"))
    assert (raised.value.errno, raised.value.filename) == (errno.ENOENT, str(tmp_path / "gone"))
