"""A minimal headless-Chromium driver over the DevTools protocol (websocket on 127.0.0.1).

Starts the system Chromium (installed by scripts/install-test-deps.sh) with every background
network feature off, opens one page, records console errors, exceptions and every network request,
and answers `evaluate` / `screenshot`. Nothing is downloaded: no webdriver, no browser fetch.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--disable-breakpad", "--no-first-run",
    "--no-default-browser-check", "--metrics-recording-only", "--password-store=basic",
    "--use-mock-keychain", "--mute-audio", "--hide-scrollbars",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
    "--window-size=1280,1000",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """One page target, attached with a flattened session on the browser websocket."""

    def __init__(self, ws: Any, session: str) -> None:
        self.ws = ws
        self.session = session
        self._id = 0
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        self.events: list[dict[str, Any]] = []

    def _record(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            self.console_errors.append("console: " + " ".join(map(str, args)))
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.console_errors.append("exception: " + str(
                d.get("exception", {}).get("description") or d.get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.console_errors.append("log: " + params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            self.requests.append(params.get("request", {}).get("url", ""))
        if method:
            self.events.append(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> Any:
        self._id += 1
        my = self._id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params or {},
                                 "sessionId": self.session}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._record(msg)
        raise TimeoutError(method)

    def wait_event(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        for msg in self.events:
            if msg.get("method") == method:
                return msg
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            self._record(msg)
            if msg.get("method") == method:
                return msg
        raise TimeoutError(method)

    def evaluate(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                              "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return
            time.sleep(0.2)
        raise TimeoutError(f"{expression} never became true; errors: {self.console_errors}")

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])


@contextmanager
def open_page(url: str, chromium: str, timeout: float = 60.0) -> Iterator[Page]:
    """Launch Chromium, open `url` in a fresh page with logging on, yield the Page, clean up."""
    import websocket  # websocket-client (a wandb dependency; listed in the dev extra)

    profile = tempfile.mkdtemp(prefix="rundiff-chromium-")
    proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ws = None
    try:
        endpoint = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and endpoint is None:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {proc.returncode}")
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                endpoint = m.group(1)
        if endpoint is None:
            raise TimeoutError("chromium did not report a DevTools endpoint")
        ws = websocket.create_connection(endpoint, timeout=timeout, suppress_origin=True)
        ws.send(json.dumps({"id": 1, "method": "Target.createTarget", "params": {"url": "about:blank"}}))
        target = _reply(ws, 1)["targetId"]
        ws.send(json.dumps({"id": 2, "method": "Target.attachToTarget",
                            "params": {"targetId": target, "flatten": True}}))
        page = Page(ws, _reply(ws, 2)["sessionId"])
        page._id = 10
        for domain in ("Runtime", "Log", "Network", "Page"):
            page.send(f"{domain}.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        page.send("Page.navigate", {"url": url})
        page.wait_event("Page.loadEventFired", timeout)
        yield page
    finally:
        if ws is not None:
            try:
                ws.send(json.dumps({"id": 99999, "method": "Browser.close"}))
            except Exception:  # noqa: BLE001 - best effort while tearing down
                pass
            ws.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()
        shutil.rmtree(profile, ignore_errors=True)


def _reply(ws: Any, wanted: int) -> dict[str, Any]:
    while True:
        msg = json.loads(ws.recv())
        if msg.get("id") == wanted:
            if "error" in msg:
                raise RuntimeError(msg["error"])
            return msg["result"]


def file_url(path: str) -> str:
    return "file://" + os.path.abspath(path)
