"""The installed distributions that matter, read from their metadata folders.

Loaded by framework_static.py (by path, like torch_static.py) and run inside the TARGET
interpreter: standard library only, Python 3.8+.

Why not importlib.metadata: importing it (and the email package it parses with) costs about
30 ms of a 50 ms probe, and the facts wanted are three header fields. A *.dist-info folder's
METADATA is read here as importlib.metadata reads it (UTF-8, headers up to the first blank
line, a field's first value, Requires-Dist in order). The rarer shapes, a `setup.py develop`
*.egg-info (whose requirements live in requires.txt, with extras as sections) and a zip on
sys.path, are still handed to importlib.metadata, imported only then.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

METADATA_FILES = ("METADATA", "PKG-INFO")  # as importlib.metadata looks for them
HEADER_LIMIT = 1 << 20  # a header block past this is not metadata


def name_from_folder(static: ModuleType, path: str) -> str | None:
    """The normalised name a .dist-info/.egg-info folder's own name gives, None if unsure.

    Lets uninteresting distributions be skipped without reading their metadata: the folder is
    NAME-VERSION.dist-info with "-" escaped in both parts, or NAME.egg-info.
    """
    base = os.path.basename(path.rstrip("/\\"))
    stem, ext = os.path.splitext(base)
    if ext.lower() not in (".dist-info", ".egg-info"):
        return None
    parts = stem.split("-")
    if len(parts) > 2 or not parts[0]:
        return None
    return str(static.normalise(parts[0]))


def read_headers(folder: str) -> dict[str, list[str]]:
    """The header fields of a metadata folder's METADATA (else PKG-INFO), by lowercased name,
    each with its values in order; empty where neither file exists (as importlib.metadata)."""
    for leaf in METADATA_FILES:
        try:
            # Text mode: CRLF and CR line ends read as "\n", as importlib.metadata reads them.
            with open(os.path.join(folder, leaf), encoding="utf-8") as fh:
                block = fh.read(HEADER_LIMIT).split("\n\n", 1)[0]
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        fields: dict[str, list[str]] = {}
        last: list[str] | None = None
        for line in block.split("\n"):
            if line[:1] in (" ", "\t") and last:  # a folded continuation of the last field
                last[-1] += "\n" + line
                continue
            name, colon, value = line.partition(":")
            if not colon:
                break  # the body begins (as the email parser takes it)
            last = fields.setdefault(name.strip().lower(), [])
            last.append(value.strip(" \t"))
        return fields
    return {}


def _first(fields: dict[str, list[str]], key: str) -> str | None:
    values = fields.get(key)
    return values[0].strip() if values else None


def _listing(entry: str) -> tuple[list[str], list[str]] | None:
    """A sys.path folder's *.dist-info and *.egg-info folders (sorted: the order is stable),
    None where the entry is not a folder that can be listed."""
    try:
        names = sorted(os.listdir(entry))
    except OSError:
        return None
    lowered = [(n, n.lower()) for n in names]
    return (
        [os.path.join(entry, n) for n, low in lowered if low.endswith(".dist-info")],
        [n for n, low in lowered if low.endswith(".egg-info")],
    )


def _unseen(static: ModuleType, folder: str, seen: set[str]) -> tuple[bool, str | None]:
    """Whether a metadata folder is to be read (not reached before through a repeated sys.path
    entry, not named for a distribution that does not matter), and the name its own name
    gives (None if unsure)."""
    key = static.realpath(folder)
    if key in seen:
        return False, None
    seen.add(key)
    return _maybe_wanted(static, folder), name_from_folder(static, folder)


def _judged(
    static: ModuleType,
    where: str,
    guess: str | None,
    fields: dict[str, list[str]],
    location: Callable[[], str | None],
    errors: list[str],
) -> dict[str, Any] | None:
    """The record of a distribution that matters, from its header fields; problems with one
    that looks like it might matter are errors (an interrupted install)."""
    name = _first(fields, "name")
    if not name:
        if guess is not None:
            errors.append(f"distribution {where}: no Name in its metadata")
        return None
    name = static.normalise(name)
    if not static.wanted(name):
        return None
    version = _first(fields, "version")
    if not version:
        errors.append(f"distribution {where}: no Version in its metadata")
        return None
    requires = fields.get("requires-dist", []) if static.keeps_requires(name) else []
    return {"name": name, "version": version, "location": location(), "requires": requires}


def _from_dist_info(
    static: ModuleType, folder: str, seen: set[str], errors: list[str]
) -> dict[str, Any] | None:
    wanted, guess = _unseen(static, folder, seen)
    if not wanted:
        return None
    try:
        fields = read_headers(folder)
    except (OSError, UnicodeDecodeError) as exc:  # unreadable, or not UTF-8
        if guess is not None:
            errors.append(f"distribution {folder}: metadata: {static.describe(exc)}")
        return None
    parent = os.path.dirname(folder.rstrip("/\\")) or os.curdir
    return _judged(static, folder, guess, fields, lambda: str(static.realpath(parent)), errors)


def _from_importlib(
    static: ModuleType, entry: str, seen: set[str], errors: list[str], egg_info_only: bool
) -> list[dict[str, Any]]:
    """importlib.metadata's reading of one sys.path entry: its *.egg-info folders, or all of a
    zip's distributions."""
    try:
        from importlib import metadata
    except ImportError as exc:
        errors.append(f"distributions: importlib.metadata is missing (Python 3.8+): {exc}")
        return []
    out: list[dict[str, Any]] = []
    for dist in metadata.distributions(path=[entry]):
        path = getattr(dist, "_path", None)  # PathDistribution: the metadata folder
        where = str(path) if path is not None else repr(dist)
        if egg_info_only and not where.lower().rstrip("/\\").endswith(".egg-info"):
            continue
        try:
            record = _read_importlib(static, dist, where, seen, errors)
        except Exception as exc:
            errors.append(f"distribution {where}: {static.describe(exc)}")
            continue
        if record is not None:
            out.append(record)
    return out


