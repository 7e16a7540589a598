"""A tracker server that is not there is reported in seconds, naming the URL and the cause.

Loopback only: a port with nothing listening, a socket that accepts and never answers, and a
local responder that answers 401 / 429 / 500 / a web page that is not a tracker.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rundiff_core.cli import main
from rundiff_core.netprobe import ServerUnreachable, probe

pytestmark = pytest.mark.server


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def silent_socket():
    """Accepts connections (the kernel's backlog) and never says a word."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


class _Canned:
    def __init__(self, statuses: list[int], body: bytes = b"{}", kind: str = "application/json"):
        self.statuses = list(statuses)
        self.hits = 0
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                canned.hits += 1
                status = canned.statuses.pop(0) if len(canned.statuses) > 1 else canned.statuses[0]
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                if status in (429, 503):
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815 - http.server's names

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canned():
    made = []

    def make(*args, **kw):
        made.append(_Canned(*args, **kw))
        return made[-1]

    yield make
    for c in made:
        c.close()


def _cli(capsys, *argv) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    code = main(list(argv))
    elapsed = time.perf_counter() - t0
    return code, capsys.readouterr().err, elapsed


def _wandb_env(monkeypatch, url: str) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_BASE_URL", url)
    monkeypatch.setenv("WANDB_API_KEY", "f" * 40)


def test_mlflow_closed_port_is_refused_in_seconds(capsys):
    pytest.importorskip("mlflow")
    url = f"http://127.0.0.1:{_closed_port()}"
    code, err, elapsed = _cli(capsys, "ls", f"mlflow:{url}")
    assert code == 2 and elapsed < 10
    assert url in err and "connection refused" in err
    assert "MLFLOW_TRACKING" not in err and "credential" not in err.lower()
    assert "Traceback" not in err


def test_wandb_closed_port_is_refused_in_seconds(capsys, monkeypatch):
    url = f"http://127.0.0.1:{_closed_port()}"
    _wandb_env(monkeypatch, url)
    code, err, elapsed = _cli(capsys, "ls", "wandb:team/proj/abc12345")
    assert code == 2 and elapsed < 10
    assert url in err and "connection refused" in err
    assert "WANDB_API_KEY" not in err and "f" * 40 not in err


def test_a_socket_that_never_answers(capsys, monkeypatch, silent_socket):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("RUNDIFF_PROBE_TIMEOUT", "1")
    code, err, elapsed = _cli(capsys, "ls", f"mlflow:{silent_socket}")
    assert code == 2 and elapsed < 10
    assert "no HTTP answer within 1 s" in err and silent_socket in err


def test_401_says_key_rejected_with_a_credentials_hint(capsys, monkeypatch, canned):
    server = canned([401])
    _wandb_env(monkeypatch, server.url)
    code, err, _ = _cli(capsys, "ls", "wandb:team/proj/abc12345")
    assert code == 2 and "401: key rejected" in err and "WANDB_API_KEY" in err
    assert "f" * 40 not in err


def test_500_is_a_server_error_without_a_credentials_hint(capsys, canned):
    pytest.importorskip("mlflow")
    server = canned([500])
    code, err, _ = _cli(capsys, "ls", f"mlflow:{server.url}")
    assert code == 2 and "500: server error" in err and "MLFLOW_TRACKING" not in err
    assert server.hits == 1  # a 500 is not retried


def test_429_then_200_is_retried_with_the_wait_said(canned):
    server = canned([429, 503, 200])
    said = io.StringIO()
    answer = probe(server.url, path="/x", say=said, sleep=lambda s: None)
    assert answer.status == 200 and server.hits == 3
    lines = said.getvalue().splitlines()
    assert len(lines) == 2 and "answered 429 (rate limited); retrying in 0 s (1 of 2)" in lines[0]
    assert "answered 503" in lines[1]


def test_429_forever_gives_up(capsys, canned):
    pytest.importorskip("mlflow")
    server = canned([429])
    code, err, elapsed = _cli(capsys, "ls", f"mlflow:{server.url}")
    assert code == 2 and "429: rate limited, still after retries" in err and elapsed < 10
    assert "retrying in 0 s" in err and server.hits == 3


def test_a_web_page_is_not_a_tracker(capsys, monkeypatch, canned):
    pytest.importorskip("mlflow")
    server = canned([200], body=b"<html>hello</html>", kind="text/html")
    code, err, _ = _cli(capsys, "ls", f"mlflow:{server.url}")
    assert code == 2 and "not an MLflow tracking server" in err
    _wandb_env(monkeypatch, server.url)
    code, err, _ = _cli(capsys, "ls", "wandb:team/proj/abc12345")
    assert code == 2 and "not a W&B server" in err


def test_tls_to_a_plain_http_server_is_a_tls_error(canned):
    server = canned([200])
    with pytest.raises(ServerUnreachable, match="TLS error"):
        probe(server.url.replace("http://", "https://"), timeout=2)


def test_name_not_resolved(monkeypatch):
    def no_such_name(host, *args, **kwargs):  # what the resolver raises for an unknown name
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    with pytest.raises(ServerUnreachable) as info:
        probe("http://tracker.invalid:5000")
    assert "name not resolved (tracker.invalid)" in str(info.value)
    assert "credential" not in str(info.value).lower()
