"""Who may talk to `rundiff serve`: this machine, through the printed URL, about files under the
roots.

- **Loopback by default.** Another `--host` is refused unless a `--token` is given explicitly
  (a page reachable from the network needs a secret its owner chose).
- **Host header.** A request whose `Host` is not the address the server was started on (its
  loopback names, with the port) is refused: a page on another site that resolves its own name
  to 127.0.0.1 (DNS rebinding) cannot read the runs.
- **A per-launch token**, as Jupyter's: in the printed URL (`?token=`), then a cookie scoped to
  the page (HttpOnly, SameSite=Strict), or `Authorization: token …` for scripts.
- **Roots.** Addresses are checked by `rundiff mcp`'s confinement (`rundiff.agents.confine`).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from rundiff_core.errors import UsageError

COOKIE = "rundiff_serve_token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
                   Awaitable[None]]


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def choose_token(host: str, token: str | None) -> str:
    """The token: the one given, else (loopback only) a fresh random one."""
    if token is not None:
        if len(token) < 8:
            raise UsageError("--token must be at least 8 characters")
        return token
    if not is_loopback(host):
        raise UsageError(f"--host {host} would serve the runs beyond this machine",
                         hint="give --token SECRET too (the URL then needs it), or keep the "
                         "default 127.0.0.1")
    return secrets.token_urlsafe(24)


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The `Host` headers a request may carry: the bound address (every loopback name when it is
    loopback), with the port."""
    names = set(LOOPBACK_NAMES) if is_loopback(host) else set()
    names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    return frozenset(f"{name}:{port}" for name in names)


@dataclass(frozen=True)
class Gate:
    """The Host and token checks, as ASGI middleware around the app."""

    token: str
    hosts: frozenset[str]

    def token_in(self, scope: Scope) -> bool:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
        auth = headers.get("authorization", "")
        if auth.lower().startswith("token "):
            given.append(auth[6:].strip())
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is no token
            pass
        if COOKIE in cookie:
            given.append(cookie[COOKIE].value)
        return any(hmac.compare_digest(g.encode(), self.token.encode()) for g in given)

    def host_ok(self, scope: Scope) -> bool:
        for k, v in scope.get("headers", []):
            if k.lower() == b"host":
                return v.decode("latin-1").lower() in self.hosts
        return False

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def gated(scope: Scope, receive: Callable[[], Awaitable[Any]],
                        send: Callable[[Any], Awaitable[None]]) -> None:
            if scope["type"] not in ("http", "websocket"):
                return await app(scope, receive, send)
            if not self.host_ok(scope):
                return await _refuse(send, 403, "refused: this server answers only requests "
                                     "addressed to it by its own loopback address and port")
            if not self.token_in(scope):
                return await _refuse(send, 403, "refused: open the URL `rundiff serve` printed "
                                     "(it carries the token)")
            if scope.get("method", "GET") not in ("GET", "HEAD"):
                return await _refuse(send, 405, "refused: rundiff serve is read-only")
            return await app(scope, receive, send)

        return gated


async def _refuse(send: Callable[[Any], Awaitable[None]], status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
