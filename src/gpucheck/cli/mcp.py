"""`gpucheck mcp`: serve the read-only tools over the Model Context Protocol on stdio."""

from __future__ import annotations

from gpucheck.cli.common import UserError, install_extra
from gpucheck.exit_status import ExitStatus

# What --help lists under "Exit codes" (with those every command shares).
EXIT_CODES = {
    ExitStatus.OK: "the client closed the session",
}


def mcp() -> None:
    """Serve doctor, snapshot, procs, compat, fit, fix (plan only) and dockerfile as MCP tools
    on stdin/stdout, for an AI agent's MCP client. Nothing they do changes the machine.
    """
    try:
        from gpucheck.mcp.server import serve
    except ImportError as exc:
        raise UserError(
            f"gpucheck mcp needs the MCP SDK ({exc.name}): {install_extra('mcp')}"
        ) from None
    serve()
