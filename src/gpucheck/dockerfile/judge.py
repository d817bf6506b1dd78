"""The recipe against the machine it will run on: findings with typed fixes, as the doctor's.

- the base image's CUDA against the host driver: the NVIDIA runtime refuses an nvidia/cuda
  image whose CUDA is newer than the driver's (NVIDIA_REQUIRE_CUDA), unless forward
  compatibility (a data-centre GPU and the image's cuda-compat) carries it;
- each `pip install` of torch, tensorflow or jax against the driver and the image's CUDA;
(the NVIDIA container variables and Compose reservations: containers.py).
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from gpucheck.compat import Compat, driver_text
from gpucheck.compat.images import ImageCuda
from gpucheck.dockerfile.recipe import PipInstall, Stage, split_image
from gpucheck.dockerfile.unpinned import unpinned_torch
from gpucheck.model.finding import Finding, Status, Subjects, severity
from gpucheck.model.fix import OR, Fix, Step
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import Snapshot


def worst(statuses: list[Status]) -> Status:
    return max(statuses, key=severity, default=Status.PASS)


class Host:
    """What of the snapshot the recipe is judged against."""

    def __init__(self, snapshot: Snapshot, compat: Compat) -> None:
        self.compat = compat
        self.driver = snapshot.nvml.driver_version
        cuda = snapshot.nvml.cuda_driver_version
        self.driver_cuda = Version(f"{cuda // 1000}.{cuda % 1000 // 10}") if cuda else None
        if self.driver_cuda is None and self.driver is not None:
            self.driver_cuda = compat.max_cuda_for_driver(self.driver)
        self.gpus = snapshot.nvml.gpus
        host = snapshot.system.container_host
        self.runtimes = host.docker_runtimes if host is not None else None

    def forward_compat(self) -> bool:
        rule = self.compat.images.forward
        return bool(rule and self.gpus and all(g.brand in rule.gpu_brands for g in self.gpus))


def image_cuda(host: Host, image: str, env: dict[str, str]) -> tuple[ImageCuda, str | None]:
    """What the image says of its CUDA, and the CUDA version it carries (major.minor...)."""
    repo, tag = split_image(image)
    said = host.compat.images.cuda_of(repo, tag)
    cuda = said.cuda or env.get("CUDA_VERSION")
    if cuda is None and said.tensorflow is not None:
        release = host.compat.tensorflow.release(said.tensorflow)
        cuda = release.cuda if release else None
    return said, cuda


def _mm(version: str) -> Version | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return Version(f"{match[1]}.{match[2]}") if match else None


def _from(stage: Stage) -> str:
    return f"line {stage.line}: FROM {stage.image}" if stage.line else f"image: {stage.image}"


def _has_compat(stage_image: str, apt: list[str]) -> bool:
    repo, _ = split_image(stage_image)
    # nvidia/cuda and NGC images ship the cuda-compat libraries (/usr/local/cuda/compat).
    return (
        repo == "nvidia/cuda"
        or repo.startswith("nvcr.io/nvidia/")
        or any(p.startswith("cuda-compat") for p in apt)
    )


def judge_base(host: Host, where: str, stage: Stage) -> Finding:
    said, cuda = image_cuda(host, stage.base, stage.env)
    subjects = Subjects(paths=[where])
    title = f"base image {stage.base}"
    if said.cpu_only:
        return Finding(
            "dockerfile.base-cuda",
            Layer.CUDA,
            Status.WARN,
            f"{title} is a CPU-only image: the GPU goes unused",
            [f"data: {said.source}"],
            Fix.of(
                Step.manual(f"use the GPU variant of {stage.base} (its '-gpu' tag)", Layer.CUDA)
            ),
            subjects,
        )
    if cuda is None:
        return Finding(
            "dockerfile.base-cuda",
            Layer.CUDA,
            Status.INFO,
            f"{title}: carries no CUDA gpucheck knows of (frameworks bring their own)",
            [_from(stage)],
            None,
            subjects,
        )
    wants = _mm(cuda)
    evidence = [f"{_from(stage)}: CUDA {cuda}"]
    if said.source:
        evidence.append(f"data: {said.source}")
    if host.driver is None or host.driver_cuda is None or wants is None:
        return Finding(
            "dockerfile.base-cuda",
            Layer.CUDA,
            Status.SKIP,
            f"{title}: CUDA {cuda}; the host's driver is unknown (no NVML answer)",
            evidence,
            None,
            subjects,
        )
    evidence.append(f"host driver {host.driver}: CUDA up to {host.driver_cuda}")
    if wants <= host.driver_cuda:
        return Finding(
            "dockerfile.base-cuda",
            Layer.CUDA,
            Status.PASS,
            f"{title}: CUDA {cuda} runs on driver {host.driver}",
            evidence,
            None,
            subjects,
        )
    need = host.compat.min_driver(str(wants))
    upgrade = Step.manual(
        f"upgrade the host driver to {driver_text(need) if need else f'one for CUDA {wants}'} "
        "or newer",
        Layer.DRIVER,
    )
    older = Step.manual(
        f"use a base image of CUDA {host.driver_cuda} or older (e.g. nvidia/cuda:"
        f"{host.driver_cuda}.0-runtime-ubuntu22.04)",
        Layer.CUDA,
    )
    if host.forward_compat() and _has_compat(stage.base, stage.apt_packages):
        evidence.append("data-centre GPUs and the image's cuda-compat: forward compatibility")
        return Finding(
            "dockerfile.base-cuda",
            Layer.CUDA,
            Status.WARN,
            f"{title}: CUDA {cuda} runs on driver {host.driver} only through forward "
            "compatibility (cuda-compat)",
            evidence,
            Fix.of(older, OR, upgrade),
            subjects,
        )
    return Finding(
        "dockerfile.base-cuda",
        Layer.CUDA,
        Status.FAIL,
        f"{title}: CUDA {cuda} needs a newer driver than the host's {host.driver} "
        "(the container will not start)",
        evidence,
        Fix.of(older, OR, upgrade),
        subjects,
    )


# --- pip installs ---------------------------------------------------------------------------

_INDEX_CUDA = re.compile(r"/whl/(?:nightly/)?(cu(\d+)|cpu)/?$")


def _variant(pip: PipInstall, req: Requirement) -> str | None:
    """torch's CUDA as the install asks for it: "12.4", "cpu", or None (unsaid)."""
    for url in pip.index_urls:
        match = _INDEX_CUDA.search(url)
        if match:
            return "cpu" if match[1] == "cpu" else f"{match[2][:-1]}.{match[2][-1]}"
    local = re.search(r"\+(cu(\d+)|cpu)", str(req.specifier))
    if local:
        return "cpu" if local[1] == "cpu" else f"{local[2][:-1]}.{local[2][-1]}"
    return None


