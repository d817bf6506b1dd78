"""A real browser for the HTML reports' tests: headless Chromium (Debian's `chromium`, installed
by tests/install-components.sh) driven over the Chrome DevTools Protocol on a pipe
(--remote-debugging-pipe: requests on fd 3, replies and events on fd 4, each a JSON message
ended by a NUL byte), so nothing listens on a port. axe-core comes from the
axe-playwright-python wheel on PyPI (it vendors axe.min.js), fetched once into the test cache.
A minimal PNG reader checks the screenshots (no imaging library in the test venv)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support import reallibs

AXE_DIST, AXE_VERSION = "axe-playwright-python", "0.1.8"
AXE_MEMBER = "axe_playwright_python/axe.min.js"
INSTALL = "install it with tests/install-components.sh (Debian's chromium package)"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(f"no chromium on PATH: {INSTALL}", pytrace=False)
    return found


def axe_source(cache: Path | None = None) -> str:
    """axe.min.js, from the axe-playwright-python wheel, fetched once into the test cache."""
    base = (cache or reallibs.cache_root()) / "axe-core"
    script = base / "axe.min.js"
    with reallibs._locked(base):
        marker = reallibs._read_marker(base)
        if marker is not None and marker.get("version") == AXE_VERSION and script.is_file():
            return script.read_text(encoding="utf-8")
        reallibs._wipe(base, keep={".lock"})
        wheels = base / "wheels"
        wheels.mkdir()
        wheel = reallibs._download_wheel(AXE_DIST, AXE_VERSION, wheels)
        with zipfile.ZipFile(wheel) as zf:
            script.write_bytes(zf.read(AXE_MEMBER))
        shutil.rmtree(wheels)
        reallibs._write_marker(base, {"version": AXE_VERSION})
    return script.read_text(encoding="utf-8")


class Browser:
    """One headless Chromium; `page` sessions on it, each a CDP session of one tab."""

    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.proc, self._out, self._in = proc, to_browser, from_browser
        self._next = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})  # type: ignore[no-any-return]
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._read()
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed its DevTools pipe (it crashed or exited)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def open(self, url: str, width: int, height: int, mobile: bool) -> str:
        """A new tab of `width` x `height` CSS pixels showing `url`, loaded: its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        session: str = attached["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
            session,
        )
        self.send("Page.navigate", {"url": url}, session)
        self.wait_for("Page.loadEventFired", session)
        return session

    def evaluate(self, expression: str, session: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session,
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str) -> bytes:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session)["data"]
        return base64.b64decode(data)

    def session_events(self, session: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("sessionId") == session]


@contextmanager
def browser() -> Iterator[Browser]:
    """Headless Chromium with its DevTools on a pipe; every network request it would make is
    recorded as an event (and none can leave: the proxy it is given does not exist)."""
    binary = chromium()
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    profile = tempfile.mkdtemp(prefix="gpucheck-chromium-")

    def fds() -> None:  # the child's fd 3 reads our requests, fd 4 writes its replies
        # (Moved above 10 first: either end may itself be fd 3 or 4.)
        high_r, high_w = (
            fcntl.fcntl(to_r, fcntl.F_DUPFD, 10),
            fcntl.fcntl(from_w, fcntl.F_DUPFD, 10),
        )
        os.dup2(high_r, 3)
        os.dup2(high_w, 4)

    proc = subprocess.Popen(
        [
            binary,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",  # (the tests may run as root, in a container)
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--proxy-server=127.0.0.1:9",  # the discard port: any fetch fails, none leaves
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=fds,
        close_fds=False,  # (our pipes' ends are close-on-exec: only fds 3 and 4 go to it)
    )
    os.close(to_r)
    os.close(from_w)
    try:
        yield Browser(proc, to_w, from_r)
    finally:
        os.close(to_w)
        os.close(from_r)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGBA or RGB bytes) of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and colour in (2, 6), (depth, colour, interlace)
            channels = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        filtered, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if filtered == 1:
                line[i] = (line[i] + left) & 0xFF
            elif filtered == 2:
                line[i] = (line[i] + up) & 0xFF
            elif filtered == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif filtered == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                near = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + near) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def inked_share(data: bytes) -> float:
    """The share of a screenshot's pixels that are not the page's white background."""
    width, height, rows = png_pixels(data)
    channels = len(rows[0]) // width if rows else 3
    inked = sum(
        1
        for row in rows
        for x in range(0, len(row), channels)
        if row[x] < 245 or row[x + 1] < 245 or row[x + 2] < 245
    )
    return inked / max(1, width * height)
