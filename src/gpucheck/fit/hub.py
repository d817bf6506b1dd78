"""A model's metadata from the Hugging Face Hub: `config.json`, the safetensors index and each
safetensors file's header (HTTP Range requests), never a weight.

URLs are the Hub's `{endpoint}/{repo}/resolve/{revision}/{file}`; the Hub answers a missing,
private or gated repo with 401 and says which in `X-Error-Code` (RepoNotFound, GatedRepo,
RevisionNotFound, EntryNotFound: huggingface_hub's utils/_http.py reads the same header).
The standard library's urllib, not huggingface_hub or httpx: neither is a run-time dependency,
and a handful of bounded GET requests needs no more.
"""

from __future__ import annotations

import json
import re
import struct
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from threading import Lock
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from gpucheck.fit.hub_cache import COMMIT, HubError, HubId, HubUnreachable, hf_home
from gpucheck.fit.safetensors import count_header
from gpucheck.fit.shape import CONFIG_LIMIT, ModelShape

HUB = "https://huggingface.co"
INDEX_LIMIT = 32 * 1024 * 1024  # bytes: the largest indexes (90k tensors) are under 10 MB
# A header's length (8 bytes), then exactly that many bytes: nothing of the tensors' data.
# huggingface_hub's own reader (get_safetensors_metadata) refuses headers over 25,000,000
# bytes (constants.SAFETENSORS_MAX_HEADER_LENGTH); real ones are under 1 MB.
HEADER_LIMIT = 25_000_000
MAX_SHARDS = 4096
WORKERS = 8  # shard headers fetched side by side: 163 shards one by one would take a minute
MAX_REDIRECTS = 5
_TOKEN = re.compile(r"^[\x21-\x7e]{1,4096}$")
REQUEST_TIMEOUT = 10.0  # seconds one request may wait for the server (within the deadline)


@dataclass
class Reply:
    body: bytes
    total: int | None  # the file's size (Content-Range's total, else Content-Length)
    commit: str | None  # X-Repo-Commit: the commit the revision resolved to


