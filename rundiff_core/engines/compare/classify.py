"""Phase 4 of a comparison: each metric's role (proxy, downstream, diagnostic), and the candidates.

Chosen by default, every name class but the diagnostics is a candidate; the student's phase
narrows them to the ones it shares with a baseline once it is known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...errors import UsageError
from ..arms import Arm
from ..metricnames import NameResolution
from ..roles import GroupDecision
from ..selection import natural_sorted
from .keys import KeyChoice
from .request import Request
from .result import Skipped


@dataclass
class Classified:
    """Each metric's role, the candidate metrics, and those left out so far (and why)."""

    decisions: dict[str, GroupDecision]
    metrics: list[str]  # the candidates: the asked names, or every name class but diagnostics
    not_compared: list[str]
    skipped: list[Skipped]
    none_left: UsageError  # raised when no candidate is left, here or once the student narrows them


def classify(req: Request, keys: KeyChoice, names: NameResolution) -> Classified:
    """Every name class classified by the rules; diagnostics leave the default candidates."""
    none_left = _no_metric(req.arms, keys.logged, names)
    decisions = {m: req.rules.classify(m, names.keys[m].values(),
                                       [r for r in req.runs if r.address in names.keys[m]])
                 for m in names.keys}
    out = Classified(decisions, [], [], [], none_left)
    if keys.asked is not None:
        out.metrics = list(names.metrics)
        return out
    for m in natural_sorted(names.keys):
        if decisions[m].group == "diagnostic":
            why = decisions[m].reason
            out.not_compared.append(f"{m} (diagnostic: {why}; name it with --metric)")
            out.skipped.append(Skipped(m, "diagnostic", why))
        else:
            out.metrics.append(m)
    if not out.metrics:
        raise none_left
    return out


def _no_metric(arms: Sequence[Arm], logged: Mapping[str, list[str]],
               names: NameResolution) -> UsageError:
    everything = {a.primary.name: sorted(logged[a.primary.address]) for a in arms}
    return UsageError(
        "the runs share no comparable metric",
        hint="name one with --metric, or map names with --map A=B; logged: "
        + "; ".join(f"{k}: {', '.join(v[:10])}" for k, v in everything.items())
        + ("; " + " | ".join(names.suggestions[:3]) if names.suggestions else ""),
    )
