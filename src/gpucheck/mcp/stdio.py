"""stdin and stdout relayed through pipes around the SDK's stdio server, so that a client that
closes stdin early (`printf '...' | gpucheck mcp`, a half-closed pipe) still gets an answer to
every request it sent: at end of input the SDK cancels the handlers still running, so the
server sees its end of input only once each request read has been answered (or cancelled).
Works on file descriptors and JSON-RPC lines alone, whatever the SDK does inside."""

from __future__ import annotations

import json
import os
import select
import threading
from collections.abc import Callable, Iterator
from typing import Any

# Longer than any one tool may run (commands.run_command's limit): a request unanswered while
# nothing is answered for this long is stuck, and the server ends rather than hang.
QUIET_LIMIT_S = 610.0


class InFlight:
    """The ids of the requests read and not yet answered."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._answers = 0
        self._changed = threading.Condition()

    def add(self, request_id: object) -> None:
        with self._changed:
            self._ids.add(json.dumps(request_id))

    def done(self, request_id: object) -> None:
        with self._changed:
            self._ids.discard(json.dumps(request_id))
            self._answers += 1
            self._changed.notify_all()

    def abandon(self) -> None:
        """The client is gone: nothing is waited for any more."""
        with self._changed:
            self._ids.clear()
            self._changed.notify_all()

    def wait_answered(self, quiet_limit: float = QUIET_LIMIT_S) -> None:
        with self._changed:
            while self._ids:
                before = self._answers
                self._changed.wait(quiet_limit)
                if self._answers == before:
                    return


def _request_id(message: dict[str, Any]) -> object:
    """The id of a request the SDK will answer, else None (a notification, a response, or a
    message its validation turns away unanswered)."""
    request_id = message.get("id")
    params = message.get("params", {})
    valid = (
        message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and isinstance(params, dict)
        and isinstance(request_id, (str, int))
        and not isinstance(request_id, bool)
    )
    return request_id if valid else None


def _message(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        return {}  # the SDK answers it (a parse error, id null): nothing to wait for
    return message if isinstance(message, dict) else {}


def _lines(source: int, gone: threading.Event) -> Iterator[bytes]:
    """The lines read from `source` (the last one as it ends) until its end or `gone`."""
    pending = b""
    while not gone.is_set():
        if not select.select([source], [], [], 0.05)[0]:
            continue
        chunk = os.read(source, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        yield from (line + b"\n" for line in lines)
    if pending and not gone.is_set():
        yield pending


def _relay_in(source: int, sink: int, in_flight: InFlight, gone: threading.Event) -> None:
    with open(sink, "wb") as out:  # its close is the server's end of input
        for line in _lines(source, gone):
            message = _message(line)
            request_id = _request_id(message)
            if request_id is not None:
                in_flight.add(request_id)
            elif message.get("method") == "notifications/cancelled":
                # A cancelled request gets no answer (MCP's cancellation rule).
                params = message.get("params")
                in_flight.done(params.get("requestId") if isinstance(params, dict) else None)
            out.write(line)
            out.flush()
        in_flight.wait_answered()


def _send(sink: int, data: bytes) -> None:
    """All of `data` to `sink`, unbuffered: nothing is left to flush (and fail) at a close."""
    view = memoryview(data)
    while view:
        view = view[os.write(sink, view) :]


def _relay_out(
    source: int, sink: int, in_flight: InFlight, gone: threading.Event, stop: threading.Event
) -> None:
    # The SDK never closes its copy of stdout, so no end of file comes: once `stop` is set,
    # what is left in the pipe is read until it is empty. A client that stopped reading
    # (`gone`) ends the server; the SDK's last answers are read and dropped, never blocking it.
    pending = b""
    while True:
        if not select.select([source], [], [], 0.05)[0]:
            if stop.is_set():
                return
            continue
        *lines, pending = (pending + os.read(source, 65536)).split(b"\n")
        for line in lines:
            if not gone.is_set():
                try:
                    _send(sink, line + b"\n")
                except OSError:  # the client closed its end (EPIPE): no traceback, no retry
                    gone.set()
                    in_flight.abandon()
            message = _message(line)
            if "id" in message and ("result" in message or "error" in message):
                in_flight.done(message["id"])


def serve_relayed(run: Callable[[], None]) -> None:
    """Run `run` (the SDK's stdio server) with fd 0 and 1 replaced by the relays' pipes."""
    client_in, client_out = os.dup(0), os.dup(1)
    server_in, to_server = os.pipe()
    from_server, server_out = os.pipe()
    os.dup2(server_in, 0)
    os.dup2(server_out, 1)
    os.close(server_in)
    os.close(server_out)
    in_flight = InFlight()
    gone, stop = threading.Event(), threading.Event()
    # daemon: a server that ended without reading what the reader still writes leaves it blocked
    reader = threading.Thread(
        target=_relay_in, args=(client_in, to_server, in_flight, gone), daemon=True
    )
    writer = threading.Thread(
        target=_relay_out, args=(from_server, client_out, in_flight, gone, stop)
    )
    reader.start()
    writer.start()
    try:
        run()
    finally:
        gone.set()  # the server ended: the reader stops reading the client
        in_flight.abandon()
        stop.set()
        reader.join(timeout=1.0)
        writer.join()
        os.dup2(client_out, 1)
        os.close(client_out)
        os.close(from_server)
