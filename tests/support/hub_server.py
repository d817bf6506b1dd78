"""A local HTTP server in a thread (127.0.0.1, a free port) that answers as the Hugging Face
Hub answers `/{repo}/resolve/{revision}/{file}`, enough for huggingface_hub's hf_hub_download
and for gpucheck's metadata reader:

- a text file: 200 with `X-Repo-Commit` and `ETag`; a *.safetensors file (an LFS file on the
  Hub): 302 to a CDN-like `/cdn/<commit>/<sha256>` with `X-Linked-Etag` and `X-Linked-Size`;
- `/cdn/<commit>/<sha256>`: the bytes, honouring `Range` (206, `Content-Range`);
- a missing repo (or a gated one without its token): 401 `X-Error-Code: RepoNotFound` /
  `GatedRepo`; a missing revision: 404 `RevisionNotFound`; a missing file: 404 `EntryNotFound`
  (the codes huggingface_hub's utils/_http.py reads);
- `delay`: every answer waits that long (a Hub that does not answer in time).
- `trickle`: every body is sent a byte at a time, that many seconds apart (a slow link that
  keeps a connection alive while it never delivers in time).

Every request is logged (path, Range, bytes sent, whether it carried a token).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import math
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote


@dataclass
class Repo:
    files: dict[str, bytes]
    refs: dict[str, str] = field(default_factory=lambda: {"main": "a" * 40})
    token: str | None = None  # gated: this token only


@dataclass
class Served:
    path: str
    range: str | None
    sent: int
    token: bool


@dataclass
class Hub:
    repos: dict[str, Repo]
    delay: float = 0.0
    trickle: float = 0.0  # seconds between a body's bytes; 0: sent at once
    log: list[Served] = field(default_factory=list)
    url: str = ""
    cdn: str | None = None  # redirect LFS files to this server instead (http://host:port)
    status: int | None = None  # every /resolve/ answered with this (a Hub that is down: 503)

    def sent_for(self, name: str) -> int:
        """Bytes of bodies sent for a file (its CDN blob too)."""
        blobs = {_sha(data): n for repo in self.repos.values() for n, data in repo.files.items()}
        return sum(
            s.sent
            for s in self.log
            if s.path.endswith("/" + name) or blobs.get(s.path.rpartition("/")[2]) == name
        )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # (quiet)
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, body: bool) -> None:
            time.sleep(hub.delay)
            path = unquote(self.path.split("?")[0])
            if path.startswith("/cdn/"):
                return self._blob(path.removeprefix("/cdn/"), body)
            head, sep, tail = path.lstrip("/").partition("/resolve/")
            revision, _, name = tail.partition("/")
            repo = hub.repos.get(head)
            auth = self.headers.get("Authorization")
            if sep and hub.status is not None:
                return self._send(hub.status, {}, b"down", body, path)
            if not sep or repo is None:
                return self._error(401 if sep else 404, "RepoNotFound", path)
            if repo.token is not None and auth != f"Bearer {repo.token}":
                return self._error(401 if auth is None else 403, "GatedRepo", path)
            commit = repo.refs.get(revision) or (
                revision if revision in repo.refs.values() else None
            )
            if commit is None:
                return self._error(404, "RevisionNotFound", path)
            if name not in repo.files:
                return self._error(404, "EntryNotFound", path)
            data = repo.files[name]
            headers = {"X-Repo-Commit": commit}
            if name.endswith(".safetensors"):
                headers |= {
                    "Location": f"{hub.cdn or hub.url}/cdn/{commit}/{_sha(data)}",
                    "X-Linked-Etag": f'"{_sha(data)}"',
                    "X-Linked-Size": str(len(data)),
                }
                return self._send(302, headers, b"", body, path)
            headers["ETag"] = f'"{hashlib.sha1(data).hexdigest()}"'
            return self._send(200, headers, data, body, path)

        def _blob(self, where: str, body: bool) -> None:
            commit, _, sha = where.partition("/")
            found = [d for r in hub.repos.values() for d in r.files.values() if _sha(d) == sha]
            if not found:
                return self._error(404, "EntryNotFound", self.path)
            data = found[0]
            wanted = self.headers.get("Range")
            # (huggingface_hub follows a redirect within one host and asks the last answer for
            # the commit and etag: a CDN on the same host gives them.)
            headers = {"ETag": f'"{sha}"', "X-Repo-Commit": commit}
            if wanted is None:
                return self._send(200, headers, data, body, self.path)
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(206, headers, data[start : end + 1], body, self.path)

        def _error(self, status: int, code: str, path: str) -> None:
            self._send(status, {"X-Error-Code": code}, code.encode(), True, path)

        def _send(
            self, status: int, headers: dict[str, str], data: bytes, body: bool, path: str
        ) -> None:
            sent = len(data) if body else 0
            hub.log.append(
                Served(path, self.headers.get("Range"), sent, "Authorization" in self.headers)
            )
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                # (A client that gave up waiting is gone: nothing to answer.)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body and hub.trickle:
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        time.sleep(hub.trickle)
                elif body:
                    self.wfile.write(data)

    return Handler


@contextmanager
def serving(hub: Hub, tls: tuple[Path, Path] | None = None) -> Iterator[Hub]:
    """The Hub at hub.url until the block ends (then stopped and its thread joined); with
    `tls` (certificate, key for "localhost"), over https at https://localhost:<port>."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        hub.url = f"https://localhost:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A real safetensors file (written by the safetensors package) of zero-filled tensors:
    name -> (dtype as the package names it: "bfloat16", "float32"; shape)."""
    import safetensors

    sizes = {"bfloat16": 2, "float16": 2, "float32": 4, "int8": 1}
    buffers = {
        n: ctypes.create_string_buffer(sizes[d] * math.prod(s)) for n, (d, s) in tensors.items()
    }
    specs = {
        n: safetensors.TensorSpec(
            dtype=d, shape=s, data_ptr=ctypes.addressof(buffers[n]), data_len=len(buffers[n])
        )
        for n, (d, s) in tensors.items()
    }
    return bytes(safetensors.serialize(specs, metadata={"format": "pt"}))


def localhost_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate and key for "localhost", made by the openssl command; a
    client trusts it through SSL_CERT_FILE."""
    cert, key = folder / "localhost.pem", folder / "localhost.key"
    try:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
             "-keyout", str(key), "-out", str(cert)],
            capture_output=True, check=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(
            f"cannot make a test certificate with openssl ({exc}): apt-get install openssl"
        ) from None
    return cert, key
