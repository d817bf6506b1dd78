"""The container host's side of GPU containers, read from files (no engine is asked): which
engines and which NVIDIA Container Toolkit programs are installed, the runtimes Docker is
configured with, CDI specs, the /dev/char links the systemd cgroup driver needs, and the
cgroup version. Only on a host: inside a container these say nothing about the host."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from gpucheck.model.snapshot import ContainerHostFacts

BIN_DIRS = ("usr/bin", "usr/local/bin", "bin", "usr/sbin", "sbin")
ENGINES = ("docker", "podman", "containerd", "nerdctl")
# nvidia-container-cli (libnvidia-container-tools) does the work for every path: the legacy
# hook (nvidia-container-toolkit / -runtime-hook), the runtime, and `docker run --gpus`.
TOOLKIT = (
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
    "nvidia-container-toolkit",
    "nvidia-cdi-hook",
)
CDI_DIRS = ("etc/cdi", "var/run/cdi")


def _programs(root: Path, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(os.access(root / d / n, os.X_OK) for d in BIN_DIRS)]


def _docker_runtimes(root: Path) -> list[str] | None:
    try:
        data = json.loads((root / "etc/docker/daemon.json").read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    runtimes = data.get("runtimes") if isinstance(data, dict) else None
    return sorted(runtimes) if isinstance(runtimes, dict) else []


def _nvidia_runtime(root: Path) -> tuple[str | None, bool | None]:
    """daemon.json's nvidia runtime: (its path as registered, whether that program exists).
    A bare name is searched where dockerd would find it; an absolute path is taken as is (the
    GPU Operator's toolkit lives under /usr/local/nvidia/toolkit)."""
    try:
        data = json.loads((root / "etc/docker/daemon.json").read_text(errors="replace"))
    except (OSError, ValueError):
        return None, None
    runtimes = data.get("runtimes") if isinstance(data, dict) else None
    entry = runtimes.get("nvidia") if isinstance(runtimes, dict) else None
    path = entry.get("path") if isinstance(entry, dict) else None
    if not isinstance(path, str) or not path:
        return None, None
    if path.startswith("/"):
        return path, os.access(root / path.lstrip("/"), os.X_OK)
    return path, any(os.access(root / d / path, os.X_OK) for d in BIN_DIRS)


def _cdi_specs(root: Path) -> list[str]:
    found = []
    for rel in CDI_DIRS:
        try:
            names = sorted(os.listdir(root / rel))
        except OSError:
            continue
        found += [f"/{rel}/{n}" for n in names if n.endswith((".yaml", ".yml", ".json"))]
    return found


def _dev_char_links(root: Path) -> int | None:
    """Links in /dev/char that resolve to /dev/nvidia* nodes (nvidia-ctk system
    create-dev-char-symlinks makes them; systemd's device rules need them)."""
    try:
        names = os.listdir(root / "dev/char")
    except OSError:
        return None
    count = 0
    for name in names:
        try:
            target = os.readlink(root / "dev/char" / name)
        except OSError:
            continue
        count += os.path.basename(target).startswith("nvidia")
    return count


DEFAULT_ENDPOINT = "unix:///var/run/docker.sock"


def _json(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _home_of(root: Path, user: str) -> str | None:
    """`user`'s home folder: the root's passwd file, else (on this machine's own root) the
    system's user database, which also knows directory users (LDAP, SSSD)."""
    try:
        lines = (root / "etc/passwd").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(":")
        if len(fields) >= 7 and fields[0] == user and fields[5].startswith("/"):
            return fields[5]
    if root != Path("/"):
        return None
    import pwd

    try:
        return pwd.getpwnam(user).pw_dir or None
    except KeyError:
        return None


# A sudo that runs a shell (sudo -i, sudo -s, sudo su): what runs in it is root's own session,
# whose docker CLI reads root's ~/.docker, whoever typed sudo.
SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "su")


def _cli_home(root: Path, env: Mapping[str, str], euid: int) -> tuple[str | None, bool]:
    """The home whose .docker the CLI reads, and whether it is known. Under `sudo gpucheck`
    it is the invoking user's (SUDO_USER): sudo points HOME at /root, but the doctor judges the
    docker CLI that user runs, not root's configuration. SUDO_USER is trusted only as root (as
    procs trusts it): `sudo -u bob` keeps ana's SUDO_USER in bob's environment, and a root
    shell (sudo -i) runs root's own CLI."""
    user = env.get("SUDO_USER")
    shell = os.path.basename(env.get("SUDO_COMMAND", "").split(" ", 1)[0]) in SHELLS
    if not user or user == "root" or euid != 0 or shell:
        return env.get("HOME"), True
    home = _home_of(root, user)
    return home, home is not None


def docker_context(
    root: Path, env: Mapping[str, str], euid: int
) -> tuple[str | None, str | None, str | None]:
    """(context, where it came from, endpoint) as the docker CLI resolves them, from files:
    DOCKER_HOST wins (the default context, pointed there), then DOCKER_CONTEXT, then
    config.json's currentContext ($DOCKER_CONFIG, else ~/.docker: the invoking user's under
    sudo), else the default context. A named context's endpoint is in
    contexts/meta/<sha256 of its name>/meta.json. Under sudo for a user whose home is not
    known: (None, None, None), never root's context in its place."""
    if env.get("DOCKER_HOST"):
        return "default", "DOCKER_HOST", env["DOCKER_HOST"]
    home, known = _cli_home(root, env, euid)
    config = env.get("DOCKER_CONFIG") or (f"{home.rstrip('/')}/.docker" if home else None)
    config_dir = root / config.lstrip("/") if config else None
    name, source = env.get("DOCKER_CONTEXT"), "DOCKER_CONTEXT"
    if not name and not known and config_dir is None:
        return None, None, None
    if not name and config_dir is not None:
        current = (_json(config_dir / "config.json") or {}).get("currentContext")
        name, source = (current, "config") if isinstance(current, str) else (None, "")
    if not name or name == "default":
        return "default", source if name else "default", DEFAULT_ENDPOINT
    if config_dir is None:
        return name, source, None
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta = _json(config_dir / "contexts/meta" / digest / "meta.json") or {}
    endpoints = meta.get("Endpoints")
    docker = endpoints.get("docker") if isinstance(endpoints, dict) else None
    host = docker.get("Host") if isinstance(docker, dict) else None
    return name, source, host if isinstance(host, str) else None


def probe_container_host(
    root: Path, env: Mapping[str, str] | None = None, euid: int | None = None
) -> ContainerHostFacts:
    cgroup = root / "sys/fs/cgroup"
    version = 2 if (cgroup / "cgroup.controllers").exists() else (1 if cgroup.is_dir() else None)
    runtime_path, runtime_found = _nvidia_runtime(root)
    engines = _programs(root, ENGINES)
    context, context_source, endpoint = (
        docker_context(root, env or {}, os.geteuid() if euid is None else euid)
        if "docker" in engines
        else (None, None, None)
    )
    return ContainerHostFacts(
        docker_context=context,
        docker_context_source=context_source,
        docker_endpoint=endpoint,
        dockerd="docker" in engines and bool(_programs(root, ("dockerd",))),
        docker_nvidia_runtime_path=runtime_path,
        docker_nvidia_runtime_found=runtime_found,
        engines=engines,
        toolkit=_programs(root, TOOLKIT),
        docker_runtimes=_docker_runtimes(root),
        cdi_specs=_cdi_specs(root),
        dev_char_links=_dev_char_links(root),
        cgroup_version=version,
    )
