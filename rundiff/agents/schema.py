"""The tools' MCP signatures: argument names, types and descriptions the SDK turns into each
tool's input schema. Imported only once the SDK is known to be installed (it needs pydantic)."""

from __future__ import annotations

from typing import Annotated

import mcp_types as types
from pydantic import Field

from .tools import Answer, Tools

Addresses = Annotated[list[str], Field(
    description="run addresses: paths or scheme:locator (journal:runs/a/seed-0, tb:logs/, "
    "mlflow:mlruns#exp); a folder of seed-* runs is one seed group")]
Address = Annotated[str, Field(description="one run address (a path or scheme:locator)")]
Metric = Annotated[str | None, Field(
    description="metric key as logged (e.g. loss, eval/accuracy); omit for the default")]
Path = Annotated[str, Field(description="a file or folder to sniff")]
Goal = Annotated[dict[str, str] | None, Field(
    description='direction per metric, {"metric or glob": "min" | "max"}: where neither this, '
    "the runs nor the name's vocabulary say which way is better, no better/worse is claimed")]

DESCRIPTIONS = {
    "ls": "List runs: adapter, status, every metric key with its point count and step range, and "
          "fidelity notes. Call it first to learn the keys and steps.",
    "detect": "Which adapter reads a path: every claim with its reason, the winner, and the "
              "address to use.",
    "diff": "Decision-grade diff of run A vs run B (default metric: loss, else the main metric "
            "both log that carries information); two named runs are always two sides: changed config keys, "
            "final / best / last-10%-mean, sibling seed-* runs as variance samples, stability "
            "events, and a strict verdict (one of four fixed templates).",
    "compare": "Same-step comparison: every baseline read at the student's current step (the "
               "run still training), mean ± σ for seed groups, proxy vs downstream metrics, the "
               "trend, and a reading that names no winner from proxy metrics alone.",
    "rank": "Rank runs or seed groups at the latest step all of them reached: mean ± σ, "
            "bootstrap CI, the Holm-corrected top group, efficiency and anomalies.",
    "trajectories": "Task-by-task behavioural diff of two agent trajectory exports (A = "
                    "baseline): outcome matrix, divergence, gap classes, warm-start yield and an "
                    "RL-shaped verdict with its N caveat.",
}


def _result(answer: Answer) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)],
                                structured_content=answer.data, is_error=answer.error)


class ToolSet:
    """One method per MCP tool; each returns the Markdown report and its JSON."""

    def __init__(self, tools: Tools) -> None:
        self._tools = tools

    def ls(self, addresses: Addresses) -> types.CallToolResult:
        return _result(self._tools.ls(addresses))

    def detect(self, path: Path) -> types.CallToolResult:
        return _result(self._tools.detect(path))

    def diff(self, a: Address, b: Address, metric: Metric = None, goal: Goal = None
             ) -> types.CallToolResult:
        return _result(self._tools.diff(a, b, metric, goal))

    def compare(self, addresses: Addresses, metric: Metric = None, goal: Goal = None
                ) -> types.CallToolResult:
        return _result(self._tools.compare(addresses, metric, goal))

    def rank(self, addresses: Addresses, metric: Metric = None, goal: Goal = None
             ) -> types.CallToolResult:
        return _result(self._tools.rank(addresses, metric, goal))

    def trajectories(self, a: Address, b: Address) -> types.CallToolResult:
        return _result(self._tools.trajectories(a, b))
