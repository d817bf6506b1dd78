"""What decides whether a container sees the GPU at all: the NVIDIA container variables of an
image or service, and a Compose service's GPU reservation and runtime against the host."""

from __future__ import annotations

from gpucheck.dockerfile.compose import Service
from gpucheck.dockerfile.judge import Host, worst
from gpucheck.model.finding import Finding, Status, Subjects
from gpucheck.model.fix import Fix, Step
from gpucheck.model.layers import Layer


def judge_env(where: str, env: dict[str, str], origin: str) -> Finding | None:
    visible = env.get("NVIDIA_VISIBLE_DEVICES")
    caps = env.get("NVIDIA_DRIVER_CAPABILITIES")
    if visible is None and caps is None:
        return None
    evidence = [
        f"{origin}: {k}={v}"
        for k, v in (("NVIDIA_VISIBLE_DEVICES", visible), ("NVIDIA_DRIVER_CAPABILITIES", caps))
        if v is not None
    ]
    subjects = Subjects(paths=[where])
    if visible is not None and visible.strip().lower() in ("", "none", "void"):
        return Finding(
            "dockerfile.nvidia-env",
            Layer.GPUS,
            Status.FAIL,
            f"NVIDIA_VISIBLE_DEVICES={visible or '(empty)'} hides every GPU from the container",
            evidence,
            Fix.of(Step.manual("set NVIDIA_VISIBLE_DEVICES=all (or the GPU indices)", Layer.GPUS)),
            subjects,
        )
    wanted = {c.strip().lower() for c in (caps or "compute,utility").split(",")}
    if "all" not in wanted and "compute" not in wanted:
        return Finding(
            "dockerfile.nvidia-env",
            Layer.GPUS,
            Status.FAIL,
            f"NVIDIA_DRIVER_CAPABILITIES={caps} leaves out compute: no CUDA in the container",
            evidence,
            Fix.of(Step.manual("set NVIDIA_DRIVER_CAPABILITIES=compute,utility", Layer.GPUS)),
            subjects,
        )
    return Finding(
        "dockerfile.nvidia-env",
        Layer.GPUS,
        Status.PASS,
        "the NVIDIA container variables expose the GPU and CUDA",
        evidence,
        None,
        subjects,
    )


def judge_service(host: Host, where: str, service: Service) -> Finding:
    subjects = Subjects(paths=[where])
    evidence: list[str] = []
    problems: list[tuple[Status, str, Step]] = []
    if service.runtime == "nvidia":
        evidence.append("runtime: nvidia")
        if host.runtimes is not None and "nvidia" not in host.runtimes:
            problems.append(
                (
                    Status.FAIL,
                    "runtime nvidia is not in the host's Docker daemon.json",
                    Step.manual(
                        "install the NVIDIA Container Toolkit and run `nvidia-ctk "
                        "runtime configure --runtime=docker`",
                        Layer.SYSTEM,
                    ),
                )
            )
    for request in service.gpus:
        evidence.append(
            f"GPU reservation: driver {request.driver}, count {request.count}, device_ids "
            f"{request.device_ids or '-'}, capabilities {request.capabilities or '-'}"
        )
        if "gpu" not in request.capabilities:
            problems.append(
                (
                    Status.FAIL,
                    "a device reservation without capabilities: [gpu]",
                    Step.manual("add `capabilities: [gpu]` to the device reservation", Layer.JOB),
                )
            )
        if request.driver not in (None, "nvidia"):
            problems.append(
                (
                    Status.WARN,
                    f"device driver {request.driver}, not nvidia",
                    Step.manual("set `driver: nvidia`", Layer.JOB),
                )
            )
        if (
            request.count is not None
            and request.count.isdigit()
            and host.gpus
            and int(request.count) > len(host.gpus)
        ):
            problems.append(
                (
                    Status.FAIL,
                    f"asks for {request.count} GPUs; the host has {len(host.gpus)}",
                    Step.manual(f"reserve at most {len(host.gpus)} GPUs", Layer.JOB),
                )
            )
        known = {str(g.index) for g in host.gpus} | {g.uuid for g in host.gpus if g.uuid}
        missing = [d for d in request.device_ids if host.gpus and d not in known]
        if missing:
            problems.append(
                (
                    Status.FAIL,
                    f"device_ids {', '.join(missing)} are not GPUs of this host",
                    Step.manual(f"use device_ids among {', '.join(sorted(known))}", Layer.JOB),
                )
            )
    if not service.gpus and service.runtime != "nvidia":
        problems.append(
            (
                Status.WARN,
                "reserves no GPU (deploy.resources.reservations.devices "
                "with capabilities: [gpu], or runtime: nvidia)",
                Step.manual(
                    "add a GPU device reservation (driver: nvidia, count: all, "
                    "capabilities: [gpu])",
                    Layer.JOB,
                ),
            )
        )
    if not problems:
        return Finding(
            "compose.gpu-reservation",
            Layer.GPUS,
            Status.PASS,
            f"service {service.name}: GPUs reserved",
            evidence,
            None,
            subjects,
        )
    status = worst([s for s, _, _ in problems])
    return Finding(
        "compose.gpu-reservation",
        Layer.GPUS,
        status,
        f"service {service.name}: {problems[0][1]}",
        evidence + [p for _, p, _ in problems[1:]],
        Fix.of(*[step for _, _, step in problems]),
        subjects,
    )
