"""The exchange's store keys are the job's own: two jobs meeting at one address and port (a
reused port, a torchrun agent's store) never read each other's reports."""

from __future__ import annotations

from gpucheck.preflight.scripts.exchange import store_prefix


def test_store_keys_are_scoped_by_job_and_attempt() -> None:
    assert store_prefix({"SLURM_JOB_ID": "4242"}) == "gpucheck-preflight/4242/0"
    assert store_prefix({"SLURM_JOB_ID": "4243"}) == "gpucheck-preflight/4243/0"
    torchrun = {"TORCHELASTIC_RUN_ID": "train-7", "TORCHELASTIC_RESTART_COUNT": "2"}
    assert store_prefix(torchrun) == "gpucheck-preflight/train-7/2"
    assert store_prefix({}) == "gpucheck-preflight/-/0"
