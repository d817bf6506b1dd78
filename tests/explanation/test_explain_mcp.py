"""The MCP server's explain tool through the SDK's real client over stdio: the text travels on
the command's standard input and the answer is `gpucheck explain --json`'s own document."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# A line that starts with a dash and holds quotes: it must reach explain as text, never as an
# option or a shell word.
TEXT = '--text "x"\nRuntimeError: CUDA error: device-side assert triggered\n'


def call_explain(arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "gpucheck", "mcp"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert tools["explain"].annotations is not None
            assert tools["explain"].annotations.read_only_hint is True
            assert tools["explain"].input_schema["required"] == ["text"]
            return await session.call_tool("explain", arguments)

    return anyio.run(run)


def test_the_explain_tool_answers_with_the_commands_json() -> None:
    result = call_explain({"text": TEXT})
    assert result.is_error is False
    cli = subprocess.run(
        [sys.executable, "-m", "gpucheck", "explain", "--json", "-"],
        input=TEXT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.structured_content == json.loads(cli.stdout)
    assert [f["id"] for f in result.structured_content["findings"]] == [
        "explain.cuda.device-side-assert"
    ]
    assert result.structured_content["source"]["name"] == "-"
