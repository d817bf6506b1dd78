"""`gpucheck fit ORG/NAME[@REVISION]` against a local server that answers as the Hugging Face Hub
does (tests/support/hub_server.py): config.json and the safetensors headers only, by Range
requests through the Hub's redirects; the Hub's refusals as one line each; a token sent to the
Hub's host alone and never printed; nothing written to the cache; --offline and HF_HUB_OFFLINE."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, run_gpucheck
from support.hub_server import Hub, Repo, localhost_certificate, safetensors_bytes, serving

from gpucheck.fit.flow import FitRequest, ModelUnreachable, run
from gpucheck.fit.request import Request
from gpucheck.inputs import UserError

GPT2_CONFIG = (REPO / "tests" / "fixtures" / "models" / "gpt2" / "config.json").read_bytes()
SHARD_1 = safetensors_bytes({"a": ("bfloat16", [1024, 1024]), "b": ("float32", [768])})
SHARD_2 = safetensors_bytes({"c": ("bfloat16", [512, 1024])})
INDEX = json.dumps(
    {
        "metadata": {"total_size": 3_148_800},
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00001-of-00002.safetensors",
            "c": "model-00002-of-00002.safetensors",
        },
    }
).encode()
SHARDED = {
    "config.json": GPT2_CONFIG,
    "model.safetensors.index.json": INDEX,
    "model-00001-of-00002.safetensors": SHARD_1,
    "model-00002-of-00002.safetensors": SHARD_2,
    "README.md": b"# tiny\n",
}
TOKEN = "hf_test_token_0123456789"
RELEASE = "b" * 40  # the commit the tag v1.0 names


@pytest.fixture
def hub() -> Iterator[Hub]:
    repos = {
        "org/tiny": Repo(SHARDED, refs={"main": "a" * 40, "v1.0": RELEASE}),
        "org/gated": Repo(SHARDED, token=TOKEN),
        "org/config-only": Repo({"config.json": GPT2_CONFIG, "pytorch_model.bin": b"\0" * 64}),
        "org/gguf": Repo({"model.gguf": b"GGUF", "README.md": b"# gguf\n"}),
    }
    with serving(Hub(repos)) as started:
        yield started


def fit(hub: Hub, tmp_path: Path, *args: str, **env: str):  # type: ignore[no-untyped-def]
    """`gpucheck fit` with an empty cache, no saved token, the local Hub as HF_ENDPOINT."""
    base = {
        "HF_ENDPOINT": hub.url,
        "HF_HUB_CACHE": str(tmp_path / "cache"),
        "HF_TOKEN": "",
        "HUGGING_FACE_HUB_TOKEN": "",
        "HF_TOKEN_PATH": str(tmp_path / "no-token"),
        "HF_HUB_OFFLINE": "",
        "TRANSFORMERS_OFFLINE": "",
    }
    return run_gpucheck("fit", *args, "--infer", "--seq", "128", "--gpu-memory", "8GiB",
                        env=base | env)  # fmt: skip


def test_a_hub_id_reads_config_and_safetensors_headers_and_no_weights(
    hub: Hub, tmp_path: Path
) -> None:
    result = fit(hub, tmp_path, "org/tiny", "--json")
    assert result.returncode == 0, result.stderr
    model = json.loads(result.stdout)["model"]
    # The shards' tensors, counted from their headers: 1024*1024 + 768 + 512*1024.
    assert model["params"] == 1_573_632
    assert model["param_dtypes"] == {"BF16": 1_572_864, "F32": 768}
    assert model["layers"] == 12  # the architecture from GPT-2's config.json
    host = hub.url.removeprefix("http://")
    assert model["source"] == f"org/tiny from {host}, commit aaaaaaaaaaaa"
    assert result.stderr == (
        f"gpucheck: fetching config.json and safetensors headers of org/tiny from {host}\n"
    )
    # Each shard: its 8-byte length, then exactly its header; never a byte of its tensors.
    for name, data in (("model-00001-of-00002.safetensors", SHARD_1),
                       ("model-00002-of-00002.safetensors", SHARD_2)):  # fmt: skip
        header = int.from_bytes(data[:8], "little")
        assert hub.sent_for(name) == 8 + header
        assert len(data) > 1_000_000 > 8 + header
    ranges = [str(s.range) for s in hub.log if s.path.startswith("/cdn/")]
    # (The safetensors package writes these headers in 168 and 104 bytes, padded to 8.)
    assert sorted(set(ranges)) == ["bytes=0-7", "bytes=8-111", "bytes=8-175"]
    # Later files are read at the commit the first answer named, not at "main" again.
    assert all("/resolve/main/" not in s.path for s in hub.log if "config.json" not in s.path)
    assert not hub.sent_for("README.md")
    assert not (tmp_path / "cache").exists()  # nothing written to the user's cache


def test_a_tag_or_a_commit_names_the_revision(hub: Hub, tmp_path: Path) -> None:
    assert fit(hub, tmp_path, "org/tiny@v1.0").returncode == 0
    assert fit(hub, tmp_path, f"org/tiny@{RELEASE}").returncode == 0
    assert f"/org/tiny/resolve/{RELEASE}/config.json" in [s.path for s in hub.log]
    missing = fit(hub, tmp_path, "org/tiny@no-such-branch")
    assert missing.returncode == 2
    assert missing.stderr.splitlines()[-1] == (
        f"gpucheck: org/tiny@no-such-branch: org/tiny has no revision 'no-such-branch' on "
        f"{hub.url.removeprefix('http://')}"
    )


def test_a_gated_model_asks_for_a_token_and_the_token_is_never_shown(
    hub: Hub, tmp_path: Path
) -> None:
    refused = fit(hub, tmp_path, "org/gated")
    assert refused.returncode == 2
    host = hub.url.removeprefix("http://")
    assert refused.stderr.splitlines()[-1] == (
        f"gpucheck: org/gated is gated or private, or not on {host}: set HF_TOKEN or accept "
        f"the license at {hub.url}/org/gated"
    )
    wrong = fit(hub, tmp_path, "org/gated", HF_TOKEN="hf_someone_else")
    assert wrong.returncode == 2 and "HF_TOKEN gives no access" in wrong.stderr
    allowed = fit(hub, tmp_path, "org/gated", "--json", HF_TOKEN=TOKEN)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["model"]["params"] == 1_573_632
    assert TOKEN not in allowed.stdout + allowed.stderr
    # The token file `hf auth login` writes serves as well.
    (tmp_path / "token").write_text(TOKEN + "\n")
    saved = fit(hub, tmp_path, "org/gated", HF_TOKEN_PATH=str(tmp_path / "token"))
    assert saved.returncode == 0, saved.stderr


def test_a_missing_model_or_one_without_safetensors(hub: Hub, tmp_path: Path) -> None:
    missing = fit(hub, tmp_path, "org/no-such-model")
    assert missing.returncode == 2
    assert "org/no-such-model is gated or private, or not on" in missing.stderr
    gguf = fit(hub, tmp_path, "org/gguf")
    assert gguf.returncode == 2
    assert gguf.stderr.splitlines()[-1].endswith(
        "org/gguf: neither config.json nor model.safetensors (or its index) on "
        f"{hub.url.removeprefix('http://')}: not a safetensors model (pass --params N)"
    )
    # config.json alone (weights in another format): the architecture's own count.
    only = fit(hub, tmp_path, "org/config-only", "--json")
    assert only.returncode == 0, only.stderr
    assert json.loads(only.stdout)["model"]["params"] == 124_439_808  # GPT-2's published count
    assert not hub.sent_for("pytorch_model.bin")


def test_offline_fetches_nothing_and_names_the_missing_cache_entry(
    hub: Hub, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    for args, env in ((("--offline",), {}), ((), {"HF_HUB_OFFLINE": "1"})):
        result = fit(hub, tmp_path, "org/tiny@v1.0", *args, **env)
        assert result.returncode == 2
        why = "--offline" if args else "HF_HUB_OFFLINE=1"
        assert result.stderr == (
            f"gpucheck: org/tiny@v1.0 is not in the Hugging Face cache (no "
            f"{cache}/models--org--tiny/refs/v1.0) and {why} forbids fetching it: download it "
            "first, or allow the network\n"
        )
    assert hub.log == []


def test_a_hub_that_does_not_answer_in_time_is_exit_5(hub: Hub, tmp_path: Path) -> None:
    hub.delay = 5.0
    started = time.monotonic()
    result = fit(hub, tmp_path, "org/tiny", "--timeout", "1")
    assert time.monotonic() - started < 4.5  # the 1 s bound, plus the interpreter's start
    assert result.returncode == 5
    host = hub.url.removeprefix("http://")
    assert result.stderr.splitlines()[-1] == (
        f"gpucheck: {host} did not answer in time (--timeout)"
    )


def test_a_redirect_to_plain_http_on_another_host_is_not_followed(hub: Hub, tmp_path: Path) -> None:
    hub.cdn = f"http://localhost:{hub.url.rpartition(':')[2]}"  # another host name, over http
    result = fit(hub, tmp_path, "org/tiny")
    assert result.returncode == 2
    port = hub.url.rpartition(":")[2]
    assert result.stderr.splitlines()[-1] == (
        f"gpucheck: {hub.url.removeprefix('http://')} redirected to http://localhost:{port}: "
        "not followed (only https, or the same host)"
    )
    assert not [s for s in hub.log if s.path.startswith("/cdn/")]


def test_the_python_api_takes_a_hub_id(hub: Hub, tmp_path: Path) -> None:
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path), "HOME": str(tmp_path)}
    heard: list[str] = []
    result = run(
        FitRequest(model="org/tiny", options=Request(train=False, seq=128), gpu_memory="8GiB"),
        env,
        heard.append,
    )
    assert result.report.shape.params == 1_573_632
    assert heard == [f"fetching config.json and safetensors headers of org/tiny from "
                     f"{hub.url.removeprefix('http://')}"]  # fmt: skip
    with pytest.raises(UserError, match="org/tiny is not in the Hugging Face cache"):
        run(FitRequest(model="org/tiny", offline=True, gpu_memory="8GiB"), env)
    hub.delay = 3.0
    slow = FitRequest(model="org/tiny", options=Request(timeout=0.5), gpu_memory="8GiB")
    with pytest.raises(ModelUnreachable, match="did not answer in time"):
        run(slow, env)


def test_a_model_on_disk_does_not_load_the_network_modules(tmp_path: Path) -> None:
    # The lazy seam in sources.py: urllib and http.client only for a Hub id to fetch.
    (tmp_path / "config.json").write_bytes(GPT2_CONFIG)
    script = (
        "import sys\nfrom gpucheck.fit.flow import FitRequest, run\n"
        f"run(FitRequest(model={str(tmp_path)!r}, gpu_memory='80GiB'))\n"
        "print(sorted(m for m in ('urllib.request', 'http.client') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout == "[]\n"


def test_offline_is_refused_where_no_model_is_named(tmp_path: Path) -> None:
    result = run_gpucheck("fit", "--params", "7B", "--offline", "--gpu-memory", "80GiB")
    assert result.returncode == 2
    assert result.stderr == (
        "gpucheck: --offline applies to a model named by its Hub id (ORG/NAME)\n"
    )


def test_a_hub_that_is_down_or_a_repo_that_is_not_a_model(hub: Hub, tmp_path: Path) -> None:
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path), "HOME": str(tmp_path)}
    host = hub.url.removeprefix("http://")
    hub.repos["org/huge-header"] = Repo(
        {"model.safetensors": (1 << 40).to_bytes(8, "little") + b"{}"}
    )
    hub.repos["org/lost-shard"] = Repo(
        {"model.safetensors.index.json": INDEX, "model-00001-of-00002.safetensors": SHARD_1}
    )
    hub.repos["org/huge-config"] = Repo({"config.json": b" " * (4 * 1024 * 1024 + 1)})
    for model, words in (
        ("org/huge-header", f"org/huge-header: model.safetensors is not a safetensors file "
                            f"(header length {1 << 40:,})"),
        ("org/lost-shard", "org/lost-shard: the index names model-00002-of-00002.safetensors, "
                           "which is not in the repo"),
        ("org/huge-config", "org/huge-config: config.json is over 4,194,304 bytes: not a model's "
                            "metadata"),
    ):  # fmt: skip
        with pytest.raises(UserError) as refused:
            run(FitRequest(model=model, gpu_memory="8GiB"), env)
        assert str(refused.value) == words
        assert not isinstance(refused.value, ModelUnreachable)
    hub.status = 503
    with pytest.raises(ModelUnreachable) as down:
        run(FitRequest(model="org/tiny", gpu_memory="8GiB"), env)
    assert str(down.value) == f"{host} answered 503 (try again later)"


def test_a_token_with_a_line_break_is_refused_without_being_shown(hub: Hub, tmp_path: Path) -> None:
    # http.client refuses such a header with an error that quotes it: the token would be shown.
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path), "HOME": str(tmp_path),
           "HF_TOKEN": "hf_secret\r\nX-Injected: 1"}  # fmt: skip
    with pytest.raises(UserError) as refused:
        run(FitRequest(model="org/gated", gpu_memory="8GiB"), env)
    assert str(refused.value) == (
        "HF_TOKEN: not a Hugging Face token (spaces or control characters in it)"
    )
    assert hub.log == []


def test_the_token_goes_to_the_hub_and_never_to_the_cdn_it_redirects_to(tmp_path: Path) -> None:
    # As on the Hub: a gated repo's safetensors files redirect to a CDN on another host (here
    # https://localhost, trusted through SSL_CERT_FILE); the signed URL needs no token.
    cert, key = localhost_certificate(tmp_path)
    repos = {"org/gated": Repo(SHARDED, token=TOKEN)}
    with serving(Hub(repos), tls=(cert, key)) as cdn, serving(Hub(repos)) as hub:
        hub.cdn = cdn.url
        result = fit(hub, tmp_path, "org/gated", "--json", HF_TOKEN=TOKEN, SSL_CERT_FILE=str(cert))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"]["params"] == 1_573_632
    assert len(cdn.log) == 4  # two ranges of each shard, at the CDN
    assert [s.token for s in cdn.log] == [False] * 4
    assert hub.log and all(s.token for s in hub.log)


def test_a_hub_trickling_its_answer_is_cut_at_the_timeout(hub: Hub, tmp_path: Path) -> None:
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path), "HOME": str(tmp_path)}
    hub.trickle = 0.05  # config.json's 546 bytes would take 27 s
    slow = FitRequest(model="org/tiny", options=Request(timeout=1.0), gpu_memory="8GiB")
    started = time.monotonic()
    with pytest.raises(ModelUnreachable, match="did not answer in time"):
        run(slow, env)
    assert time.monotonic() - started < 3.0  # the 1 s bound, and one byte's wait
