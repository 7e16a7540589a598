"""A short look at a tracker server before its client's retry loop: is anything there, and is it
the tracker?

Tracker clients retry network faults for minutes (MLflow's urllib3 backoff: ~4 min; wandb-core's
service: ~1 min) before they say anything. One probe — resolve, connect, TLS, one HTTP request,
each bounded by a few seconds — names the URL and the cause instead: "connection refused", "name
not resolved", "TLS error", "no HTTP answer", "401: key rejected", "not an MLflow server". Only
answers that can succeed later (429, 503) are retried, and the wait is said. A network fault never
comes with a credentials hint; a rejected key does.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO
from urllib.parse import urlsplit

from .errors import InputError
from .redact import redact_text

RETRY_STATUSES = (429, 503)
MAX_WAIT = 10.0


def _timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("RUNDIFF_PROBE_TIMEOUT", "3")))
    except ValueError:
        return 3.0


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]


class ServerUnreachable(InputError):
    """The server could not be reached or is not the tracker (exit 2, one line)."""


def _fail(url: str, cause: str, hint: str | None) -> ServerUnreachable:
    return ServerUnreachable(f"{redact_text(url)}: {cause}", hint=hint)


def _uses_proxy(host: str, scheme: str) -> bool:
    proxies = urllib.request.getproxies()
    return scheme in proxies and not urllib.request.proxy_bypass(host)


def probe(url: str, *, path: str = "/", method: str = "GET", body: bytes | None = None,
          headers: dict[str, str] | None = None, timeout: float | None = None,
          what: str = "server", retries: int = 2, sleep: Callable[[float], None] = time.sleep,
          say: TextIO | None = None) -> Answer | None:
    """One bounded request to `url` + `path`; the answer, or ServerUnreachable naming the cause.

    Returns None without probing when the URL is not http(s) or a proxy is configured for it (the
    client's own proxy handling applies then). 429/503 are retried `retries` times, waiting the
    server's Retry-After (at most MAX_WAIT s), and each wait is said on `say` (stderr).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname
    if _uses_proxy(host, parts.scheme):
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    timeout = _timeout() if timeout is None else timeout
    net_hint = f"check the URL and that the {what} is running and reachable from here"
    full_path = (parts.path.rstrip("/") + path) or "/"
    for attempt in range(retries + 1):
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise _fail(url, f"name not resolved ({host})", net_hint) from None
        if parts.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            try:
                conn.connect()
            except ssl.SSLError as exc:
                raise _fail(url, f"TLS error ({exc.reason or exc})", net_hint) from None
            except ConnectionRefusedError:
                raise _fail(url, f"connection refused (nothing listening on {host}:{port})",
                            net_hint) from None
            except TimeoutError:
                raise _fail(url, f"no answer to a connection within {timeout:g} s", net_hint) from None
            except OSError as exc:
                raise _fail(url, f"cannot connect ({exc.strerror or exc})", net_hint) from None
            try:
                conn.request(method, full_path, body=body, headers={"Connection": "close",
                                                                   **(headers or {})})
                resp = conn.getresponse()
                data = resp.read(1 << 16)
            except TimeoutError:
                raise _fail(url, f"connected, but no HTTP answer within {timeout:g} s", net_hint) \
                    from None
            except (http.client.HTTPException, ConnectionError) as exc:
                raise _fail(url, f"not an HTTP server ({type(exc).__name__})", net_hint) from None
            except ssl.SSLError as exc:
                raise _fail(url, f"TLS error ({exc.reason or exc})", net_hint) from None
        finally:
            conn.close()
        answer = Answer(resp.status, data, {k.lower(): v for k, v in resp.getheaders()})
        if answer.status in RETRY_STATUSES and attempt < retries:
            wait = _retry_after(answer.headers.get("retry-after"), attempt)
            (say or sys.stderr).write(
                f"rundiff: {redact_text(url)} answered {answer.status} "
                f"({'rate limited' if answer.status == 429 else 'unavailable'}); retrying in "
                f"{wait:g} s ({attempt + 1} of {retries})\n")
            sleep(wait)
            continue
        return answer
    return answer


def _retry_after(value: str | None, attempt: int) -> float:
    try:
        wait = float(value) if value is not None else 2.0 * (2 ** attempt)
    except ValueError:
        wait = 2.0 * (2 ** attempt)
    return min(max(wait, 0.0), MAX_WAIT)


def status_error(url: str, answer: Answer, *, what: str, key_hint: str) -> ServerUnreachable | None:
    """The error for an answer that is not success: 401/403 (with a credentials hint), 429/503
    still after retries, other 5xx (no credentials hint). None for 2xx-4xx the caller judges."""
    s = answer.status
    if s == 401:
        return _fail(url, "401: key rejected", key_hint)
    if s == 403:
        return _fail(url, "403: access denied for this key", key_hint)
    if s in RETRY_STATUSES:
        return _fail(url, f"{s}: {'rate limited' if s == 429 else 'service unavailable'}, "
                          "still after retries", "try again later")
    if s >= 500:
        return _fail(url, f"{s}: server error", f"the {what} is up but failing; see its logs")
    return None


def fail(url: str, cause: str, hint: str | None = None) -> ServerUnreachable:
    """A ServerUnreachable for a cause the caller found in an answer (`not an MLflow server`)."""
    return _fail(url, cause, hint)


def tracker_json(url: str, answer: Answer, *, path: str,
                 is_tracker: Callable[[dict[str, Any]], bool], not_tracker: str,
                 hint: str) -> dict[str, Any]:
    """The answer's JSON object (an empty body reads as `{}`) when `is_tracker` recognises it;
    otherwise ServerUnreachable `<not_tracker> (<status> with non-JSON|unexpected JSON on <path>)`.
    One reading of a probe's body for every tracker, so each says only what its server answers."""
    try:
        body = json.loads(answer.body or b"{}")
    except ValueError:
        body = None
    if not isinstance(body, dict) or not is_tracker(body):
        raise _fail(url, f"{not_tracker} ({answer.status} with "
                         f"{'non-JSON' if body is None else 'unexpected JSON'} on {path})", hint)
    return body
