"""Real components for the integration tests (promtool, node_exporter, Slurm, munge): finding
their programs, free loopback ports, bounded waits, and daemons that are always stopped.

A missing component fails its test (never skips it): tests/install-components.sh installs them
all, and the README's test command runs it first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

INSTALL = "tests/install-components.sh"
SBIN = ("/usr/sbin", "/sbin")  # daemons live here, often off a normal user's PATH


def program(name: str) -> str:
    path = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN]))
    if path is None:
        pytest.fail(f"{name} is not installed: run `sh {INSTALL}` (the README's test command does)")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, ready: Callable[[], bool], timeout: float = 30, detail: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} not within {timeout:.0f} s{': ' + detail if detail else ''}")


def stop(pid: int, timeout: float = 10) -> None:
    """SIGTERM the process we started, then SIGKILL it if it lingers."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (a daemon that forked): poll for it instead
            finished = 0 if _alive(pid) else pid
        if finished:
            return
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def run(*args: str, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        list(args), capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )


@contextlib.contextmanager
def serving(name: str, args: list[str], port: int, ready_path: str, logs: Path) -> Iterator[str]:
    """Start a server we own on 127.0.0.1:port, wait until `ready_path` answers over HTTP, yield
    its base URL, and stop it whatever happens."""
    log_path = logs / f"{Path(name).name}.log"
    with log_path.open("w") as log:
        daemon = subprocess.Popen([name, *args], stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            if daemon.poll() is not None:
                pytest.fail(f"{name} exited: {log_path.read_text()}")
            try:
                with urllib.request.urlopen(base + ready_path, timeout=5):
                    return True
            except OSError:
                return False

        try:
            wait_for(f"{name} answering", up, 60, str(log_path))
            yield base
        finally:
            stop(daemon.pid)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode("utf-8"))
