"""What each MCP tool answers, independent of the protocol: a Markdown report and its JSON.

Every tool checks its addresses against the server's roots first, runs the same `rundiff` API
call as the notebook user (so the numbers are the CLI's), redacts secrets in both parts and caps
each part's size with a notice that names a narrower call. Errors are answers too: the CLI's
one-line message and hint.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rundiff_core.errors import RundiffError, UsageError

from .. import _bridge
from .confine import Confinement

log = logging.getLogger("rundiff.mcp")

DEFAULT_MAX_CHARS = 24_000  # per part: ~6k tokens of text, ~6k of JSON — well under clients' caps


@dataclass
class Answer:
    """One tool answer: `text` for the model to read, `data` (JSON object) for programs."""

    text: str
    data: dict[str, Any]
    error: bool = False


def _redact(value: Any) -> Any:
    """Scrub secrets embedded in every string (config values were redacted by the engines)."""
    if isinstance(value, str):
        return _bridge.redact_text(value)
    if isinstance(value, dict):
        return {k: _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _cut_text(text: str, limit: int, narrower: str) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit]
    head = head[: head.rfind("\n") + 1] or head
    return (head + f"\n[truncated: showing {len(head)} of {len(text)} characters. "
            f"For a shorter answer {narrower}.]\n")


def _cut_data(data: dict[str, Any], limit: int, narrower: str) -> dict[str, Any]:
    size = len(json.dumps(data, ensure_ascii=False))
    if size <= limit:
        return data
    notice = {"chars": size, "limit": limit,
              "message": f"the JSON report ({size} characters) is over this server's limit; its "
                         f"large fields are left out. For the whole report {narrower}."}
    kept = {"truncated": notice}
    budget = limit - len(json.dumps(kept, ensure_ascii=False))
    for key, value in data.items():  # small fields (schema, verdicts, steps, counts) stay
        part = len(json.dumps({key: value}, ensure_ascii=False))
        if part < min(budget, limit // 10):
            kept[key] = value
            budget -= part
    return kept


class Tools:
    """The read-only tools, bound to one confinement and size limit."""

    def __init__(self, confinement: Confinement, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        if max_chars < 1000:
            raise UsageError("--max-chars must be at least 1000")
        self.confinement = confinement
        self.max_chars = max_chars

    # -- plumbing --------------------------------------------------------------------------------
    def _answer(self, tool: str, addresses: list[str], narrower: str,
                build: Callable[[], tuple[str, dict[str, Any]]]) -> Answer:
        started = time.monotonic()
        try:
            if not addresses or not all(isinstance(a, str) and a for a in addresses):
                raise UsageError(f"{tool} needs at least one address (non-empty strings)",
                                 hint="e.g. [\"journal:runs/exp-a/seed-0\", \"runs/exp-b\"]")
            self.confinement.check_addresses(addresses)
            with _bridge.guarded(self.confinement.check_loaded):
                text, data = build()
        except RundiffError as exc:
            message = f"rundiff: error: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")
            log.info("%s refused in %.2fs: %s", tool, time.monotonic() - started,
                     _bridge.redact_text(exc.message))
            return Answer(_bridge.redact_text(message) + "\n",
                          _redact({"error": {"type": type(exc).__name__, "message": exc.message,
                                             "hint": exc.hint}}), error=True)
        except Exception as exc:  # a bug, not bad input: say so, keep the traceback on stderr
            log.error("%s failed with an internal error:\n%s", tool,
                      _bridge.redact_text(traceback.format_exc()))
            message = f"internal error in rundiff {tool}: {type(exc).__name__}: {exc}"
            return Answer(_bridge.redact_text(f"rundiff: error: {message}\n  hint: a bug — "
                                              "please report it with the server's stderr\n"),
                          _redact({"error": {"type": "InternalError", "message": message,
                                             "hint": "a bug — please report it"}}), error=True)
        log.info("%s answered in %.2fs", tool, time.monotonic() - started)
        return Answer(_cut_text(_redact(text), self.max_chars, narrower),
                      _cut_data(_redact(data), self.max_chars, narrower))

    # -- tools -----------------------------------------------------------------------------------
    def ls(self, addresses: list[str]) -> Answer:
        def build() -> tuple[str, dict[str, Any]]:
            rows, text = _bridge.ls_listing(addresses, points=True)
            return text, {"runs": _bridge.as_json(rows)}

        return self._answer("ls", list(addresses), "list one run or a smaller folder", build)

    def detect(self, path: str) -> Answer:
        def build() -> tuple[str, dict[str, Any]]:
            report, text = _bridge.detect_path(path)
            return text, _bridge.as_json(report)

        return self._answer("detect", [path], "sniff a narrower path", build)

    def diff(self, a: str, b: str, metric: str | None = None,
             goal: dict[str, str] | None = None) -> Answer:
        from ..api import diff

        def build() -> tuple[str, dict[str, Any]]:
            r = diff(a, b, metric=metric, goal=goal)
            return r.to_markdown(), r.to_dict()

        return self._answer("diff", [a, b], "pass a single metric", build)

    def compare(self, addresses: list[str], metric: str | None = None,
                goal: dict[str, str] | None = None) -> Answer:
        from ..api import compare

        def build() -> tuple[str, dict[str, Any]]:
            r = compare(*addresses, metric=metric, goals=goal)
            return r.to_markdown(), r.to_dict()

        return self._answer("compare", list(addresses),
                            "pass `metric` to compare one metric, or give fewer addresses", build)

    def rank(self, addresses: list[str], metric: str | None = None,
             goal: dict[str, str] | None = None) -> Answer:
        from ..api import rank

        def build() -> tuple[str, dict[str, Any]]:
            r = rank(*addresses, metric=metric, goal=goal)
            return r.to_markdown(), r.to_dict()

        return self._answer("rank", list(addresses),
                            "pass `metric` to rank on one metric, or give fewer addresses", build)

    def trajectories(self, a: str, b: str) -> Answer:
        from ..api import trajectories

        def build() -> tuple[str, dict[str, Any]]:
            r = trajectories(a, b)
            return r.to_markdown(), r.to_dict()

        return self._answer("trajectories", [a, b],
                            "run `rundiff trajectories A B --out DIR` in a shell: it writes the "
                            "full report, tasks.csv and matrix.json", build)
