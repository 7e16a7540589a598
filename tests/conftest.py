"""Test-wide guards: loopback-only network, trackers' telemetry off, isolated cache/home dirs."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

pytest_plugins = ["rundiff_core.testing"]

# Set before any tracker client is imported: both clients look up remote hosts even "offline".
os.environ.update(
    {
        "WANDB_MODE": "offline",
        "WANDB_ERROR_REPORTING": "false",
        "WANDB_SILENT": "true",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_DISABLE_CODE": "true",
        "WANDB__DISABLE_STATS": "true",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "DO_NOT_TRACK": "1",
        "NEPTUNE_MODE": "offline",
        "INSPECT_TELEMETRY": "false",
        "HF_HUB_OFFLINE": "1",
    }
)
for var in ("WANDB_API_KEY", "NEPTUNE_API_TOKEN", "MLFLOW_TRACKING_URI", "RUNDIFF_LOAD_PLUGINS",
            "RUNDIFF_DISABLE_PLUGINS", "RUNDIFF_TRACE_PLUGINS"):
    os.environ.pop(var, None)

REPO_ROOT = Path(__file__).resolve().parents[1]
REALDATA = Path(os.environ.get("RUNDIFF_REALDATA", REPO_ROOT.parent / "shared" / "realdata"))


class NetworkGuardError(RuntimeError):
    """A test tried to reach a non-loopback address."""


def _is_loopback(address: object) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else address
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self: socket.socket, address: object) -> None:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
        raise NetworkGuardError(f"test tried to connect to {address!r}; only loopback is allowed")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
        raise NetworkGuardError(f"test tried to connect to {address!r}; only loopback is allowed")
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):  # noqa: ANN001 - mirrors socket.getaddrinfo
    if host is not None and not _is_loopback((host.decode() if isinstance(host, bytes) else host,)):
        raise NetworkGuardError(f"test tried to resolve {host!r}; only loopback is allowed")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Each test gets its own cache/config dirs so nothing leaks into the user's home."""
    base = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(base / "cache" / "rundiff"))
    yield


@pytest.fixture
def realdata() -> Path:
    """The shared real-data folder; tests using it skip cleanly when it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real data folder not found at {REALDATA}")
    return REALDATA


@pytest.fixture
def demo_runs(tmp_path: Path) -> Path:
    from rundiff_core.demo import make_demo

    make_demo(str(tmp_path / "runs"))
    return tmp_path / "runs"
