"""On the simulated machine (tests/sim, real gpucheck in a subprocess): the docker CLI's
context read from the fake root's ~/.docker, and Docker Desktop's VM named with its fix
(docker/desktop-linux#213: toolkit configured, context desktop-linux, `docker run --gpus`
fails)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from conftest import Simulate, run_gpucheck
from sim.scenario import h100_node

HOME = "/home/ana"
SOCKET = f"unix://{HOME}/.docker/desktop/docker.sock"


def _program(root: Path, rel: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)


def test_docker_desktop_s_context_on_the_simulated_host(simulate: Simulate) -> None:
    machine = simulate(h100_node(1))
    for name in ("docker", "nvidia-ctk", "nvidia-container-cli", "nvidia-container-runtime"):
        _program(machine.root, f"usr/bin/{name}")
    docker = machine.root / HOME.lstrip("/") / ".docker"
    meta = docker / "contexts/meta" / hashlib.sha256(b"desktop-linux").hexdigest()
    meta.mkdir(parents=True)
    (docker / "config.json").write_text('{"currentContext": "desktop-linux"}')
    (meta / "meta.json").write_text(
        json.dumps({"Name": "desktop-linux", "Endpoints": {"docker": {"Host": SOCKET}}})
    )
    result = run_gpucheck("doctor", "--json", "--only", "system", env={**machine.env, "HOME": HOME})
    report = json.loads(result.stdout)
    host = report["snapshot"]["system"]["container_host"]
    assert (host["docker_context"], host["docker_endpoint"], host["dockerd"]) == (
        "desktop-linux",
        SOCKET,
        False,
    )
    found = next(f for f in report["findings"] if f["id"] == "system.container-gpu-access")
    assert found["status"] == "warn"
    commands = [s["command"] for s in found["fix"]["steps"] if s["command"]]
    assert commands == ["docker context use default"]
