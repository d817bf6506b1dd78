"""Deep probe helpers: the stderr capture (a relay process that passes fd 2 on to the parent
and keeps a copy; the "@ step" lines go to the parent's own pipe meanwhile), and the libraries
a process has mapped. Imported by framework_deep.py (standard library only; Python 3.8+)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time

from . import protocol

TYPE_CHECKING = False  # mypy treats this name as True; typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any  # noqa: F401

# Basenames (prefixes) of the CUDA libraries worth naming when they are mapped.
LIBRARY_PREFIXES = (
    "libcudart",
    "libcudnn",
    "libcublas",  # libcublasLt too
    "libnccl",
    "libcuda.so",
    "libnvrtc",
    "libcusparse",
    "libcufft",
    "libcurand",
)

MAX_WARNINGS = 50
MAX_CAPTURE = 4 * 1024 * 1024  # bytes of stderr kept for `warnings`
STEP_MARK = protocol.STEP_MARK.encode()  # how a step line starts (a library's is indented)

# Lines that mention one of these are kept whatever else is dropped.
KEYWORDS = ("cuda", "cudnn", "dlopen", "gpu", "driver", "library", "nccl", "cublas", "device")
# Banner lines that say nothing about GPUs (dropped unless they mention a keyword).
NOISE = (
    "This TensorFlow binary is optimized to use available CPU instructions",
    "To enable the following instructions",
    "oneDNN custom operations are on",
    "WARNING: All log messages before absl::InitializeLog() is called",
)
SYNC = b"\x00gpucheck-sync "

OUT_FD = protocol.OUT_FD


# --- stderr capture ---------------------------------------------------------------------------


class Capture:
    """File descriptor 2 redirected into a relay process that copies it to the parent and
    keeps it in an (unlinked) file that this process reads for `warnings`."""

    def __init__(self) -> None:
        self.active = False
        self.pid = 0
        self.read_fd = -1
        self.saved_fd = -1
        self.syncs = 0

    def start(self) -> None:
        if not (hasattr(os, "fork") and hasattr(os, "pread")):
            return  # not POSIX: no capture, the framework writes to the parent directly
        try:
            fd, path = tempfile.mkstemp(prefix="gpucheck-stderr-")
            try:
                write_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                self.read_fd = os.open(path, os.O_RDONLY)
            finally:
                os.close(fd)
                os.unlink(path)
            read_end, write_end = os.pipe()
            sys.stderr.flush()
            self.saved_fd = os.dup(2)
            pid = os.fork()
        except OSError:
            return
        if pid == 0:  # the relay
            try:
                os.close(write_end)
                os.close(self.read_fd)
                os.close(OUT_FD)  # the parent's stdout is this script's, not the relay's
                relay(read_end, self.saved_fd, write_fd)
            finally:
                os._exit(0)
        self.pid = pid
        os.close(read_end)
        os.close(write_fd)
        os.dup2(write_end, 2)
        os.close(write_end)
        protocol.STEP_FD = self.saved_fd
        self.active = True

    def text(self) -> str:
        """Everything captured so far (once the relay has caught up)."""
        if not self.active:
            return ""
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        self.syncs += 1
        marker = SYNC + str(self.syncs).encode() + b"\n"
        data = b""
        try:
            # The newline first ends a line the framework left open, so the marker starts one.
            os.write(2, b"\n" + marker)
            deadline = time.monotonic() + 2.0
            delay = 0.001
            while True:
                # The relay keeps at most MAX_CAPTURE bytes of text, and the markers after it.
                data = os.pread(self.read_fd, os.fstat(self.read_fd).st_size, 0)
                if marker in data or time.monotonic() > deadline:
                    break
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        except OSError:
            pass
        lines = [x for x in data.split(b"\n") if not x.startswith(SYNC)]
        return b"\n".join(lines).decode("utf-8", "replace")

    def stop(self) -> None:
        if not self.active:
            return
        self.active = False
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(self.saved_fd, 2)  # closes our end of the pipe: the relay sees its end
        protocol.STEP_FD = 2
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except OSError:
                break
            if done:
                break
            time.sleep(0.01)


def relay(source: int, parent: int, keep: int) -> None:
    """Copy `source` to `parent` line by line as it comes, and to `keep` (bounded)."""
    kept = 0
    pending = b""
    while True:
        try:
            chunk = os.read(source, 65536)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if chunk:
            pending += chunk
            lines = pending.split(b"\n")
            pending = lines.pop()
            if len(pending) > 65536:  # no newline in sight: pass it on as it is
                lines.append(pending)
                pending = b""
        else:
            lines = [pending] if pending else []
        for line in lines:
            if line.startswith(SYNC):
                write_all(keep, line + b"\n")
                continue
            if line.startswith(STEP_MARK):
                line = b" " + line  # only this script names steps
            data = line + b"\n"
            write_all(parent, data)
            if kept < MAX_CAPTURE:
                write_all(keep, data)
                kept += len(data)
        if not chunk:
            return


def write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass


def select_warnings(text: str) -> list[str]:
    """Lines worth keeping: no blanks, duplicates or banner noise; at most MAX_WARNINGS."""
    seen = set()
    lines = []
    for raw in text.splitlines():
        if not raw.isprintable():
            raw = "".join(c if c.isprintable() or c == "\t" else "?" for c in raw)
        line = raw.strip()
        if not line or line in seen:
            continue
        seen.add(line)
        relevant = any(k in line.lower() for k in KEYWORDS)
        if not relevant and any(n in line for n in NOISE):
            continue
        lines.append((protocol.trim(line), relevant))
    if len(lines) <= MAX_WARNINGS:
        return [line for line, _ in lines]
    relevant_idx = [i for i, (_, r) in enumerate(lines) if r]
    if len(relevant_idx) > MAX_WARNINGS:
        half = MAX_WARNINGS // 2
        keep = set(relevant_idx[:half] + relevant_idx[-(MAX_WARNINGS - half) :])
    else:
        keep = set(relevant_idx)
        for i in range(len(lines)):
            if len(keep) >= MAX_WARNINGS:
                break
            keep.add(i)
    return [line for i, (line, _) in enumerate(lines) if i in keep]


# --- records ----------------------------------------------------------------------------------


def mapped_libraries() -> list[str]:
    found: list[str] = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                if path.endswith(" (deleted)"):
                    path = path[: -len(" (deleted)")]
                if not path.startswith("/"):
                    continue
                base = os.path.basename(path)
                if base.startswith(LIBRARY_PREFIXES) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found
