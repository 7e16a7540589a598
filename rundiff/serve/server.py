"""Start `rundiff serve`: check the flags, bind the socket, print the URL, run uvicorn."""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass
class Launch:
    """A server ready to run: uvicorn's, its listening socket, and the URL to print."""

    server: Any
    sock: socket.socket
    url: str
    app: Any

    def run(self) -> None:
        self.server.run(sockets=[self.sock])


def prepare(sources: Sequence[str], *, roots: Sequence[str] | None = None,
            host: str = "127.0.0.1", port: int = 8770, token: str | None = None,
            stale: str = "30m", allow_remote: bool = False, verbose: bool = False,
            poll_every: float = 1.0) -> Launch:
    """Check the flags, bind the socket and build the app (tests and the bench run it too)."""
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
    settings = Settings(sources, confinement, token, allowed_hosts(host, bound), stale_after,
                        poll_every)
    app = build_app(settings)
    config = uvicorn.Config(app, log_level="info" if verbose else "warning", access_log=verbose,
                            lifespan="on")
    return Launch(uvicorn.Server(config), sock, url_of(host, bound, token), app)


def serve(sources: Sequence[str], *, roots: Sequence[str] | None = None, host: str = "127.0.0.1",
          port: int = 8770, token: str | None = None, stale: str = "30m",
          allow_remote: bool = False, verbose: bool = False) -> int:
    """Serve until interrupted."""
    launch = prepare(sources, roots=roots, host=host, port=port, token=token, stale=stale,
                     allow_remote=allow_remote, verbose=verbose)
    roots_shown = ", ".join(launch.app.state.catalog.confinement.roots)
    print(f"rundiff serve: {len(launch.app.state.catalog.sources)} source(s); roots: "
          f"{roots_shown}; read-only", file=sys.stderr)
    if not is_loopback(host):
        print(f"rundiff serve: listening on {host} — anyone who can reach it and has the token "
              "can read the runs", file=sys.stderr)
    print("rundiff serve: open this URL in a browser (Ctrl-C stops the server):", file=sys.stderr)
    print(f"    {launch.url}", flush=True)
    try:
        launch.run()
    except KeyboardInterrupt:
        pass
    return 0
