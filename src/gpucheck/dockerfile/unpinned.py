"""An unpinned `pip install torch` in a recipe is judged as what it installs today: the newest
release in the compat data with PyPI's CUDA build, against the host's driver and GPUs; where
that does not run there, the fix pins the build `gpucheck install torch` names for the host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet

from gpucheck.install.flow import data_as_of
from gpucheck.install.machine import Machine, MachineGpu
from gpucheck.install.resolve import torch_index
from gpucheck.install.torch_builds import CPU, resolve_torch
from gpucheck.model.finding import Status
from gpucheck.model.fix import Step
from gpucheck.model.layers import Layer
from gpucheck.model.shell import join

if TYPE_CHECKING:
    from gpucheck.dockerfile.judge import Host


def unpinned_torch(host: Host, steps: list[Step]) -> tuple[Status, str]:
    compat = host.compat
    newest = compat.torch.releases[-1]
    cuda = newest.default_pypi_cuda
    said = (
        f"unpinned torch resolves to torch {newest.version} with CUDA {cuda} today (PyPI's "
        f"build; compat data as of {data_as_of(compat)})"
    )
    if cuda is None or host.driver is None:
        return Status.INFO, f"{said}; the host's driver is unknown"
    gpus = tuple(
        MachineGpu(g.name or f"GPU {g.index}", g.compute_capability)
        for g in host.gpus
        if g.compute_capability
    )
    machine = Machine(gpus=gpus, driver=host.driver, os="linux")
    answer = resolve_torch(compat, machine, SpecifierSet())
    chosen = answer.chosen
    if chosen is not None and (chosen.release, chosen.variant) == (str(newest.version), cuda):
        return Status.PASS, f"{said}: runs on driver {host.driver}"
    if compat.cuda_runs_on_driver(cuda, host.driver) is False:
        why = f"this host's driver {host.driver} runs CUDA {host.driver_cuda} at most"
    else:
        why = next((r for r in answer.verdicts[0].reasons if str(cuda) in r), "no build here")
    if chosen is None or chosen.variant == CPU:
        steps.append(
            Step.manual(
                "no torch build in the compat data runs on this host: upgrade the host driver",
                Layer.FRAMEWORKS,
            )
        )
        return Status.FAIL, f"{said}; {why}"
    pin = f"torch=={chosen.release}.*"
    index = torch_index(compat, chosen, "linux")
    where = f" from {index}" if index else " (PyPI)"
    command = join(["pip", "install", pin, *(["--index-url", index] if index else [])])
    steps.append(Step.manual(f"pin torch in the recipe: RUN {command}", Layer.FRAMEWORKS))
    return Status.FAIL, f"{said}; {why}: pin {pin} (+{chosen.tag}){where}"
