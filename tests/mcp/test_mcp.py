"""`gpucheck mcp` through the SDK's real client over stdio: the tools it lists, and answers that
are the command line's own JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.builders import workstation
from support.framework_builders import on, torch_cpu

from gpucheck.model.snapshot import dumps

# The first request of every session (JSON-RPC over stdio, one a line).
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
TOOLS = ["doctor", "snapshot", "procs", "compat", "fit", "fix_plan", "dockerfile"]
TOOLS += ["install_plan", "explain"]
PASCAL = ["--gpu", "GTX 1080", "--driver", "580.95.05", "--python", "3.12"]


def session_calls(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """(the listed tools, each call's result), from one real stdio session."""

    async def run() -> tuple[list[Any], list[Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "gpucheck", "mcp"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            results = [await session.call_tool(name, args) for name, args in calls]
            return tools, results

    return anyio.run(run)


def cli(*args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "gpucheck", *args], capture_output=True, text=True, check=False
    )
    return json.loads(done.stdout)


def test_the_tools_are_read_only_typed_and_answer_with_the_clis_json(tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_text(dumps(on(workstation(), torch_cpu())))
    recipe = tmp_path / "Dockerfile"
    recipe.write_text("FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n")
    tools, results = session_calls(
        [
            ("compat", {"topic": "driver", "subject": "550.54.14"}),
            ("doctor", {"from_file": str(snap)}),
            ("fix_plan", {"from_file": str(snap)}),
            ("dockerfile", {"path": str(recipe), "from_file": str(snap)}),
            ("doctor", {"from_file": str(tmp_path / "missing.json")}),
            ("compat", {"topic": "torch", "subject": "--kill"}),
            (
                "install_plan",
                {
                    "packages": ["torch"],
                    "gpus": ["GTX 1080"],
                    "driver": "580.95.05",
                    "python": "3.12",
                },
            ),
        ]
    )
    assert [t.name for t in tools] == TOOLS
    assert all(t.annotations.read_only_hint for t in tools)
    compat_tool = next(t for t in tools if t.name == "compat")
    ref = compat_tool.input_schema["properties"]["topic"]["$ref"].rsplit("/", 1)[1]
    assert compat_tool.input_schema["$defs"][ref]["enum"] == [
        "torch", "tensorflow", "jax", "cudnn", "driver", "cuda", "gpu",
    ]  # fmt: skip
    assert compat_tool.input_schema["required"] == ["topic", "subject"]

    compat, doctor, plan, docker, missing, option, install = results
    assert compat.is_error is False
    assert compat.structured_content == cli("compat", "--json", "driver", "550.54.14")
    assert compat.structured_content["max_cuda"] == "12.4"

    def without_time(report: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in report.items() if k != "created_at"}

    assert without_time(doctor.structured_content) == without_time(
        cli("doctor", "--json", "--from", str(snap))
    )
    assert [s["findings"] for s in plan.structured_content["steps"]] == [
        ["frameworks.torch.cpu-build"]
    ]
    assert plan.structured_content["kind"] == "gpucheck-fix-plan"
    assert [(f["id"], f["status"]) for f in docker.structured_content["findings"]] == [
        ("dockerfile.base-cuda", "fail")
    ]
    assert missing.is_error is True
    assert missing.content[0].text == (
        f"Error executing tool doctor: gpucheck: --from: {tmp_path / 'missing.json'}: no such file"
    )
    assert option.is_error is True
    assert "a value may not start with '-'" in option.content[0].text
    assert install.structured_content == cli("install", "--json", "torch", *PASCAL)
    assert install.structured_content["commands"] == [
        "pip install 'torch==2.14.*' --index-url https://download.pytorch.org/whl/cu126"
    ]


def test_a_client_that_closes_stdin_still_gets_every_answer_it_asked_for() -> None:
    # A script's client writes its requests and closes stdin (`echo ... | gpucheck mcp`, a
    # half-closed pipe): the tool calls still running then must still be answered on stdout.
    requests: list[dict[str, Any]] = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "compat", "arguments": {"topic": "driver", "subject": "550.54.14"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "compat", "arguments": {"topic": "torch", "subject": "2.5"}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "gpucheck", "mcp"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4], done.stdout
    assert answers[2]["result"]["structuredContent"]["max_cuda"] == "12.4"
    assert answers[3]["result"]["isError"] is False
    assert [t["name"] for t in answers[4]["result"]["tools"]] == TOOLS


def test_a_client_that_stops_reading_ends_the_server_without_a_traceback() -> None:
    # `gpucheck mcp | head -c 1`: the reader goes away after one byte; the server's next
    # answers meet a closed pipe. It must end (no hang) and say nothing on stderr.
    import contextlib
    import os
    import time

    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        [sys.executable, "-m", "gpucheck", "mcp"],
        stdin=subprocess.PIPE,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    assert server.stdin is not None and server.stderr is not None
    try:
        server.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        server.stdin.flush()
        assert os.read(read_end, 1)  # the first byte of the first answer, then the reader goes
        os.close(read_end)
        for n in range(2, 6):
            time.sleep(0.2)
            ping = {"jsonrpc": "2.0", "id": n, "method": "ping"}  # small answers stay buffered
            try:
                server.stdin.write((json.dumps(ping) + "\n").encode())
                server.stdin.flush()
            except BrokenPipeError:
                break  # the server already ended, as it should
        with contextlib.suppress(BrokenPipeError):
            server.stdin.close()
        server.wait(timeout=60)
        assert server.stderr.read().decode() == ""
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
