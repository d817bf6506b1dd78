"""`gpucheck mcp`: a Model Context Protocol server over stdio (the official `mcp` SDK) whose
tools are gpucheck's read-only commands, each answering with the JSON its --json prints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from gpucheck.mcp import commands as c
from gpucheck.mcp.stdio import serve_relayed
from gpucheck.version import __version__

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
# `fit` with hub=True reads a model's metadata from the Hugging Face Hub: an open world.
READ_ONLY_HUB = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)


def _run(argv: Callable[[], list[str]], stdin: str | None = None) -> dict[str, Any]:
    """The command's JSON; its one-line error (a bad value, a usage error) as the tool's."""
    try:
        result = c.run_command(argv(), stdin=stdin)
    except c.CommandFailed as exc:
        raise ToolError(str(exc)) from None
    return result if isinstance(result, dict) else {"items": result}


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        "gpucheck",
        version=__version__,
        log_level="ERROR",
        instructions="Read-only diagnosis of this machine's NVIDIA GPUs, driver, CUDA, cuDNN and "
        "Python frameworks. Every tool answers with the JSON of the matching `gpucheck` command "
        "(`gpucheck schema NAME` describes it). Nothing here changes the machine.",
    )

    @server.tool(annotations=READ_ONLY)
    def doctor(
        from_file: str | None = None,
        python: str | None = None,
        deep: bool = False,
        strict: bool = False,
        only: list[str] | None = None,
    ) -> dict[str, Any]:
        """Run every check on this machine (or a saved snapshot/report at from_file): the
        `gpucheck doctor --json` report, with findings and their typed fixes."""
        return _run(lambda: c.doctor_argv(from_file, python, deep, strict, only or []))

    @server.tool(annotations=READ_ONLY)
    def snapshot(python: str | None = None, deep: bool = False) -> dict[str, Any]:
        """The facts alone (`gpucheck snapshot`): GPUs, driver, CUDA, libraries, frameworks."""
        return _run(lambda: c.snapshot_argv(python, deep))

    @server.tool(annotations=READ_ONLY)
    def procs(gpu: str | None = None) -> dict[str, Any]:
        """Who holds GPU memory and device files (`gpucheck procs --json`); lists only."""
        return _run(lambda: c.procs_argv(gpu))

    @server.tool(annotations=READ_ONLY)
    def compat(topic: c.CompatTopic, subject: str, windows: bool = False) -> dict[str, Any]:
        """Ask the cited compatibility data (`gpucheck compat --json TOPIC SUBJECT`): e.g.
        topic torch, subject 2.5; topic driver, subject 550.54.14; topic gpu, subject 'H100'."""
        return _run(lambda: c.compat_argv(topic, subject, windows))

    @server.tool(annotations=READ_ONLY_HUB)
    def fit(
        model: str | None = None,
        params: str | None = None,
        train: bool = True,
        dtype: str | None = None,
        batch: int | None = None,
        seq: int | None = None,
        gpus: int | None = None,
        gpu_memory: str | None = None,
        hub: bool = False,
    ) -> dict[str, Any]:
        """Will a model (a local config.json / safetensors path, a Hub id ORG/NAME[@REVISION],
        or params like '7B') fit these GPUs (`gpucheck fit --json`). A Hub id is read from the
        local Hugging Face cache; hub=true also lets it fetch the config.json and safetensors
        headers from the Hub (never weights)."""
        return _run(
            lambda: c.fit_argv(model, params, train, dtype, batch, seq, gpus, gpu_memory, hub)
        )

    @server.tool(annotations=READ_ONLY)
    def fix_plan(from_file: str | None = None, python: str | None = None) -> dict[str, Any]:
        """The doctor's fixes as one ordered plan (`gpucheck fix --json`, a dry run: nothing
        is applied)."""
        return _run(lambda: c.fix_plan_argv(from_file, python))

    @server.tool(annotations=READ_ONLY)
    def dockerfile(path: str, from_file: str | None = None) -> dict[str, Any]:
        """Judge a Dockerfile or Compose file against this machine or a saved snapshot
        (`gpucheck dockerfile --json`)."""
        return _run(lambda: c.dockerfile_argv(path, from_file))

    @server.tool(annotations=READ_ONLY)
    def install_plan(
        packages: list[str],
        from_file: str | None = None,
        gpus: list[str] | None = None,
        driver: str | None = None,
        python: str | None = None,
        os: str | None = None,
        installer: str | None = None,
    ) -> dict[str, Any]:
        """Which build of each package (torch, torchvision, torchaudio, tensorflow, jax, cupy; pip
        constraints like 'torch>=2.4') runs on this machine, a saved snapshot, or one described
        by gpus (names like 'RTX 5090'), driver, python (X.Y) and os, and the installer's
        commands (`gpucheck install --json`: a plan; nothing is installed)."""
        return _run(
            lambda: c.install_argv(packages, from_file, gpus or [], driver, python, os, installer)
        )

    @server.tool(annotations=READ_ONLY)
    def explain(text: str, from_file: str | None = None) -> dict[str, Any]:
        """Explain a pasted error text (a traceback, a log, dmesg, an NCCL log): each known
        message's layer, cause and fix (`gpucheck explain --json`); from_file, a saved
        snapshot whose facts (GPUs, driver, builds) decide what the text cannot."""
        return _run(lambda: c.explain_argv(from_file), stdin=text)

    return server


def serve() -> None:
    server = build_server()
    serve_relayed(lambda: server.run("stdio"))
