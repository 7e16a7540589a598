"""`rundiff mcp`: rundiff's read-only tools for AI agents (confine: which addresses may be read;
tools: what each tool answers; server: the MCP SDK wiring and transports; command: the `mcp`
subcommand's arguments).

This package is also the `agents` plugin (hooks only here): it adds `mcp` (and `serve`, the
local page of `rundiff.serve`, which answers with these tools' JSON) through
`rundiff_register_commands`, the hook any package uses to add a subcommand, so rundiff_core never
imports the `rundiff` package above it. The core loads it from `DEFAULT_PLUGINS`, as it loads the
built-in adapters. `rundiff --help` imports this module, so it imports neither the command nor
the MCP SDK.
"""

from __future__ import annotations

from rundiff_core.builtins import lazy_commands

# (name, module, the help `rundiff --help` shows); tests check it against the module's own.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("mcp", "rundiff.agents.command",
     "serve rundiff's read-only tools to AI agents (Model Context Protocol)"),
    ("serve", "rundiff.serve.command",
     "a local page to compare runs from any tracker (run table, same-step compare, live curves)"),
)

rundiff_register_commands = lazy_commands(COMMANDS)
