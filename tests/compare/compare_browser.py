"""Headless-Chromium pages for the HTML report tests, driven by Playwright.

Playwright drives the system Chromium (installed by scripts/install-test-deps.sh) through
`executable_path`: no browser is downloaded (`playwright install` is never run). The page records
console errors, uncaught exceptions, failed loads and every network request, so the tests can
assert the report is self-contained and renders cleanly.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Chromium's own background traffic (updates, safe browsing, metrics…) stays off: the tests
# assert the page makes no network request, and the machine may have no route out anyway.
FLAGS = (
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--disable-breakpad", "--no-first-run",
    "--no-default-browser-check", "--metrics-recording-only", "--password-store=basic",
    "--use-mock-keychain", "--mute-audio", "--hide-scrollbars",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
)
VIEWPORT = {"width": 1280, "height": 1000}


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """A loaded page plus what it logged: console errors/exceptions and requested URLs."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.console_errors.append(f"exception: {exc}"))
        page.on("requestfailed", lambda r: self.console_errors.append(
            f"failed request: {r.url} ({r.failure})"))
        page.on("request", lambda r: self.requests.append(r.url))

    def _console(self, msg: Any) -> None:
        if msg.type in ("error", "assert"):
            self.console_errors.append(f"console: {msg.text}")

    def evaluate(self, expression: str) -> Any:
        return self.page.evaluate(expression)

    def wait_for(self, expression: str, timeout: float = 90.0) -> None:
        self.page.wait_for_function(expression, timeout=timeout * 1000)

    def screenshot(self) -> bytes:
        return self.page.screenshot(type="png")


@contextmanager
def open_page(url: str, chromium: str, timeout: float = 60.0) -> Iterator[Page]:
    """Launch the system Chromium headless, open `url` in a 1280×1000 page, yield it, clean up."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=list(FLAGS),
                                     timeout=timeout * 1000)
        try:
            context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
            page = Page(context.new_page())
            page.page.goto(url, wait_until="load", timeout=timeout * 1000)
            yield page
        finally:
            browser.close()


def file_url(path: str) -> str:
    return "file://" + os.path.abspath(path)
