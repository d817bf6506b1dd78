"""Run gpucheck with a pseudo-terminal as stdin/stdout/stderr, as a user at a shell would."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys


def on_a_terminal(
    args: list[str], env: dict[str, str], answer: bytes | None = None
) -> tuple[int, str]:
    """Exit status and everything written; `answer` is typed at the first `[y/N]` question."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO once the child has closed its side
                break
            if not chunk:
                break
            out += chunk
            if answer is not None and b"[y/N]" in out:
                os.write(leader, answer)
                answer = None
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return proc.returncode, out.decode("utf-8", "replace")
