"""`rundiff mcp`: the tools of `tools.py` served over MCP with the official SDK (`mcp`, 2.x).

stdio by default (stdout carries the protocol, so every log line goes to stderr); streamable
HTTP on a loopback address with `--http HOST:PORT`. Every tool is read-only.
"""

from __future__ import annotations

import ipaddress
import logging
import sys
from typing import Any

from rundiff_core.errors import MissingDependencyError, UsageError

from .confine import Confinement
from .tools import DEFAULT_MAX_CHARS, Tools

log = logging.getLogger("rundiff.mcp")

INSTRUCTIONS = """\
rundiff compares ML training runs wherever they were logged (journal run folders, TensorBoard,
MLflow, W&B, Neptune, local result files, agent trajectory exports). Every answer is a Markdown
report plus the same report as JSON. Start with `ls` to see runs, keys and step ranges; `diff`
answers "is B better than A?" with a strict verdict; `compare` reads every baseline at the
student's current step (never at the baseline's end); `rank` orders many runs at a common step;
`trajectories` diffs two agent runs task by task. Quote verdicts verbatim; never claim more than
they say."""

TOOL_NAMES = ("ls", "detect", "diff", "compare", "rank", "trajectories")


def _require_sdk() -> None:
    try:
        import mcp.server  # noqa: F401
        import mcp_types  # noqa: F401
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "pydantic"):
            raise MissingDependencyError("`rundiff mcp` needs the MCP SDK",
                                         hint="pip install 'rundiff[mcp]'") from exc
        raise


def build_server(confinement: Confinement, *, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
    """An `mcp.server.MCPServer` with the six read-only tools."""
    _require_sdk()
    import mcp_types
    from mcp.server import MCPServer

    from rundiff_core import __version__

    from .schema import DESCRIPTIONS, ToolSet

    toolset = ToolSet(Tools(confinement, max_chars))
    server = MCPServer("rundiff", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")
    annotations = mcp_types.ToolAnnotations(readOnlyHint=True, destructiveHint=False,
                                            idempotentHint=True,
                                            openWorldHint=confinement.allow_remote)
    for name in TOOL_NAMES:
        server.add_tool(getattr(toolset, name), name=name, description=DESCRIPTIONS[name],
                        annotations=annotations)
    return server


def parse_http(spec: str) -> tuple[str, int]:
    """HOST:PORT for streamable HTTP, refusing any host that is not a loopback address."""
    host, sep, port = spec.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http {spec!r} is not HOST:PORT", hint="e.g. --http 127.0.0.1:8765")
    loopback = host == "localhost"
    if not loopback:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
    if not loopback:
        raise UsageError(f"--http {host} is not a loopback address; rundiff mcp serves this "
                         "machine only", hint="use 127.0.0.1, ::1 or localhost")
    return host, int(port)


def _stderr_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("rundiff mcp: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO if verbose else logging.WARNING)
    log.propagate = False


def serve(roots: list[str] | None, *, http: str | None = None, allow_remote: bool = False,
          max_chars: int = DEFAULT_MAX_CHARS, verbose: bool = False) -> int:
    """Run the server until the client disconnects (stdio) or it is interrupted (HTTP)."""
    confinement = Confinement.of(roots, allow_remote=allow_remote)
    address = parse_http(http) if http else None
    _stderr_logging(verbose)
    server = build_server(confinement, max_chars=max_chars)
    log.warning("serving %d read-only tools over %s; roots: %s%s", len(TOOL_NAMES),
                f"http://{address[0]}:{address[1]}/mcp" if address else "stdio",
                ", ".join(confinement.roots), "; remote trackers allowed" if allow_remote else "")
    if address is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=address[0], port=address[1])
    return 0
