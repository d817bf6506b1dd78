"""Where `fit` reads a model from: a local config.json, a *.safetensors file or index, or a
folder holding them; or a Hub id, `ORG/NAME[@REVISION]`: from the local Hugging Face cache
first (no network), else its config.json and safetensors headers from the Hub, unless offline."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from time import monotonic

from gpucheck.fit.config import from_config
from gpucheck.fit.hub_cache import (
    COMMIT,
    HubError,
    HubId,
    cache_dir,
    cached_snapshot,
    offline_variable,
    parse_hub_id,
    repo_folder,
)
from gpucheck.fit.safetensors import from_safetensors
from gpucheck.fit.shape import ModelError, ModelShape

WEIGHTS_AND_CONFIG = ("config.json", "model.safetensors.index.json", "model.safetensors")


def find_model(
    model: str,
    env: Mapping[str, str],
    *,
    offline: bool = False,
    timeout: float = 10.0,
    say: Callable[[str], None] | None = None,
) -> ModelShape:
    """A local path, else a Hub id from the cache, else (network allowed) from the Hub.
    ModelError (HubError, HubUnreachable): one line for the user."""
    path = Path(model)
    if path.exists():
        return local_model(model)
    hub_id = parse_hub_id(model)
    if hub_id is None:
        raise ModelError(f"{model}: no such file")
    cache = cache_dir(env)
    snapshot = cached_snapshot(cache, hub_id)
    if snapshot is not None and any((snapshot / n).is_file() for n in WEIGHTS_AND_CONFIG):
        shape = from_folder(snapshot)
        return replace(shape, source=f"{hub_id}, cached: {shape.source}")
    forbidding = "--offline" if offline else offline_variable(env)
    if forbidding:
        missing = snapshot / "config.json" if snapshot else _missing_ref(cache, hub_id)
        why = forbidding if offline else f"{forbidding}={env[forbidding].strip()}"
        raise HubError(
            f"{hub_id} is not in the Hugging Face cache (no {missing}) and {why} forbids "
            "fetching it: download it first, or allow the network"
        )
    if "/" not in hub_id.repo:
        raise ModelError(f"{model}: no such file here or in the Hugging Face cache ({cache}); "
                         "a model on the Hub is named ORG/NAME")  # fmt: skip
    return hub_model(hub_id, env, timeout, say)


def _missing_ref(cache: Path, hub_id: HubId) -> Path:
    repo = repo_folder(cache, hub_id)
    if COMMIT.match(hub_id.ref):
        return repo / "snapshots" / hub_id.ref
    return repo / "refs" / hub_id.ref


def hub_model(
    hub_id: HubId, env: Mapping[str, str], timeout: float, say: Callable[[str], None] | None
) -> ModelShape:
    """config.json and the safetensors headers from the Hub; nothing is written to the
    user's cache (the config lives in a temporary folder while it is read)."""
    # The one lazy seam of fit's sources: urllib, http.client and a thread pool (some 50 ms
    # of imports) only for a Hub id that the cache cannot answer.
    from gpucheck.fit.hub import HubClient, endpoint_from, fetch_model, token_from

    if not (math.isfinite(timeout) and timeout > 0):
        raise ModelError(f"--timeout: {timeout} is not a number of seconds")
    client = HubClient(endpoint_from(env), token_from(env), monotonic() + timeout)
    if say is not None:
        say(f"fetching config.json and safetensors headers of {hub_id} from {client.host}")
    with tempfile.TemporaryDirectory(prefix="gpucheck-fit-") as folder:
        config = Path(folder) / "config.json"
        fetched = fetch_model(hub_id, client, config)
        counted = fetched.counted
        try:
            if counted is None and not config.is_file():
                raise HubError(
                    f"{hub_id}: neither config.json nor model.safetensors (or its index) on "
                    f"{client.host}: not a safetensors model (pass --params N)"
                )
            shape = from_config(config) if counted is None else with_config(counted, config.parent)
        except ModelError as exc:  # (the temporary path is not the user's: name the file)
            raise type(exc)(str(exc).replace(str(config), f"{hub_id}/config.json")) from None
    size = f"{client.received / 1024:,.1f} KiB"
    note = f"read from {client.host}: {fetched.files} file(s) of metadata, {size}; no weights"
    commit = f", commit {fetched.commit[:12]}" if fetched.commit else ""
    source = f"{hub_id} from {client.host}{commit}"
    return replace(shape, source=source, notes=(*shape.notes, note))


def local_model(model: str) -> ModelShape:
    path = Path(model)
    if not path.exists():
        raise ModelError(f"{model}: no such file")
    if path.is_dir():
        return from_folder(path)
    if path.name.endswith(".safetensors") or path.name.endswith(".safetensors.index.json"):
        return with_config(from_safetensors(path), path.parent)
    return from_config(path)


def from_folder(folder: Path) -> ModelShape:
    for name in ("model.safetensors.index.json", "model.safetensors"):
        if (folder / name).is_file():
            return with_config(from_safetensors(folder / name), folder)
    if (folder / "config.json").is_file():
        return from_config(folder / "config.json")
    raise ModelError(f"{folder}: no config.json or model.safetensors in it")


def with_config(counted: ModelShape, folder: Path) -> ModelShape:
    """Exact counts from safetensors, architecture from the config.json beside them."""
    config = folder / "config.json"
    if not config.is_file():
        return counted
    try:
        arch = from_config(config)
    except ModelError:
        return counted
    return replace(
        arch,
        source=counted.source,
        # A quantised checkpoint packs several weights in one stored element (GPTQ's I32
        # qweight): its count is the config's, its bytes the files'.
        params=arch.params if arch.quantization or not counted.params else counted.params,
        param_bytes=counted.param_bytes,
        param_dtypes=counted.param_dtypes,
        # What the config says (an alias family, a field not read, a quantisation method not
        # understood) and what the files say, both: neither may silence the other.
        notes=(*arch.notes, *(n for n in counted.notes if n not in arch.notes)),
    )
