"""`gpucheck mcp`: the read-only tools for AI agents, over the Model Context Protocol (stdio).
commands.py builds each tool's command line (read-only commands only) and runs it; server.py
declares the tools with the official `mcp` SDK (the `mcp` extra)."""
