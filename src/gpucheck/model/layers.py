"""The layers of the stack, named once: a finding's section in the report, the part of the
stack a check judges (and the first word of its id's package in checks/), and the layer a fix's
step changes are all one `Layer`.

Most members are all three. A few are only one of them: EXTENSIONS (packages built against a
framework) and JOB (the workload itself: its batch size, its GPU count, where it runs) are what
a fix's step can change, never a report section; REQUIREMENTS (what the job asks of the
machine) and BENCH (gpucheck bench's measurements) are report sections whose steps change
another layer (see `step_layer`).
"""

from __future__ import annotations

import enum


class Layer(str, enum.Enum):
    """In the stack's order, lowest first: the report shows sections in it, and a fix plan runs
    lower layers' steps first (a framework build is chosen for the driver, an extension for the
    framework)."""

    SYSTEM = "system"
    DRIVER = "driver"
    GPUS = "gpus"
    NETWORK = "network"  # RDMA, GPU-NIC topology, GPUDirect RDMA, /dev/shm, memlock, NCCL's env
    CUDA = "cuda"
    CUDNN = "cudnn"
    FRAMEWORKS = "frameworks"
    EXTENSIONS = "extensions"
    REQUIREMENTS = "requirements"
    JOB = "job"
    BENCH = "bench"

    @property
    def label(self) -> str:
        """The section's heading in the terminal report."""
        return {"gpus": "GPUs", "cuda": "CUDA", "cudnn": "cuDNN"}.get(
            self.value, self.value.title()
        )

    @property
    def step_layer(self) -> Layer:
        """The layer a step of this section's fix changes where its finding does not say: a
        requirement's or a bench verdict's fix changes the job."""
        return {Layer.REQUIREMENTS: Layer.JOB, Layer.BENCH: Layer.JOB}.get(self, self)


# The order a fix plan runs steps in, lowest layer first.
LAYER_ORDER: tuple[Layer, ...] = tuple(Layer)
