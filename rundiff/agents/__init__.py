"""`rundiff mcp`: rundiff's read-only tools for AI agents (confine: which addresses may be read;
tools: what each tool answers; server: the MCP SDK wiring and transports)."""
