"""One long-lived NVML session for `gpucheck watch`, in a child process (scripts/watch.py):
NVML is initialised once, not once per sample, and the main process never imports pynvml.

Each sample is bounded in time: when the child says nothing for `bound` seconds past its
interval, it is stuck in the driver. It is killed, that sample records the call it hung in for
every GPU, and a fresh session goes on.
"""

from __future__ import annotations

import contextlib
import json
import math
import mmap
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from gpucheck.child.run import script
from gpucheck.model.holders import ambiguous_gpu
from gpucheck.watch.log import RawGpu, RawSample, value_fields
from gpucheck.watch.scripts.watch_shared import STEP_SIZE, step_text

SCRIPT = script("gpucheck.watch", "watch.py")
_decode = msgspec.json.Decoder().decode  # a quarter of json.loads' cost per sample
START_BOUND = 15.0  # seconds for nvmlInit and the handles: as long as the doctor gives NVML


class WatchError(Exception):
    """NVML cannot be used at all (no driver, no GPU): one line for the user, exit 1."""


class SelectionError(Exception):
    """--gpu names no GPU: a usage error."""


@dataclass
class Session:
    fields: list[str]
    interval: float
    bound: float = 5.0  # seconds one sample may take beyond the interval
    env: Mapping[str, str] | None = None
    gpus: list[str] | None = None  # --gpu: indices or UUID prefixes; None: every GPU
    csv: bool = False  # the child sends each sample's CSV rows (the log's text)
    values: bool = True  # the child sends each sample's values (summary, live view, JSON)
    direct: bool = False  # with csv: the child writes the log itself (send_log), unwatched
    count: int | None = None  # direct: the samples the child writes before it ends
    write_error: tuple[int, str] | None = None  # direct: the child could not write the log
    selected: list[int] = field(default_factory=list)
    restarts: int = 0
    driver_version: str | None = None
    device_count: int = 0
    _proc: subprocess.Popen[bytes] | None = None
    _poll: select.poll | None = None  # the child's stdout and stderr
    _stdout_fd: int = -1
    _out: bytes = b""
    _stderr: list[str] = field(default_factory=list)
    _page: mmap.mmap | None = None
    _names: list[str] = field(default_factory=list)  # the fields of a sample's values, in order
    _page_fd: int | None = None
    _log_socket: socket.socket | None = None
    _ended: bool = False  # the child's stdout closed: it has ended

    @property
    def _last_step(self) -> str | None:
        """The NVML call the child last began, from the page it writes before each call."""
        if self._page is None:
            return None
        return step_text(self._page[:STEP_SIZE])

    def _open_page(self) -> int:
        if self._page_fd is None:
            # A memory file where the kernel has one; a deleted temporary file elsewhere.
            if hasattr(os, "memfd_create"):
                self._page_fd = os.memfd_create("gpucheck-watch-step")
            else:
                handle, name = tempfile.mkstemp(prefix="gpucheck-watch-")
                os.unlink(name)
                self._page_fd = handle
            os.ftruncate(self._page_fd, mmap.PAGESIZE)
            self._page = mmap.mmap(self._page_fd, mmap.PAGESIZE)
        assert self._page is not None
        self._page[:STEP_SIZE] = bytes(STEP_SIZE)  # a new child: no call yet
        return self._page_fd

    def start(self) -> None:
        """Start the child and read its header; WatchError when NVML cannot be used."""
        page = self._open_page()
        self._names = value_fields(self.fields)
        options: dict[str, Any] = {
            "interval": self.interval,
            "fields": self.fields,
            "gpus": self.gpus,
            "step_fd": page,
            "csv": self.csv,
            "values": self.values,
        }
        passed = [page]
        child_end = None
        if self.direct:
            self._log_socket, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            options.update(log_socket=child_end.fileno(), count=self.count)
            passed.append(child_end.fileno())
        args = json.dumps(options)
        self._proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(self.env) if self.env is not None else None,
            pass_fds=passed,
            start_new_session=True,  # Ctrl-C reaches gpucheck, which ends the child itself
        )
        if child_end is not None:
            child_end.close()
        self._ended = False
        self._poll = select.poll()  # plain poll: the selectors module costs a tenth of a sample
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._stdout_fd = self._proc.stdout.fileno()
        for pipe in (self._proc.stdout, self._proc.stderr):
            os.set_blocking(pipe.fileno(), False)
            self._poll.register(pipe.fileno(), select.POLLIN)
        try:
            header = self._next_record(START_BOUND)
        except BaseException:  # Ctrl-C while NVML starts: the child must not outlive us
            self.stop()
            raise
        if header is None:
            where = f" in {self._last_step}" if self._last_step else ""
            self.stop()
            tail = f": {self._stderr[-1]}" if self._stderr else ""
            raise WatchError(f"NVML did not start within {START_BOUND:g} s{where}{tail}")
        error = header.get("init_error")
        if isinstance(error, dict):
            self.stop()
            raise WatchError(_init_message(error))
        count = header.get("device_count")
        self.device_count = count if isinstance(count, int) else 0
        unknown = header.get("selection_error")
        matches = header.get("selection_matches")
        if unknown is not None and isinstance(matches, list) and len(matches) > 1:
            self.stop()
            raise SelectionError(
                ambiguous_gpu(str(unknown), [(int(i), str(u)) for i, u in matches])
            )
        if unknown is not None:
            self.stop()
            raise SelectionError(
                f"--gpu {unknown}: no such GPU (the driver sees {self.device_count}: indices "
                f"0-{self.device_count - 1}, or a UUID prefix)"
            )
        chosen = header.get("selected")
        self.selected = (
            [i for i in chosen if isinstance(i, int)]
            if isinstance(chosen, list)
            else list(range(self.device_count))
        )
        self.driver_version = str(header.get("driver_version") or "") or None
        if self.device_count == 0:
            self.stop()
            raise WatchError("the NVIDIA driver sees no GPU (nvmlDeviceGetCount is 0)")

    def samples(self) -> Iterator[RawSample]:
        """Samples as they come, forever: the caller decides when to stop."""
        while True:
            if self._proc is None:
                self.start()
            record = self._next_record(self.interval + self.bound)
            if record is None:
                yield self._hung()
                continue
            if record.get("kind") == "sample":
                yield _sample(record, len(self._names))

    def _hung(self) -> RawSample:
        where = self._last_step or "NVML"
        # Its stdout closed: it died, though it may not be reaped yet.
        died = self._ended or (self._proc is not None and self._proc.poll() is not None)
        self.stop()
        self.restarts += 1
        reason = f"Crashed in {where}" if died else f"Timeout in {where}"
        now = time.time()
        width = len(self._names)
        return RawSample(now, [[i, [None] * width, None, reason] for i in self.selected])

    def _next_record(self, timeout: float) -> dict[str, Any] | None:
        """The next record from the child within `timeout` seconds, or None: a JSON line, and
        for a sample with "csv": n, the n bytes of CSV rows that follow it (as "csv", bytes)."""
        deadline = time.monotonic() + timeout
        while True:
            line, sep, rest = self._out.partition(b"\n")
            if not sep:
                if not self._read(deadline):
                    return None
                continue
            try:
                value = _decode(line)
            except msgspec.DecodeError:
                self._out = rest
                continue  # a library printing to stdout does not break the protocol
            if not isinstance(value, dict):
                self._out = rest
                continue
            size = value.get("csv")
            if isinstance(size, int):
                while len(self._out) - len(line) - 1 < size:
                    if not self._read(deadline):
                        return None
                rest = self._out[len(line) + 1 :]
                value["csv"] = rest[:size]
                rest = rest[size:]
            self._out = rest
            return value

    def _read(self, deadline: float) -> bool:
        """Wait for the child's output until `deadline`: False when it is past or the child
        ended."""
        assert self._proc is not None and self._poll is not None
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        for fd, _ in self._poll.poll(max(1, math.ceil(left * 1000))):
            try:
                chunk = os.read(fd, 1 << 18)
            except BlockingIOError:
                continue
            if not chunk:
                self._poll.unregister(fd)
                if fd == self._stdout_fd:
                    self._ended = True
                    return False  # the child ended
                continue
            if fd == self._stdout_fd:
                self._out += chunk
            else:
                self._note_stderr(chunk)
        return True

    def _note_stderr(self, chunk: bytes) -> None:
        for line in chunk.decode("utf-8", "replace").splitlines():
            if line.strip():
                self._stderr = [*self._stderr[-9:], line.strip()]

    # --- direct: the child writes the log, this process follows it through the page -------

    def send_log(self, fd: int) -> None:
        """Give the child the log to write to (NVML answered: the log is open now)."""
        assert self._log_socket is not None
        socket.send_fds(self._log_socket, [b"L"], [fd])
        self._log_socket.close()
        self._log_socket = None

    @property
    def in_write(self) -> bool:
        """The child is writing the log (a slow reader of a pipe), not stuck in the driver."""
        return self._page is not None and step_text(self._page[:3]) == "write"

    @property
    def written(self) -> int:
        """Samples the current child wrote to the log."""
        return int.from_bytes(self._page[3:7], "little") if self._page is not None else 0

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the child to end or say something (a write error);
        False once it has ended."""
        deadline = time.monotonic() + timeout
        while True:
            record = self._next_record(max(0.0, deadline - time.monotonic()))
            if record is None:
                return not self._ended
            if record.get("kind") == "write_error":
                self.write_error = (int(record.get("errno") or 0), str(record.get("message")))

    def end(self) -> None:
        """Stop the child between two rows: it ends at once unless writing one, then after."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=self.bound)  # past it, stuck in the driver: not writing
        self.stop()

    def hung(self) -> RawSample:
        """The sample the child did not finish (hung or died); a new child is needed."""
        return self._hung()

    def close(self) -> None:
        """Stop the child and let its page go: the end of the watch."""
        self.stop()
        if self._page is not None:
            self._page.close()
            self._page = None
        if self._page_fd is not None:
            os.close(self._page_fd)
            self._page_fd = None

    def stop(self) -> None:
        if self._log_socket is not None:
            self._log_socket.close()
            self._log_socket = None
        proc, self._proc = self._proc, None
        self._poll = None
        self._out = b""
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # a child stuck in the driver ignores TERM
            except (ProcessLookupError, PermissionError):
                proc.kill()
        # Unkillable for now (in the kernel): the watch ends without it.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _sample(record: dict[str, Any], width: int) -> RawSample:
    """A sample record of the child, its GPUs' rows checked for shape ([index, `width` values,
    errors or None, error or None]): a row of another shape is left out."""
    t = record.get("t")
    rows = record.get("gpus")
    gpus: list[RawGpu] = []
    for g in rows if isinstance(rows, list) else ():  # absent: the child sent the CSV only
        if (
            type(g) is list
            and len(g) == 4
            and type(g[0]) is int
            and type(g[1]) is list
            and len(g[1]) == width
            and (g[2] is None or type(g[2]) is dict)
            and (g[3] is None or type(g[3]) is str)
        ):
            gpus.append(g)
    text = record.get("csv")
    when = float(t) if isinstance(t, int | float) else time.time()
    return RawSample(when, gpus, text if isinstance(text, bytes) else None)


def _init_message(error: dict[str, object]) -> str:
    name = str(error.get("name") or "Unknown")
    message = str(error.get("message") or "")
    causes = {
        "LibraryNotFound": "no NVIDIA driver: libnvidia-ml.so.1 cannot be loaded",
        "DriverNotLoaded": "the NVIDIA driver is not loaded (no nvidia kernel module)",
        "LibRmVersionMismatch": "the driver's kernel module and libraries differ (reboot after "
        "a driver update)",
        "NoPermission": "no permission to use the GPUs (/dev/nvidia* access)",
        "BindingMissing": "the nvidia-ml-py binding cannot be imported",
    }
    cause = causes.get(name, f"NVML cannot start ({name})")
    detail = f": {message}" if message and name not in causes else ""
    return f"{cause}{detail}; run `gpucheck doctor` for the fix"
