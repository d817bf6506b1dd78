"""The MCP `fit` tool with a Hub id, through the SDK's real client over stdio: from the local
Hugging Face cache only unless the caller passes hub=true, then the Hub's metadata (a local
server that answers as the Hub does, tests/support/hub_server.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from conftest import REPO
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.hub_server import Hub, Repo, safetensors_bytes, serving

from gpucheck.mcp.commands import fit_argv

FILES = {
    "config.json": (REPO / "tests" / "fixtures" / "models" / "gpt2" / "config.json").read_bytes(),
    "model.safetensors": safetensors_bytes({"w": ("bfloat16", [1000, 1000])}),
}


def calls(env: dict[str, str], arguments: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    """(the fit tool as listed, each call's result), from one real stdio session."""

    async def session() -> tuple[Any, list[Any]]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "gpucheck", "mcp"], env=env
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tool = next(t for t in (await client.list_tools()).tools if t.name == "fit")
            return tool, [await client.call_tool("fit", a) for a in arguments]

    return anyio.run(session)


def test_the_fit_tool_reads_a_hub_id_from_the_cache_unless_allowed_the_hub(
    tmp_path: Path,
) -> None:
    with serving(Hub({"org/tiny": Repo(FILES)})) as hub:
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG")},
            "HOME": str(tmp_path),
            "HF_ENDPOINT": hub.url,
            "HF_HUB_CACHE": str(tmp_path / "cache"),
        }
        common = {"model": "org/tiny", "train": False, "seq": 128, "gpu_memory": "8GiB"}
        tool, (cached_only, fetched) = calls(env, [common, common | {"hub": True}])
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.open_world_hint is True  # hub=true reaches the Hub
    assert tool.input_schema["properties"]["hub"] == {
        "default": False, "title": "Hub", "type": "boolean"
    }  # fmt: skip
    assert cached_only.is_error is True
    assert cached_only.content[0].text == (
        f"Error executing tool fit: gpucheck: org/tiny is not in the Hugging Face cache (no "
        f"{tmp_path / 'cache'}/models--org--tiny/refs/main) and --offline forbids fetching it: "
        "download it first, or allow the network"
    )
    assert fetched.is_error is False
    assert fetched.structured_content["model"]["params"] == 1_000_000
    assert fetched.structured_content["model"]["param_dtypes"] == {"BF16": 1_000_000}
    # Only the second call asked the Hub, and only for metadata.
    assert {s.path.rpartition("/")[2] for s in hub.log if "/resolve/" in s.path} == {
        "config.json", "model.safetensors.index.json", "model.safetensors"
    }  # fmt: skip


def test_the_fit_tool_asks_for_offline_only_when_it_names_a_model() -> None:
    assert fit_argv(None, "7B", True, None, None, None, None, "80GiB") == [
        "fit", "--json", "--params", "7B", "--train", "--gpu-memory", "80GiB"
    ]  # fmt: skip
    assert fit_argv("org/tiny", None, False, None, None, None, None, None)[:4] == [
        "fit", "--json", "org/tiny", "--offline"
    ]  # fmt: skip
    assert "--offline" not in fit_argv("org/tiny", None, False, None, None, None, None, None, True)
