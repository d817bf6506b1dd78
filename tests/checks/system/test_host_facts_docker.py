"""Which engine the docker CLI talks to, read from files as the CLI resolves
it, and the verdict when that engine is Docker Desktop's VM (docker/roadmap#497: no GPU on
Docker Desktop for Linux; docker/docs#16105: it creates and switches to the desktop-linux
context; docker/desktop-linux#23: its socket is $HOME/.docker/desktop/docker.sock)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from support import builders
from support.evaluate import the

from gpucheck.model.finding import Status
from gpucheck.model.snapshot import ContainerHostFacts, Snapshot
from gpucheck.probes.container_host import probe_container_host

# sha256("desktop-linux"): the folder name the docker CLI stores that context's meta.json under
# (computed by hand with `printf desktop-linux | sha256sum`).
DESKTOP_DIGEST = "fe9c6bd7a66301f49ca9b6a70b217107cd1284598bfc254700c989b916da791e"
DESKTOP_SOCKET = "unix:///home/ana/.docker/desktop/docker.sock"


def _host(root: Path, *programs: str) -> None:
    for name in ("docker", *programs):
        path = root / "usr/bin" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)


def _desktop_config(root: Path) -> None:
    docker = root / "home/ana/.docker"
    (docker / "contexts/meta" / DESKTOP_DIGEST).mkdir(parents=True)
    (docker / "config.json").write_text('{"auths": {}, "currentContext": "desktop-linux"}')
    meta = {
        "Name": "desktop-linux",
        "Metadata": {"Description": "Docker Desktop"},
        "Endpoints": {"docker": {"Host": DESKTOP_SOCKET, "SkipTLSVerify": False}},
    }
    (docker / "contexts/meta" / DESKTOP_DIGEST / "meta.json").write_text(json.dumps(meta))


def test_the_digest_is_the_one_the_docker_cli_uses() -> None:
    assert hashlib.sha256(b"desktop-linux").hexdigest() == DESKTOP_DIGEST


def test_the_current_context_and_its_endpoint_are_read_from_the_cli_config(tmp_path: Path) -> None:
    _host(tmp_path)
    _desktop_config(tmp_path)
    facts = probe_container_host(tmp_path, {"HOME": "/home/ana"})
    assert facts.docker_context == "desktop-linux"
    assert facts.docker_context_source == "config"
    assert facts.docker_endpoint == DESKTOP_SOCKET
    assert facts.dockerd is False


def test_docker_host_and_docker_context_win_as_the_cli_orders_them(tmp_path: Path) -> None:
    _host(tmp_path, "dockerd")
    _desktop_config(tmp_path)
    env = {"HOME": "/home/ana", "DOCKER_HOST": "tcp://10.0.0.5:2376", "DOCKER_CONTEXT": "x"}
    facts = probe_container_host(tmp_path, env)
    assert (facts.docker_context, facts.docker_context_source, facts.docker_endpoint) == (
        "default",
        "DOCKER_HOST",
        "tcp://10.0.0.5:2376",
    )
    assert facts.dockerd is True
    env = {"HOME": "/nowhere", "DOCKER_CONFIG": "/home/ana/.docker", "DOCKER_CONTEXT": "default"}
    facts = probe_container_host(tmp_path, env)
    assert (facts.docker_context, facts.docker_context_source, facts.docker_endpoint) == (
        "default",
        "DOCKER_CONTEXT",
        "unix:///var/run/docker.sock",
    )


def test_no_cli_config_is_the_default_context_and_no_docker_no_context(tmp_path: Path) -> None:
    _host(tmp_path)
    facts = probe_container_host(tmp_path, {"HOME": "/home/ana"})
    assert (facts.docker_context, facts.docker_context_source, facts.docker_endpoint) == (
        "default",
        "default",
        "unix:///var/run/docker.sock",
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert probe_container_host(empty, {"HOME": "/home/ana"}).docker_context is None


def test_under_sudo_the_invoking_users_cli_config_is_read_not_roots(tmp_path: Path) -> None:
    # `sudo gpucheck doctor`: sudo sets HOME to /root, but the docker CLI judged is the one
    # the invoking user (SUDO_USER) runs, with the context in their ~/.docker.
    _host(tmp_path)
    _desktop_config(tmp_path)
    (tmp_path / "root/.docker").mkdir(parents=True)
    (tmp_path / "root/.docker/config.json").write_text('{"currentContext": "default"}')
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nana:x:1000:1000:Ana,,,:/home/ana:/bin/bash\n"
    )
    facts = probe_container_host(tmp_path, {"HOME": "/root", "SUDO_USER": "ana"}, euid=0)
    assert (facts.docker_context, facts.docker_context_source, facts.docker_endpoint) == (
        "desktop-linux",
        "config",
        DESKTOP_SOCKET,
    )
    # sudo run by root itself: root's own config.
    facts = probe_container_host(tmp_path, {"HOME": "/root", "SUDO_USER": "root"}, euid=0)
    assert (facts.docker_context, facts.docker_context_source) == ("default", "config")
    # A user the passwd file does not know: which context is not known, never root's.
    facts = probe_container_host(tmp_path, {"HOME": "/root", "SUDO_USER": "ghost"}, euid=0)
    assert (facts.docker_context, facts.docker_context_source, facts.docker_endpoint) == (
        None,
        None,
        None,
    )


def test_sudo_user_is_trusted_only_as_root_and_not_in_a_root_shell(tmp_path: Path) -> None:
    # `sudo -u bob gpucheck doctor` keeps ana's SUDO_USER in bob's environment: bob's CLI reads
    # bob's ~/.docker (HOME). `sudo -i` then gpucheck: root's own shell, root's own CLI.
    _host(tmp_path)
    _desktop_config(tmp_path)  # ana's config: the desktop-linux context
    (tmp_path / "home/bob/.docker").mkdir(parents=True)
    (tmp_path / "home/bob/.docker/config.json").write_text('{"currentContext": "default"}')
    (tmp_path / "root/.docker").mkdir(parents=True)
    (tmp_path / "root/.docker/config.json").write_text('{"currentContext": "default"}')
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nana:x:1000:1000:Ana,,,:/home/ana:/bin/bash\n"
    )
    bob = {"HOME": "/home/bob", "SUDO_USER": "ana"}
    facts = probe_container_host(tmp_path, bob, euid=1001)
    assert (facts.docker_context, facts.docker_context_source) == ("default", "config")
    root_shell = {"HOME": "/root", "SUDO_USER": "ana", "SUDO_COMMAND": "/bin/bash"}
    facts = probe_container_host(tmp_path, root_shell, euid=0)
    assert (facts.docker_context, facts.docker_context_source) == ("default", "config")
    # The same root with `sudo gpucheck doctor`: ana's CLI.
    sudo_gpucheck = {
        "HOME": "/root",
        "SUDO_USER": "ana",
        "SUDO_COMMAND": "/usr/bin/gpucheck doctor",
    }
    facts = probe_container_host(tmp_path, sudo_gpucheck, euid=0)
    assert facts.docker_context == "desktop-linux"


def _docker(context: str, endpoint: str | None, *, dockerd: bool | None = True) -> Snapshot:
    snap = builders.workstation()
    snap.system.container_host = ContainerHostFacts(
        engines=["docker"],
        toolkit=["nvidia-ctk", "nvidia-container-cli", "nvidia-container-runtime"],
        docker_runtimes=["nvidia"],
        docker_context=context,
        docker_context_source="config",
        docker_endpoint=endpoint,
        dockerd=dockerd,
    )
    return snap


def test_docker_desktop_warns_with_the_switch_to_the_host_engine() -> None:
    # docker/desktop-linux#213: toolkit configured, context desktop-linux, `docker run --gpus`:
    # could not select device driver "" with capabilities: [[gpu]]. Before: a PASS.
    f = the(_docker("desktop-linux", DESKTOP_SOCKET), "system.container-gpu-access")
    assert f.status is Status.WARN
    assert "Docker Desktop" in f.title
    assert f"docker CLI context: desktop-linux ({DESKTOP_SOCKET}, from config)" in f.evidence
    assert f.fix and f.fix.commands == ["docker context use default"]
    # Docker Desktop alone (no dockerd): Docker Engine must be installed first.
    alone = the(
        _docker("desktop-linux", DESKTOP_SOCKET, dockerd=False), "system.container-gpu-access"
    )
    assert alone.fix and "Install Docker Engine (docker-ce" in alone.fix.text


def test_a_desktop_socket_named_by_docker_host_is_docker_desktop_too() -> None:
    f = the(_docker("default", DESKTOP_SOCKET), "system.container-gpu-access")
    assert f.status is Status.WARN


def test_the_host_engine_passes_and_a_remote_engine_is_information() -> None:
    local = the(_docker("default", "unix:///var/run/docker.sock"), "system.container-gpu-access")
    assert local.status is Status.PASS
    remote = the(_docker("gpu-box", "ssh://ana@gpu-box"), "system.container-gpu-access")
    assert remote.status is Status.INFO
    assert "remote engine" in remote.title
