"""A Hub id (`ORG/NAME[@REVISION]`) and where the local Hugging Face cache keeps it, read with
no network.

The layout is huggingface_hub's ("Manage huggingface_hub cache-system" in its docs):
`<cache>/models--ORG--NAME/refs/<branch or tag>` holds a commit hash, and
`snapshots/<commit>/<file>` the files of that commit (links into `blobs/`). The cache is
`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gpucheck.fit.shape import ModelError

# The Hub's rules for a repo id: letters, digits, "-", "_", "." (no "--" or ".." in a name,
# which the cache's folder names and paths could not tell apart), at most 96 characters.
_PART = r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9_])?"
_REPO = re.compile(rf"^(?:{_PART}/)?{_PART}$")
# A branch, a tag (git allows "/" in both: refs/pr/1), or a commit hash.
_REVISION = re.compile(r"^[\w.-]+(?:/[\w.-]+)*$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
MAX_REVISION = 256


class HubError(ModelError):
    """The Hub (or the cache) answered, and the answer is that this model cannot be read
    (exit 2)."""


class HubUnreachable(ModelError):
    """The Hub did not answer in time, or could not be reached (exit 5: could not tell)."""


@dataclass(frozen=True)
class HubId:
    repo: str  # ORG/NAME (or a legacy NAME with no org)
    revision: str | None  # None: the default branch, main

    @property
    def ref(self) -> str:
        return self.revision or "main"

    def __str__(self) -> str:
        return self.repo if self.revision is None else f"{self.repo}@{self.revision}"


def parse_hub_id(text: str) -> HubId | None:
    """`ORG/NAME[@REVISION]` (or `NAME`) -> HubId; None: not shaped as a Hub id. A name with
    a file's suffix is a misspelt local file, not a model on the Hub."""
    repo, at, revision = text.partition("@")
    if not _REPO.match(repo) or "--" in repo or ".." in repo:
        return None
    if repo.endswith((".json", ".safetensors")):
        return None
    if at and not _valid_revision(revision):
        raise ModelError(
            f"{text!r}: {revision!r} is not a revision (a branch, a tag or a commit hash)"
        )
    return HubId(repo, revision if at else None)


def _valid_revision(revision: str) -> bool:
    return (
        0 < len(revision) <= MAX_REVISION
        and bool(_REVISION.match(revision))
        and ".." not in revision
        and not revision.endswith(".lock")
    )


def hf_home(env: Mapping[str, str]) -> Path:
    """HF_HOME, else XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (huggingface_hub's
    constants.py)."""
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "huggingface"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".cache" / "huggingface"


def cache_dir(env: Mapping[str, str]) -> Path:
    """Where huggingface_hub keeps downloaded repos, from the same variables it reads (the
    legacy HUGGINGFACE_HUB_CACHE too)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return Path(env[name]).expanduser()
    return hf_home(env) / "hub"


def offline_variable(env: Mapping[str, str]) -> str | None:
    """The variable that forbids the network (HF_HUB_OFFLINE, or transformers' own), if set
    to a true value as huggingface_hub reads it."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if env.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return name
    return None


def repo_folder(cache: Path, hub_id: HubId) -> Path:
    return cache / ("models--" + hub_id.repo.replace("/", "--"))


def cached_snapshot(cache: Path, hub_id: HubId) -> Path | None:
    """The cached snapshot folder of the revision asked for, or None where the cache has none:
    a branch or tag through refs/, a commit hash by its snapshot folder's name."""
    repo = repo_folder(cache, hub_id)
    commit = _read_ref(repo / "refs" / hub_id.ref)
    if commit is None and COMMIT.match(hub_id.ref):
        commit = hub_id.ref
    if commit is None:
        return None
    snapshot = repo / "snapshots" / commit
    return snapshot if snapshot.is_dir() else None


def _read_ref(ref: Path) -> str | None:
    try:
        with ref.open("rb") as fh:
            text = fh.read(100).decode("ascii", "replace").strip()
    except OSError:  # no such ref, or one not readable: the cache cannot answer
        return None
    return text if COMMIT.match(text) else None
