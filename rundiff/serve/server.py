"""Start `rundiff serve`: check the flags, bind the socket, print the URL, run uvicorn."""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Sequence

from rundiff_core.errors import MissingDependencyError, UsageError

from .. import _bridge
from ..agents.confine import Confinement
from .security import allowed_hosts, choose_token, is_loopback

PORT_TRIES = 20


def _require() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("`rundiff serve` needs starlette and uvicorn",
                                     hint="pip install 'rundiff[serve]'") from exc


def default_roots(sources: Sequence[str]) -> list[str]:
    """The folders the page may read when no --root is given: each local folder given (a file's
    folder), else the working directory."""
    roots = []
    for src in sources:
        path = src.split("#", 1)[0]
        if ":" in path and not os.path.exists(path):  # scheme:locator
            path = path.split(":", 1)[1]
        if os.path.isdir(path):
            roots.append(path)
        elif os.path.exists(path):
            roots.append(os.path.dirname(os.path.abspath(path)))
    return roots or [os.getcwd()]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or the next free port (PORT_TRIES of them)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    last: OSError | None = None
    for candidate in [port] if port == 0 else range(port, port + PORT_TRIES):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), candidate))
        except OSError as exc:
            sock.close()
            last = exc
            if exc.errno != errno.EADDRINUSE:
                break
            continue
        sock.listen(128)
        return sock
    raise UsageError(f"cannot listen on {host}:{port}: {last}", hint="choose another --port")


def url_of(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/?token={token}"


def serve(sources: Sequence[str], *, roots: Sequence[str] | None = None, host: str = "127.0.0.1",
          port: int = 8770, token: str | None = None, stale: str = "30m",
          allow_remote: bool = False, verbose: bool = False) -> int:
    """Serve until interrupted."""
    _require()
    import uvicorn

    from .app import Settings, build_app

    token = choose_token(host, token)
    sources = list(sources) or [os.getcwd()]
    confinement = Confinement.of(list(roots) if roots else default_roots(sources),
                                 allow_remote=allow_remote, command="rundiff serve")
    confinement.check_addresses(sources)  # a source outside the roots: said now, not on the page
    stale_after = _bridge.parse_duration(stale)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    settings = Settings(sources, confinement, token, allowed_hosts(host, bound), stale_after)
    app = build_app(settings)
    print(f"rundiff serve: {len(sources)} source(s); roots: {', '.join(confinement.roots)}",
          file=sys.stderr)
    if not is_loopback(host):
        print(f"rundiff serve: listening on {host} — anyone who can reach it and has the token "
              "can read the runs", file=sys.stderr)
    print(f"    {url_of(host, bound, token)}", flush=True)
    config = uvicorn.Config(app, log_level="info" if verbose else "warning", access_log=verbose,
                            lifespan="on")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    return 0
