"""On a host (not in a container) with a container engine: can its containers be given the
GPU? The NVIDIA Container Toolkit's parts per engine (docker --gpus needs nvidia-container-cli;
CDI engines a spec, or the full toolkit's runtime), daemon.json's nvidia runtime, and the engine
the docker CLI really talks to (Docker Desktop's VM, a remote engine)."""

from __future__ import annotations

from gpucheck.checks.context import Context
from gpucheck.model.distros import linux_family
from gpucheck.model.finding import Outcome
from gpucheck.model.fix import Change, Fix, Step, Tool
from gpucheck.model.layers import Layer
from gpucheck.model.snapshot import ContainerHostFacts


def toolkit_install(os_release: str | None, why: str) -> Fix:
    """Install the NVIDIA Container Toolkit (from NVIDIA's apt/dnf repository) with this
    distribution's installer, then register it with Docker."""
    rpm = linux_family(os_release) == "rpm"
    change = [Change("nvidia-container-toolkit")]
    install = (
        Step.run(why, "sudo dnf install -y nvidia-container-toolkit", Tool.DNF, changes=change)
        if rpm
        else Step.run(
            why, "sudo apt-get install -y nvidia-container-toolkit", Tool.APT, changes=change
        )
    )
    return Fix.of(
        install,
        *docker_runtime("register its runtime with Docker"),
    )


def docker_runtime(why: str) -> list[Step]:
    return [
        Step.run(why, "sudo nvidia-ctk runtime configure --runtime=docker"),
        Step.run("restart Docker", "sudo systemctl restart docker"),
    ]


def container_host(ctx: Context) -> Outcome | None:
    """On a host with a container engine: can its containers be given the GPU? `docker run
    --gpus` needs nvidia-container-cli (libnvidia-container-tools) behind every path."""
    host = ctx.snapshot.system.container_host
    if host is None or not host.engines or ctx.has_gpu is not True:
        return None
    engines = ", ".join(host.engines)
    evidence = [
        f"container engines: {engines}",
        "NVIDIA Container Toolkit: " + (", ".join(host.toolkit) or "not installed"),
    ]
    if host.docker_runtimes is not None:
        evidence.append(
            "/etc/docker/daemon.json runtimes: " + (", ".join(host.docker_runtimes) or "none")
        )
    if host.cdi_specs:
        evidence.append("CDI specs: " + ", ".join(host.cdi_specs))
    missing = []
    # docker --gpus runs nvidia-container-cli (the runtime hook); CDI engines (podman,
    # containerd, CRI-O) need only nvidia-ctk and a spec: "only the base components" (NVIDIA's
    # docs.nvidia.com/datacenter/cloud-native/container-toolkit/1.12.1/cdi-support.html).
    cdi_engines = "docker" not in host.engines
    if host.toolkit and "nvidia-container-cli" not in host.toolkit and not cdi_engines:
        missing.append("nvidia-container-cli (libnvidia-container-tools)")
    registered = host.docker_nvidia_runtime_path
    if registered is not None:
        evidence.append(
            f"daemon.json's nvidia runtime: {registered}"
            + ("" if host.docker_nvidia_runtime_found else " (not found)")
        )
    if "nvidia" in (host.docker_runtimes or []):
        # Where daemon.json registers the runtime by its own path (the GPU Operator's
        # /usr/local/nvidia/toolkit), that file is what dockerd runs, wherever it lives.
        present = (
            host.docker_nvidia_runtime_found
            if host.docker_nvidia_runtime_found is not None
            else "nvidia-container-runtime" in host.toolkit
        )
        if not present:
            missing.append(f"{registered or 'nvidia-container-runtime'}, which daemon.json names")
    engine = _docker_engine(host)
    if engine is not None:
        evidence.append(engine[0])
    if engine is not None and engine[1] != "local":
        # What the CLI talks to decides first: the host's toolkit is not that engine's.
        return _elsewhere(ctx, host, engine[1], evidence + [f"missing: {m}" for m in missing])
    if missing:
        return Outcome.fail(
            "The NVIDIA Container Toolkit is installed incompletely: containers cannot be given "
            "the GPU ('could not select device driver \"\" with capabilities: [[gpu]]')",
            *evidence,
            *[f"missing: {m}" for m in missing],
            fix=toolkit_install(
                ctx.snapshot.system.os_release,
                "reinstall the NVIDIA Container Toolkit (it brings libnvidia-container-tools; "
                "NVIDIA's apt/dnf repository)",
            ),
        )
    if not host.toolkit:
        # Docker beside NVIDIA GPUs with no toolkit, no nvidia runtime and no CDI spec: `docker
        # run --gpus` cannot work. A warning with the steps; with a CDI spec or a runtime
        # registered some other way, information.
        usable = host.cdi_specs or host.docker_nvidia_runtime_found
        verdict = Outcome.info if usable or "docker" not in host.engines else Outcome.warn
        return verdict(
            f"{engines} without the NVIDIA Container Toolkit: containers here cannot be given "
            "the GPU",
            *evidence,
            fix=toolkit_install(
                ctx.snapshot.system.os_release,
                "for GPU containers, install the NVIDIA Container Toolkit (NVIDIA's apt/dnf "
                "repository)",
            ),
        )
    legacy = {"containerd", "nerdctl"} & set(host.engines)  # the probe's engine programs
    if legacy and not host.cdi_specs and "nvidia-container-cli" in host.toolkit:
        # The full toolkit's runtime injects the GPUs itself (legacy mode): NVIDIA's device
        # plugin needs only nvidia-container-runtime as containerd's or CRI-O's default
        # low-level runtime (NVIDIA/k8s-device-plugin README, Prerequisites). No spec is no fault.
        # Podman has no such default: its GPU path is CDI (the toolkit's .deb installs no OCI
        # hook for it, NVIDIA/nvidia-container-toolkit#17), so podman alone still needs a spec.
        evidence.append(
            "no CDI spec: GPUs come through nvidia-container-runtime (legacy mode); "
            "`--device nvidia.com/gpu=...` would need `nvidia-ctk cdi generate`"
        )
    elif cdi_engines and not host.cdi_specs:
        # Without nvidia-container-cli, or with podman alone, CDI is the only path to the GPU.
        return Outcome.warn(
            f"{engines} with the NVIDIA Container Toolkit but no CDI spec: `--device "
            "nvidia.com/gpu=all` finds no such device ('unresolvable CDI devices')",
            *evidence,
            fix=Fix.of(CDI_GENERATE),
        )
    return Outcome.passed(f"{engines} with the NVIDIA Container Toolkit", *evidence)


