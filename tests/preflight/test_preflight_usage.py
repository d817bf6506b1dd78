"""Bad input to `gpucheck preflight`: one line, exit 2, before any probe or exchange."""

from __future__ import annotations

import pytest
from conftest import run_gpucheck


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--size", "2TiB"], {}, "gpucheck: --size: 2199023255552 is out of range"),
        (["--size", "16"], {}, "gpucheck: --size: '16' has no unit"),
        (["--exit-for", "rank"], {}, "gpucheck: --exit-for rank: expected one of job, node"),
        (
            [],
            {"RANK": "3", "WORLD_SIZE": "2"},
            "gpucheck: torchrun: rank 3 does not fit a world of 2",
        ),
        (
            [],
            {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "gpu[01-02"},
            "gpucheck: Slurm node list 'gpu[01-02': cannot read its first host",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], env: dict[str, str], message: str
) -> None:
    done = run_gpucheck("preflight", *args, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""