def _read_importlib(
    static: ModuleType, dist: Any, where: str, seen: set[str], errors: list[str]
) -> dict[str, Any] | None:
    guess = None
    if getattr(dist, "_path", None) is not None:
        wanted, guess = _unseen(static, where, seen)
        if not wanted:
            return None
    try:
        meta = dist.metadata
    except Exception as exc:  # an empty or unreadable folder (an interrupted uninstall)
        if guess is not None:
            errors.append(f"distribution {where}: metadata: {static.describe(exc)}")
        return None
    fields = {
        key: [value]
        for key, header in (("name", "Name"), ("version", "Version"))
        if meta is not None and isinstance(value := meta.get(header), str)
    }

    def location() -> str | None:
        try:
            return str(static.realpath(str(dist.locate_file(""))))
        except Exception as exc:
            errors.append(f"distribution {where}: location: {static.describe(exc)}")
            return None

    fields["requires-dist"] = [str(line) for line in (dist.requires or [])]
    return _judged(static, where, guess, fields, location, errors)


def distributions(static: ModuleType, errors: list[str]) -> list[dict[str, Any]]:
    """The distributions that matter, in sys.path order (import order: the first of a name is
    the one imported); a name installed twice is listed twice."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        entry = entry or os.curdir
        try:
            listing = _listing(entry)
            if listing is None:
                if os.path.isfile(entry):  # a zip or an egg file on sys.path
                    out += _from_importlib(static, entry, seen, errors, egg_info_only=False)
                continue
            dist_infos, egg_infos = listing
            for folder in dist_infos:
                record = _from_dist_info(static, folder, seen, errors)
                if record is not None:
                    out.append(record)
            # After the dist-info folders, as importlib.metadata lists them.
            if any(_maybe_wanted(static, name) for name in egg_infos):
                out += _from_importlib(static, entry, seen, errors, egg_info_only=True)
        except Exception as exc:
            errors.append(f"distributions: {entry}: {static.describe(exc)}")
    return out


def _maybe_wanted(static: ModuleType, folder: str) -> bool:
    guess = name_from_folder(static, folder)
    return guess is None or bool(static.wanted(guess))