def _pinned(req: Requirement) -> str | None:
    pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
    return pins[0].split("+")[0].rstrip(".*") if pins else None


def judge_pips(host: Host, where: str, stage: Stage, image_cuda_text: str | None) -> Finding | None:
    lines: list[tuple[Status, str]] = []
    steps: list[Step] = []
    for pip in stage.pips:
        for text in pip.requirements:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            name = req.name.lower()
            said = _judge_one(host, pip, req, name, image_cuda_text, steps)
            if said is not None:
                lines.append((said[0], f"line {pip.line}: {text}: {said[1]}"))
    if not lines:
        return None
    status = worst([s for s, _ in lines])
    title = {
        Status.PASS: "pip installs of the frameworks match the host driver and the image",
        Status.INFO: "pip installs of the frameworks: nothing to judge against",
        Status.WARN: "a framework install will not use the GPU as it could",
        Status.FAIL: "a framework install will not run on this host's driver",
    }[status]
    fix = Fix.of(*steps) if steps and status in (Status.WARN, Status.FAIL) else None
    return Finding(
        "dockerfile.pip-framework",
        Layer.FRAMEWORKS,
        status,
        title,
        [t for _, t in lines],
        fix,
        Subjects(paths=[where]),
    )


def _judge_one(
    host: Host,
    pip: PipInstall,
    req: Requirement,
    name: str,
    image_cuda_text: str | None,
    steps: list[Step],
) -> tuple[Status, str] | None:
    image_mm = _mm(image_cuda_text) if image_cuda_text else None
    if name == "torch":
        variant = _variant(pip, req)
        if variant is None and not str(req.specifier):
            return unpinned_torch(host, steps)
        if variant is None:
            release = host.compat.torch.release(_pinned(req) or "")
            variant = release.default_pypi_cuda if release else None
            if variant is None:
                return Status.INFO, "torch's CUDA is PyPI's default for whichever version pip picks"
        if variant == "cpu":
            cu = f"cu{image_mm.major}{image_mm.minor}" if image_mm else "cu126"
            steps.append(
                Step.manual(
                    f"install torch from https://download.pytorch.org/whl/{cu}", Layer.FRAMEWORKS
                )
            )
            return Status.WARN, "the CPU build of torch: the GPU goes unused"
        return _against(host, "torch", variant, image_mm, steps)
    if name in ("tensorflow", "tensorflow-cpu"):
        if name == "tensorflow-cpu":
            steps.append(
                Step.manual(
                    "install tensorflow[and-cuda] instead of tensorflow-cpu", Layer.FRAMEWORKS
                )
            )
            return Status.WARN, "the CPU build of TensorFlow: the GPU goes unused"
        tf_release = host.compat.tensorflow.release(_pinned(req) or "")
        cuda = tf_release.cuda if tf_release else None
        if "and-cuda" not in req.extras and image_cuda_text is None:
            steps.append(
                Step.manual(
                    "install tensorflow[and-cuda] (CUDA and cuDNN as wheels)", Layer.FRAMEWORKS
                )
            )
            return Status.WARN, "TensorFlow without [and-cuda] on a base without CUDA: CPU only"
        if cuda is None:
            return Status.INFO, "TensorFlow's CUDA depends on the version pip picks"
        return _against(host, "TensorFlow", cuda, image_mm, steps)
    if name in ("jax", "jaxlib"):
        majors = [int(m[1]) for e in req.extras if (m := re.match(r"cuda(\d+)", e))]
        if not majors:
            if name == "jaxlib":
                return None
            steps.append(
                Step.manual("install jax[cuda12] (or jax[cuda13]) for the GPU", Layer.FRAMEWORKS)
            )
            return Status.WARN, "jax without a [cudaNN] extra: CPU only"
        return _against(host, "JAX", f"{majors[0]}.0", image_mm, steps, major_only=True)
    return None