@dataclass
class HubClient:
    endpoint: str
    token: str | None
    deadline: float  # time.monotonic() by which every request has ended
    received: int = 0  # bytes of bodies, all requests together
    _lock: Lock = field(default_factory=Lock)

    @property
    def host(self) -> str:
        return urlsplit(self.endpoint).netloc

    def get(
        self, hub_id: HubId, revision: str, name: str, limit: int, first: int | None = None
    ) -> Reply | None:
        """`name` at `revision` (at most `limit` bytes; with `first`, bytes [first[0], ...])
        or None where the Hub says the file is not there (EntryNotFound)."""
        url = f"{self.endpoint}/{hub_id.repo}/resolve/{quote(revision, safe='')}/{name}"
        return self.fetch(hub_id, url, limit, None if first is None else (first, first + limit))

    def fetch(
        self, hub_id: HubId, url: str, limit: int, byte_range: tuple[int, int] | None
    ) -> Reply | None:
        for _ in range(MAX_REDIRECTS + 1):
            request = urllib.request.Request(url, headers={"User-Agent": "gpucheck"})
            if byte_range is not None:
                request.add_header("Range", f"bytes={byte_range[0]}-{byte_range[1] - 1}")
            if self.token and urlsplit(url).netloc == self.host:
                # Never to another host: a CDN's signed URL needs none, and must not see it.
                request.add_header("Authorization", f"Bearer {self.token}")
            try:
                with _OPENER.open(request, timeout=self._wait()) as response:
                    return self._read(hub_id, response, limit, byte_range, url)
            except (HubError, HubUnreachable):  # (ours, from _read: not a broken connection)
                raise
            except urllib.error.HTTPError as exc:
                exc.close()  # (its body is not read: the headers say it all)
                location = exc.headers.get("Location")
                if exc.code in (301, 302, 303, 307, 308) and location:
                    url = self._follow(url, location)
                    continue
                self._refuse(hub_id, exc.code, exc.headers)
                return None  # (EntryNotFound: no such file in the repo)
            except TimeoutError:
                raise self._late() from None
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, TimeoutError):
                    raise self._late() from None
                raise HubUnreachable(f"cannot reach {self.host}: {exc.reason}") from None
            except OSError as exc:  # a connection reset
                raise HubUnreachable(f"cannot read from {self.host}: {exc}") from None
            except ValueError:  # (a malformed answer; its text may quote a header: not shown)
                raise HubUnreachable(f"cannot read from {self.host}: a malformed answer") from None
        raise HubError(f"{hub_id}: more than {MAX_REDIRECTS} redirects from {self.host}")

    def _wait(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._late()
        return min(left, REQUEST_TIMEOUT)

    def _late(self) -> HubUnreachable:
        return HubUnreachable(f"{self.host} did not answer in time (--timeout)")

    def _follow(self, url: str, location: str) -> str:
        """A redirect is followed to https, or within the same host and scheme (a mirror
        on plain http): never downgraded to http on another host."""
        target = urljoin(url, location)
        was, now = urlsplit(url), urlsplit(target)
        if now.scheme == "https" or (now.scheme, now.netloc) == (was.scheme, was.netloc):
            return target
        raise HubError(f"{self.host} redirected to {now.scheme}://{now.netloc}: not followed "
                       "(only https, or the same host)")  # fmt: skip

    def _read(
        self, hub_id: HubId, response: Any, limit: int, byte_range: tuple[int, int] | None, url: str
    ) -> Reply:
        body = bytearray()
        while len(body) <= limit:
            # read1: what has arrived, after at most one receive (read waits for every byte
            # asked for, so a server trickling a byte a second would outlast --timeout), and
            # the deadline checked after each piece.
            chunk = response.read1(min(65536, limit + 1 - len(body)))
            if not chunk:
                break
            body += chunk
            self._wait()
        with self._lock:
            self.received += len(body)
        if byte_range is None and len(body) > limit:
            raise HubError(
                f"{hub_id}: {_name(url)} is over {limit:,} bytes: not a model's metadata"
            )
        headers: Message = response.headers
        if byte_range is not None and byte_range[0] > 0 and response.status != 206:
            raise HubError(f"{self.host} ignores Range requests: cannot read only a header")
        total = _total(headers.get("Content-Range")) if response.status == 206 else None
        if total is None and response.status == 200:
            length = headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        return Reply(bytes(body[:limit]), total, headers.get("X-Repo-Commit"))

    def _refuse(self, hub_id: HubId, status: int, headers: Message) -> None:
        """Raises for any refusal but a missing file (EntryNotFound, or a bare 404)."""
        code = headers.get("X-Error-Code")
        page = f"{self.endpoint}/{hub_id.repo}"
        if code == "EntryNotFound" or (status == 404 and code is None):
            return
        if code == "RevisionNotFound":
            raise HubError(f"{hub_id}: {hub_id.repo} has no revision {hub_id.ref!r} on {self.host}")
        if code == "GatedRepo" or status in (401, 403):
            # (The Hub answers 401 for a missing repo too, so as not to reveal private ones.)
            if self.token:
                raise HubError(
                    f"{hub_id} is gated or private, or not on {self.host}; HF_TOKEN gives no "
                    f"access: accept the license at {page}"
                )
            raise HubError(
                f"{hub_id} is gated or private, or not on {self.host}: set HF_TOKEN or accept "
                f"the license at {page}"
            )
        if code == "RepoNotFound":
            raise HubError(f"{hub_id}: no such model on {self.host}")
        if status == 429 or status >= 500:
            raise HubUnreachable(f"{self.host} answered {status} (try again later)")
        raise HubError(f"{hub_id}: {self.host} answered {status}")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects come back as HTTPError: HubClient.fetch decides which to follow."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _total(content_range: str | None) -> int | None:
    """`bytes 0-99999/4945241` -> 4945241 (None: `*`, or no header)."""
    size = (content_range or "").rpartition("/")[2]
    return int(size) if size.isdigit() else None


def _name(url: str) -> str:
    return urlsplit(url).path.rpartition("/")[2]


def endpoint_from(env: Mapping[str, str]) -> str:
    endpoint = (env.get("HF_ENDPOINT") or HUB).strip().rstrip("/")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HubError(f"HF_ENDPOINT: {endpoint!r} is not an http(s) URL")
    if "@" in parts.netloc:  # (it would be printed in every message that names the host)
        raise HubError("HF_ENDPOINT: credentials in the URL are not used; set HF_TOKEN")
    return endpoint


def token_from(env: Mapping[str, str]) -> str | None:
    """HF_TOKEN (or the legacy HUGGING_FACE_HUB_TOKEN), else the token `hf auth login` saved
    (HF_TOKEN_PATH, else HF_HOME/token), as huggingface_hub finds it."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if env.get(name, "").strip():
            return _checked(env[name].strip(), name)
    if env.get("HF_TOKEN_PATH"):
        path = Path(env["HF_TOKEN_PATH"]).expanduser()
    else:
        path = hf_home(env) / "token"
    try:
        with path.open("rb") as fh:
            token = fh.read(4096).decode("utf-8", "replace").strip()
    except OSError:  # no saved token: anonymous
        return None
    return _checked(token, str(path)) if token else None


def _checked(token: str, where: str) -> str:
    """A token is printable ASCII with no spaces: anything else would fail inside http.client,
    whose error quotes the header, token and all."""
    if not _TOKEN.match(token):
        raise HubError(f"{where}: not a Hugging Face token (spaces or control characters in it)")
    return token


@dataclass(frozen=True)
class Fetched:
    counted: ModelShape | None  # from the safetensors headers; None: the repo has none
    files: int  # how many files' metadata were read
    commit: str | None  # the commit the revision resolved to, where the Hub said


def fetch_model(hub_id: HubId, client: HubClient, config_into: Path) -> Fetched:
    """The counts from the safetensors headers; the config.json (when there is one) is
    written to `config_into`."""
    config = client.get(hub_id, hub_id.ref, "config.json", CONFIG_LIMIT)
    # Every later file from the commit the first answer named: a push in between cannot mix
    # two revisions' files.
    commit = config.commit if config and COMMIT.match(config.commit or "") else None
    revision = commit or hub_id.ref
    files = 0
    if config is not None:
        config_into.write_bytes(config.body)
        files += 1
    index = client.get(hub_id, revision, "model.safetensors.index.json", INDEX_LIMIT)
    if index is not None:
        files += 1
        shards = _shards(hub_id, index.body)
    else:
        shards = ["model.safetensors"]
    pool = ThreadPoolExecutor(min(WORKERS, len(shards)))
    try:
        headers = list(pool.map(lambda s: _header(hub_id, client, revision, s), shards))
    finally:  # (an error or Ctrl-C: the shards not yet asked for are not asked for)
        pool.shutdown(wait=False, cancel_futures=True)
    counts: Counter[str] = Counter()
    nbytes = 0.0
    for shard, found in zip(shards, headers, strict=True):
        if found is None:
            if index is not None:
                raise HubError(f"{hub_id}: the index names {shard}, which is not in the repo")
            return Fetched(None, files, commit)
        c, b = count_header(Path(hub_id.repo) / shard, *found)
        counts.update(c)
        nbytes += b
        files += 1
    if not counts:
        raise HubError(f"{hub_id}: its safetensors headers list no tensors")
    counted = ModelShape(
        source=str(hub_id),
        params=sum(counts.values()),
        param_bytes=int(nbytes),
        param_dtypes=dict(counts.most_common()),
    )
    return Fetched(counted, files, commit)


def _shards(hub_id: HubId, raw: bytes) -> list[str]:
    try:
        index = json.loads(raw)
    except ValueError:
        raise HubError(f"{hub_id}: model.safetensors.index.json is not JSON") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise HubError(f"{hub_id}: model.safetensors.index.json has no weight_map")
    shards = sorted({str(v) for v in weight_map.values()})
    bad = [s for s in shards if not s.endswith(".safetensors") or ".." in s or s.startswith("/")]
    if bad or len(shards) > MAX_SHARDS:
        what = f"names {bad[0]!r}" if bad else f"has {len(shards):,} shards"
        raise HubError(f"{hub_id}: model.safetensors.index.json {what}: not a model's index")
    return shards


def _header(
    hub_id: HubId, client: HubClient, revision: str, shard: str
) -> tuple[dict[str, Any], int] | None:
    """A shard's header and the bytes of data after it; None: no such file."""
    first = client.get(hub_id, revision, shard, 8, first=0)
    if first is None:
        return None
    if len(first.body) < 8:
        raise HubError(f"{hub_id}: {shard} is not a safetensors file (under 8 bytes)")
    (size,) = struct.unpack("<Q", first.body)
    if not 0 < size <= HEADER_LIMIT:
        raise HubError(f"{hub_id}: {shard} is not a safetensors file (header length {size:,})")
    rest = client.get(hub_id, revision, shard, size, first=8)
    raw = rest.body if rest is not None else b""
    if len(raw) < size:
        raise HubError(f"{hub_id}: {shard} is truncated (header says {size:,} bytes)")
    try:
        header = json.loads(raw)
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise HubError(
            f"{hub_id}: {shard} is not a safetensors file (its header is not a JSON object)"
        )
    total = first.total
    # (No size from the server: the tensors' own offsets stand in, unchecked against a file.)
    data = total - 8 - size if total is not None else _data_end(header)
    return header, data


def _data_end(header: dict[str, Any]) -> int:
    ends = [e["data_offsets"][1] for e in header.values()
            if isinstance(e, dict) and isinstance(e.get("data_offsets"), list)
            and len(e["data_offsets"]) == 2 and isinstance(e["data_offsets"][1], int)]  # fmt: skip
    return max(ends, default=0)