CDI_GENERATE = Step.run(
    "generate the CDI spec that names this driver's devices and libraries",
    "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
)


def _docker_engine(host: ContainerHostFacts) -> tuple[str, str] | None:
    """(an evidence line, the engine's kind) for the engine the docker CLI talks to: desktop
    (Docker Desktop's VM: its desktop-linux context, $HOME/.docker/desktop/docker.sock),
    remote (tcp:// or ssh:// to another machine), local (this host's dockerd)."""
    if host.docker_context is None:
        return None
    endpoint = host.docker_endpoint or "unknown endpoint"
    line = f"docker CLI context: {host.docker_context} ({endpoint}"
    line += f", from {host.docker_context_source})" if host.docker_context_source else ")"
    address = endpoint.split("://", 1)[-1].split("/", 1)[0].split("@")[-1].split(":")[0]
    if host.docker_context == "desktop-linux" or "/.docker/desktop/" in endpoint:
        return line, "desktop"
    if endpoint.startswith(("tcp://", "ssh://")) and address not in ("localhost", "127.0.0.1"):
        return line, "remote"
    return line, "local"


def _elsewhere(ctx: Context, host: ContainerHostFacts, kind: str, evidence: list[str]) -> Outcome:
    """The docker CLI's engine is not this host's dockerd: its containers do not get this
    host's GPUs through the toolkit installed here."""
    if kind == "remote":
        return Outcome.info(
            "The docker CLI talks to a remote engine: its containers get that machine's GPUs, "
            "not these, and this host's NVIDIA runtime is not the one it uses",
            *evidence,
        )
    # Docker Desktop for Linux runs its engine in a VM with no GPU passthrough (docker/roadmap
    # #497; NVIDIA/nvidia-docker#1717): --gpus fails there whatever the host's toolkit.
    steps: list[Step] = [
        Step.run(
            "point the docker CLI at this host's Docker Engine, whose runtime has the GPUs",
            "docker context use default",
        )
    ]
    if not host.dockerd:
        steps.insert(
            0,
            Step.manual(
                "install Docker Engine (docker-ce, from Docker's apt/dnf repository) beside "
                "Docker Desktop (it runs on this host, not in a VM)",
                Layer.SYSTEM,
            ),
        )
    if not host.toolkit or any(e.startswith("missing: ") for e in evidence):
        steps += toolkit_install(
            ctx.snapshot.system.os_release,
            "install the NVIDIA Container Toolkit for that engine (NVIDIA's apt/dnf repository)",
        ).steps
    return Outcome.warn(
        "The docker CLI talks to Docker Desktop, whose containers run in a VM without this "
        "host's GPUs: `docker run --gpus` fails there ('could not select device driver')",
        *evidence,
        fix=Fix.of(*steps),
    )
