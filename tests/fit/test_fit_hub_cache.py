"""`gpucheck fit ORG/NAME` from a Hugging Face cache that huggingface_hub itself made
(hf_hub_download against the local Hub of tests/support/hub_server.py), read with no network:
the Hub is stopped, or still there and never asked. The cache is found as huggingface_hub
finds it: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, run_gpucheck
from support.hub_server import Hub, Repo, safetensors_bytes, serving

from gpucheck.fit.hub_cache import (
    HubId,
    cache_dir,
    cached_snapshot,
    offline_variable,
    parse_hub_id,
)
from gpucheck.fit.shape import ModelError

try:
    from huggingface_hub import hf_hub_download
except ImportError:  # pragma: no cover (the test extra installs it)
    pytest.fail(
        "huggingface_hub is missing: pip install -e '.[test]' -c constraints-dev.txt",
        pytrace=False,
    )

GPT2_CONFIG = (REPO / "tests" / "fixtures" / "models" / "gpt2" / "config.json").read_bytes()
MAIN, RELEASE = "a" * 40, "c" * 40
FILES = {
    "config.json": GPT2_CONFIG,
    "model.safetensors": safetensors_bytes({"w": ("float16", [1000, 1000]), "n": ("int8", [24])}),
}


def download(cache: Path, names: tuple[str, ...], revision: str | None = None) -> Hub:
    """The files into `cache` by huggingface_hub's own download; the Hub is stopped after."""
    repos = {"org/tiny": Repo(FILES, refs={"main": MAIN, "v1.0": RELEASE})}
    with serving(Hub(repos)) as hub:
        for name in names:
            hf_hub_download("org/tiny", name, revision=revision, cache_dir=cache, endpoint=hub.url)
    return hub


def fit(tmp_path: Path, model: str, **env: str):  # type: ignore[no-untyped-def]
    """With the network forbidden to matter: HF_ENDPOINT is a closed port."""
    base = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_TOKEN": "", "HF_HUB_OFFLINE": "",
            "TRANSFORMERS_OFFLINE": "", "HOME": str(tmp_path / "home"), "HF_HOME": "",
            "XDG_CACHE_HOME": "", "HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": ""}  # fmt: skip
    return run_gpucheck(
        "fit", model, "--infer", "--seq", "128", "--gpu-memory", "8GiB", "--json", env=base | env
    )


def test_a_cached_model_is_read_from_its_snapshot_with_no_network(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    download(cache, ("config.json", "model.safetensors"))
    result = fit(tmp_path, "org/tiny", HF_HUB_CACHE=str(cache))
    assert result.returncode == 0, result.stderr
    model = json.loads(result.stdout)["model"]
    assert model["params"] == 1_000_024  # 1000 x 1000 F16 + 24 I8, from the cached header
    assert model["param_dtypes"] == {"F16": 1_000_000, "I8": 24}
    assert model["layers"] == 12  # GPT-2's config.json beside it
    snapshot = cache / "models--org--tiny" / "snapshots" / MAIN
    assert model["source"] == f"org/tiny, cached: {snapshot / 'model.safetensors'}"
    assert result.stderr == ""  # no "fetching" line: nothing was asked of the Hub


def test_the_cache_is_found_where_huggingface_hub_puts_it(tmp_path: Path) -> None:
    download(tmp_path / "hf-home" / "hub", ("config.json",))
    by_home = fit(tmp_path, "org/tiny", HF_HOME=str(tmp_path / "hf-home"))
    assert by_home.returncode == 0, by_home.stderr
    assert json.loads(by_home.stdout)["model"]["params"] == 124_439_808  # GPT-2, from config
    download(tmp_path / "home" / ".cache" / "huggingface" / "hub", ("config.json",))
    by_default = fit(tmp_path, "org/tiny")
    assert by_default.returncode == 0, by_default.stderr
    # HF_HUB_CACHE first, as huggingface_hub reads them: an empty one is not the home's.
    elsewhere = fit(tmp_path, "org/tiny", HF_HUB_CACHE=str(tmp_path / "empty"), HF_HUB_OFFLINE="1")
    assert elsewhere.returncode == 2
    assert f"no {tmp_path / 'empty'}/models--org--tiny/refs/main" in elsewhere.stderr


def test_a_tag_a_commit_and_a_missing_branch_in_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    download(cache, ("config.json", "model.safetensors"), revision="v1.0")
    assert (cache / "models--org--tiny" / "refs" / "v1.0").read_text() == RELEASE
    for model in ("org/tiny@v1.0", f"org/tiny@{RELEASE}"):
        result = fit(tmp_path, model, HF_HUB_CACHE=str(cache))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["model"]["params"] == 1_000_024
    # main was never downloaded: offline, the one line names the ref that is not there.
    result = fit(tmp_path, "org/tiny", HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    assert result.returncode == 2
    assert result.stderr == (
        f"gpucheck: org/tiny is not in the Hugging Face cache (no {cache}/models--org--tiny/"
        "refs/main) and HF_HUB_OFFLINE=1 forbids fetching it: download it first, or allow "
        "the network\n"
    )
    # Not offline: the Hub is asked, and the stopped one does not answer (exit 5).
    unreachable = fit(tmp_path, "org/tiny", HF_HUB_CACHE=str(cache))
    assert unreachable.returncode == 5
    assert unreachable.stderr.splitlines()[-1].startswith("gpucheck: cannot reach 127.0.0.1:9")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("meta-llama/Llama-3.1-8B", HubId("meta-llama/Llama-3.1-8B", None)),
        ("org/name@refs/pr/1", HubId("org/name", "refs/pr/1")),
        ("gpt2", HubId("gpt2", None)),
        ("org/name/extra", None),  # a path, not an id
        ("org/na--me", None),  # the Hub refuses "--" in a name (the cache could not tell)
        ("llama/config.json", None),  # a misspelt local file
        ("./org/name", None),
    ],
)
def test_what_is_read_as_a_hub_id(text: str, parsed: HubId | None) -> None:
    assert parse_hub_id(text) == parsed


@pytest.mark.parametrize("revision", ["../../etc", "main/../x", "a b", "x.lock", ""])
def test_a_revision_that_could_leave_the_cache_is_refused(revision: str) -> None:
    with pytest.raises(ModelError, match="is not a revision"):
        parse_hub_id(f"org/name@{revision}")


def test_cache_dir_follows_huggingface_hubs_variables(tmp_path: Path) -> None:
    home = {"HOME": "/home/u"}
    assert cache_dir(home) == Path("/home/u/.cache/huggingface/hub")
    assert cache_dir(home | {"HF_HOME": "/data/hf"}) == Path("/data/hf/hub")
    assert cache_dir(home | {"HF_HOME": "/data/hf", "HF_HUB_CACHE": "/x"}) == Path("/x")
    assert cache_dir(home | {"XDG_CACHE_HOME": "/xdg"}) == Path("/xdg/huggingface/hub")
    assert cache_dir(home | {"HUGGINGFACE_HUB_CACHE": "/old"}) == Path("/old")  # the legacy name
    assert offline_variable({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "yes"}) == (
        "TRANSFORMERS_OFFLINE"
    )
    assert offline_variable({"HF_HUB_OFFLINE": "false"}) is None
    # A ref that names no snapshot folder (a half-deleted cache) is no answer.
    refs = tmp_path / "models--org--tiny" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(MAIN)
    assert cached_snapshot(tmp_path, HubId("org/tiny", None)) is None
