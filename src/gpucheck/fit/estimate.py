"""The estimate: training or serving, by the setup's mode. The parts every mode adds up (Setup,
Part, Estimate, the allowances and the verdict) are in parts.py, which both modes build on."""

from __future__ import annotations

from gpucheck.fit.parts import Estimate as Estimate
from gpucheck.fit.parts import Setup as Setup
from gpucheck.fit.parts import largest_batch as largest_batch
from gpucheck.fit.serving import infer
from gpucheck.fit.shape import ModelShape
from gpucheck.fit.training import train


def estimate(shape: ModelShape, setup: Setup) -> Estimate:
    return train(shape, setup) if setup.mode == "train" else infer(shape, setup)
