"""The system layer: is there an NVIDIA GPU on this machine, and does this process (a
container, its environment variables) get to see it. machine.py holds the checks and the
container steps other layers' fixes reuse; container_host.py, what container-gpu-access
judges on a host with a container engine; cdi.py, a CDI spec generated for another driver;
image_requirement.py, an image's NVIDIA_REQUIRE_CUDA against the host driver."""

from __future__ import annotations

from gpucheck.checks.declarations import declare

DECLARED = declare(
    __name__,
    checks=(
        (
            "machine",
            "gpu-present",
            "container-gpu-access",
            "nouveau",
            "cuda-visible-devices",
            "cuda-launch-blocking",
            "probes",
        ),
        ("cdi", "cdi-spec"),
        ("image_requirement", "image-cuda-requirement"),
    ),
    reads=("system",),
)
