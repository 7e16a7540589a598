"""The test-wide guards themselves: loopback only, telemetry off."""

from __future__ import annotations

import os
import socket

import pytest


def test_non_loopback_connections_fail_before_any_packet():
    # tests/conftest.py's NetworkGuardError is a RuntimeError naming the rule
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s, pytest.raises(RuntimeError, match="only loopback"):
        s.connect(("192.0.2.1", 443))  # TEST-NET-1: never routed; the guard raises first
    with pytest.raises(RuntimeError, match="only loopback"):
        socket.getaddrinfo("example.com", 443)


def test_loopback_is_allowed():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with server, socket.create_connection(server.getsockname(), timeout=5):
        pass


def test_tracker_telemetry_is_off():
    assert os.environ["WANDB_MODE"] == "offline"
    assert os.environ["WANDB_ERROR_REPORTING"] == "false"
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "true"
