"""`gpucheck mcp`: serve the read-only tools over the Model Context Protocol on stdio."""

from __future__ import annotations

from gpucheck.cli.common import UserError


def mcp() -> None:
    """Serve doctor, snapshot, procs, compat, fit, fix (plan only) and dockerfile as MCP tools
    on stdin/stdout, for an AI agent's MCP client. Nothing they do changes the machine.

    Exit codes: 0 the client closed the session, 2 the `mcp` extra is not installed.
    """
    try:
        from gpucheck.mcp.server import serve
    except ImportError as exc:
        raise UserError(
            f"gpucheck mcp needs the MCP SDK ({exc.name}): pip install 'gpucheck-doctor[mcp]'"
        ) from None
    serve()
