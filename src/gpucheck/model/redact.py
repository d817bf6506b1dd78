"""Redaction: a snapshot that can be pasted into a public bug thread. What identifies a person
or a site is replaced; what the checks judge is kept, so the redacted snapshot diagnoses the
same (`doctor --from`).

- the hostname, FQDN, host id, cloud instance id and board serial;
- GPU and MIG UUIDs and GPU serials, each by a token from a keyed hash whose key is random
  and never written: the same value maps to the same token within one report (a UUID in
  CUDA_VISIBLE_DEVICES still names its GPU), and tokens cannot be linked across reports;
- user names in paths (/home/NAME, /Users/NAME, C:\\Users\\NAME, and names given by the
  caller, such as the current user's), and the owners of the processes holding a GPU;
- environment values, except the short list whose value a check reads or a person needs, and
  the path variables, which keep their paths with user names replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from typing import Any

from gpucheck.model.snapshot import Snapshot

# Values kept as they are: settings, not identities.
ENV_KEPT = frozenset(
    {
        "CUDA_DEVICE_ORDER",
        "CUDA_LAUNCH_BLOCKING",
        "CUDA_MODULE_LOADING",
        "CUDA_CACHE_DISABLE",
        "CUDA_CACHE_MAXSIZE",
        "CUDA_FORCE_PTX_JIT",
        "CUDA_DISABLE_PTX_JIT",
        "NVIDIA_DRIVER_CAPABILITIES",
        "NVIDIA_REQUIRE_CUDA",
        "NVIDIA_DISABLE_REQUIRE",
        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_NVML_BASED_CUDA_CHECK",
        "TF_FORCE_GPU_ALLOW_GROWTH",
        "TF_CPP_MIN_LOG_LEVEL",
        "XLA_PYTHON_CLIENT_PREALLOCATE",
        "XLA_PYTHON_CLIENT_MEM_FRACTION",
        "NCCL_DEBUG",
        "NCCL_P2P_DISABLE",
        "NCCL_IB_DISABLE",
    }
)
# Device lists: GPU-/MIG- UUIDs in them are replaced by the same tokens as the GPUs' own.
ENV_DEVICES = frozenset({"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"})
# Paths: kept (checks look at them), with user names replaced.
ENV_PATHS = frozenset(
    {
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_ROOT",
        "CUDNN_PATH",
        "CUDA_CACHE_PATH",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
    }
)
REDACTED = "<redacted>"
USER_DIRS = re.compile(r"(?P<lead>/home/|/Users/|/u/|[A-Za-z]:\\Users\\)(?P<name>[^/\\\s:;\"']+)")
UUID = re.compile(r"\b(?P<kind>GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")


class _Tokens:
    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)  # per report, never stored

    def hex(self, value: str) -> str:
        return hmac.new(self._key, value.encode(), hashlib.sha256).hexdigest()

    def uuid(self, value: str) -> str:
        h = self.hex(value.lower())
        kind = value.split("-", 1)[0]
        return f"{kind}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _identities(data: dict[str, Any], tokens: _Tokens) -> dict[str, str]:
    """Every identifying value of the snapshot, mapped to its token."""
    found: dict[str, str] = {}
    system = data["system"]
    if system.get("hostname"):
        found[system["hostname"]] = f"host-{tokens.hex(system['hostname'])[:8]}"
    host = system.get("host") or {}
    for key, prefix in (
        ("fqdn", "fqdn-"),
        ("host_id", "mid-"),
        ("cloud_instance_id", "instance-"),
        ("board_serial", "serial-"),
    ):
        if host.get(key):
            found[host[key]] = prefix + tokens.hex(host[key])[:16]
    for gpu in data["nvml"]["gpus"]:
        if gpu.get("uuid"):
            found[gpu["uuid"]] = tokens.uuid(gpu["uuid"])
        if gpu.get("serial"):
            found[gpu["serial"]] = f"S{tokens.hex(gpu['serial'])[:12]}"
        for mig in gpu.get("mig_devices") or []:
            if mig.get("uuid"):
                found[mig["uuid"]] = tokens.uuid(mig["uuid"])
    return found


def _device_list(value: str, found: dict[str, str], tokens: _Tokens) -> str:
    """A CUDA_VISIBLE_DEVICES value with its UUIDs (or UUID prefixes, as CUDA accepts them)
    replaced by the tokens of the GPUs they name."""
    out = []
    for raw in value.split(","):
        token = raw.strip()
        if token.upper().startswith(("GPU-", "MIG-")):
            match = next((u for u in found if u.lower().startswith(token.lower())), None)
            out.append(found[match] if match else tokens.uuid(token))
        else:
            out.append(raw)
    return ",".join(out)


class _Scrubber:
    def __init__(
        self, found: dict[str, str], hostnames: list[str], names: Iterable[str], tokens: _Tokens
    ) -> None:
        self.found = found
        self.made = set(found.values())
        self.tokens = tokens
        ids = sorted((v for v in found if v not in hostnames and len(v) >= 4), key=len)
        self.ids = _words(ids[::-1], r"(?<!\w)", r"(?!\w)")
        # A hostname may be a word that paths use too (a host named "cuda"): replaced only
        # where it stands alone, never as a path component, which the checks read.
        self.hosts = _words(
            sorted((h for h in hostnames if len(h) >= 3), key=len, reverse=True),
            r"(?<![\w./\\-])",
            r"(?![\w/\\-])",
        )
        users = [n for n in names if n and n not in ("root", "user")]
        self.users = _words(users, r"(?<=[/\\])", r"(?=[/\\]|$)")

    def _uuid(self, match: re.Match[str]) -> str:
        value = match.group(0)
        if value in self.made:
            return value
        token = self.found.get(value) or self.tokens.uuid(value)
        self.made.add(token)
        return token

    def text(self, value: str) -> str:
        if self.ids is not None:
            value = self.ids.sub(lambda m: self.found[m.group(0)], value)
        if self.hosts is not None:
            value = self.hosts.sub(lambda m: self.found[m.group(0)], value)
        value = UUID.sub(self._uuid, value)
        value = USER_DIRS.sub(lambda m: m.group("lead") + "user", value)
        if self.users is not None:
            value = self.users.sub("user", value)
        return value

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        if isinstance(value, dict):
            return {k: self.walk(v) for k, v in value.items()}
        return value


def _words(words: list[str], before: str, after: str) -> re.Pattern[str] | None:
    if not words:
        return None
    return re.compile(before + "(" + "|".join(map(re.escape, words)) + ")" + after)


def redact(snapshot: Snapshot, user_names: Iterable[str] = ()) -> Snapshot:
    """A redacted copy of `snapshot` (which is left as it is)."""
    tokens = _Tokens()
    data = snapshot.to_dict()
    found = _identities(data, tokens)
    env = data["system"]["env"]
    for key, value in env.items():
        if key in ENV_DEVICES:
            env[key] = _device_list(value, found, tokens)
        elif key not in ENV_KEPT and key not in ENV_PATHS:
            env[key] = REDACTED
    host = data["system"].get("host") or {}
    hostnames = [h for h in (data["system"].get("hostname"), host.get("fqdn")) if h]
    # The fields themselves, whatever their length (the text pass skips very short names).
    if data["system"].get("hostname"):
        data["system"]["hostname"] = found[data["system"]["hostname"]]
    if host.get("fqdn"):
        host["fqdn"] = found[host["fqdn"]]
    # The owners of the processes that hold a GPU are people (or service accounts) by name.
    for proc in (data.get("processes") or {}).get("processes") or []:
        if proc.get("user"):
            proc["user"] = REDACTED
    scrubbed = _Scrubber(found, hostnames, user_names, tokens).walk(data)
    scrubbed["redacted"] = True
    return Snapshot.from_dict(scrubbed)


def redact_here(snapshot: Snapshot) -> Snapshot:
    """redact(), with this machine's user names too, wherever a path has them."""
    import getpass
    from pathlib import Path

    names = [Path.home().name]
    # No passwd entry (a container run as an arbitrary uid): the home folder's name only.
    with contextlib.suppress(KeyError, OSError):
        names.append(getpass.getuser())
    return redact(snapshot, names)