def _against(
    host: Host,
    what: str,
    cuda: str,
    image_mm: Version | None,
    steps: list[Step],
    major_only: bool = False,
) -> tuple[Status, str]:
    wants = _mm(cuda)
    said = f"{what} built with CUDA {cuda if not major_only else cuda.split('.')[0]}"
    if host.driver is not None and wants is not None:
        if major_only:
            floor = host.compat.minor_compat_floor(wants.major)
            runs = None if floor is None else Version(host.driver) >= floor
        else:
            runs = host.compat.cuda_runs_on_driver(cuda, host.driver)
        if runs is False:
            steps.append(
                Step.manual(
                    f"install a {what} build for CUDA {host.driver_cuda} or older, or upgrade the "
                    f"host driver",
                    Layer.FRAMEWORKS,
                )
            )
            return Status.FAIL, f"{said}: does not run on driver {host.driver}"
    if image_mm is not None and wants is not None and wants.major != image_mm.major:
        steps.append(
            Step.manual(
                f"match {what}'s CUDA major to the image's (CUDA {image_mm})", Layer.FRAMEWORKS
            )
        )
        return Status.WARN, (
            f"{said} in a CUDA {image_mm} image: two CUDA majors (extensions built with the "
            "image's nvcc will not load)"
        )
    if host.driver is None:
        return Status.INFO, f"{said}; the host's driver is unknown"
    return Status.PASS, f"{said}: runs on driver {host.driver}"
