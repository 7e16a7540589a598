"""Metric-name normalisation across trackers: `train/loss` ≈ `train_loss` ≈ `loss/train`.

Trackers and logging habits spell the same metric differently. Two names are *equivalent* when
they have the same words once case, separators (`/ . _ - :` and spaces), camelCase and word order
are ignored (tier "spelling"), or when they only differ by common synonyms such as `val` /
`validation` or `acc` / `accuracy` (tier "synonym"). Equivalent names are merged automatically only
when that is unambiguous — every run logs at most one name of the class — and every merge is
reported. Anything looser (`loss` vs `train/loss`) is only ever *suggested*; the user applies it
with `--map A=B`, which renames key A to B in every run that logs A.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import MetricNotFoundError, UsageError

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[/._\-:\s]+")
SYNONYMS: dict[str, str] = {
    "validation": "val",
    "valid": "val",
    "accuracy": "acc",
    "perplexity": "ppl",
    "evaluation": "eval",
    "training": "train",
    "testing": "test",
    "learningrate": "lr",
    "gradnorm": "gradnorm",
    "top1acc": "top1",
    "average": "avg",  # RL logs: AverageEpRet ≈ average-episode-return
    "episode": "ep",
    "return": "ret",
    "reward": "rew",
}
TIERS = ("exact", "spelling", "synonym", "--map")


def tokens(name: str) -> tuple[str, ...]:
    """Lower-case words of a metric name; a number glued back to its word (`top_1` → `top1`)."""
    words = [w for w in _SPLIT.split(_CAMEL.sub(" ", name).lower()) if w]
    merged: list[str] = []
    for w in words:
        if w.isdigit() and merged and merged[-1].isalpha():
            merged[-1] += w
        else:
            merged.append(w)
    return tuple(merged)


def spelling_key(name: str) -> tuple[str, ...]:
    """Equal for names that differ only in case, separators and word order."""
    return tuple(sorted(tokens(name)))


def synonym_key(name: str) -> tuple[str, ...]:
    """`spelling_key` after mapping common synonyms (and `learning_rate` → `lr`)."""
    words = list(tokens(name))
    joined: list[str] = []
    i = 0
    while i < len(words):  # two-word synonyms first: learning rate, grad norm
        pair = words[i] + words[i + 1] if i + 1 < len(words) else None
        if pair in SYNONYMS:
            joined.append(SYNONYMS[pair])
            i += 2
            continue
        joined.append(SYNONYMS.get(words[i], words[i]))
        i += 1
    return tuple(sorted(joined))


@dataclass(frozen=True)
class Mapped:
    """One run's logged key used under another name, and why."""

    run: str
    key: str
    metric: str
    tier: str  # "spelling" | "synonym" | "--map"

    def describe(self) -> str:
        why = {"spelling": "same words", "synonym": "synonyms", "--map": "--map"}[self.tier]
        return f"{self.key} → {self.metric} in {self.run} ({why})"


@dataclass
class NameResolution:
    """Which logged key each run uses for each compared metric, and what was merged or suggested."""

    metrics: list[str]  # wanted names, or the names every required run logs, in a stable order
    keys: dict[str, dict[str, str]]  # metric → run label → logged key (every name class found)
    mapped: list[Mapped] = field(default_factory=list)  # for every class in `keys`
    suggestions: list[str] = field(default_factory=list)
    partial: dict[str, list[str]] = field(default_factory=dict)  # metric → required runs lacking it


def parse_maps(items: Sequence[str]) -> dict[str, str]:
    """`--map A=B` items as {A: B}; a malformed item is a usage error."""
    out: dict[str, str] = {}
    for item in items:
        a, sep, b = item.partition("=")
        if not sep or not a.strip() or not b.strip():
            raise UsageError(f"--map {item!r} is not A=B", hint="e.g. --map train_loss=train/loss")
        out[a.strip()] = b.strip()
    return out


def _apply_maps(
    keys_by_run: Mapping[str, Sequence[str]], maps: Mapping[str, str]
) -> tuple[dict[str, dict[str, str]], list[Mapped]]:
    """name → logged key per run after `--map`; two keys landing on one name is an error."""
    named: dict[str, dict[str, str]] = {}
    mapped: list[Mapped] = []
    for run, keys in keys_by_run.items():
        table: dict[str, str] = {}
        for key in keys:
            name = maps.get(key, key)
            if name in table and table[name] != key:
                raise UsageError(
                    f"{run} logs both {table[name]!r} and {key!r}; --map would merge two series",
                    hint="map only one of them, or compare them as separate metrics",
                )
            table[name] = key
            if name != key:
                mapped.append(Mapped(run, key, name, "--map"))
        named[run] = table
    return named, mapped


def _match(name: str, table: Mapping[str, str]) -> tuple[str | None, str, list[str]]:
    """(logged key, tier, ambiguous candidates) for `name` in one run's name→key table."""
    if name in table:
        return table[name], "exact", []
    for tier, keyfn in (("spelling", spelling_key), ("synonym", synonym_key)):
        want = keyfn(name)
        hits = sorted(k for k in table if keyfn(k) == want)
        if len(hits) == 1:
            return table[hits[0]], tier, []
        if len(hits) > 1:
            return None, tier, hits
    return None, "", []


def _near(name: str, names: Sequence[str]) -> list[str]:
    """Names that may mean the same (one's words contain the other's, or close spelling)."""
    mine = set(tokens(name))
    out = []
    for other in names:
        theirs = set(tokens(other))
        if other == name or not theirs or not mine:
            continue
        if mine < theirs or theirs < mine:
            out.append(other)
    out += [n for n in difflib.get_close_matches(name, list(names), n=3, cutoff=0.8)
            if n not in out and n != name]
    return out[:3]


def resolve_names(
    keys_by_run: Mapping[str, Sequence[str]],
    wanted: Sequence[str] | None = None,
    maps: Mapping[str, str] | None = None,
    *,
    prefer: str | None = None,
    required: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> NameResolution:
    """Decide which key each run uses per metric.

    `keys_by_run` maps a run label (its full name) to its logged keys. With `wanted`, each wanted
    name is looked up in every run (exact, then equivalent when unambiguous); a name no run logs is
    a MetricNotFoundError with suggestions. Without it, the metrics are the equivalence classes
    logged by every run in `required` (default: every run); names are taken from the `prefer` run.
    `labels` names the runs in suggestions (their names, not their addresses).
    """
    named, mapped = _apply_maps(keys_by_run, maps or {})
    runs = list(named)
    required_runs = list(required) if required is not None else runs
    suggestions: list[str] = []
    keys: dict[str, dict[str, str]] = {}
    partial: dict[str, list[str]] = {}
    if wanted is not None:
        for metric in dict.fromkeys(wanted):
            per_run: dict[str, str] = {}
            for run in runs:
                key, tier, ambiguous = _match(metric, named[run])
                if key is not None:
                    per_run[run] = key
                    if tier in ("spelling", "synonym"):
                        mapped.append(Mapped(run, key, metric, tier))
                elif ambiguous:
                    suggestions.append(
                        f"{run} logs {', '.join(ambiguous)}, which all match {metric}: "
                        f"pick one with --map {ambiguous[0]}={metric}"
                    )
            if not per_run:
                everything = sorted({k for t in named.values() for k in t})
                near = _near(metric, everything)
                hint = (f"did you mean {', '.join(near)}? " if near else "") + (
                    "logged: " + ", ".join(everything[:20]) + ("…" if len(everything) > 20 else "")
                )
                raise MetricNotFoundError(f"metric '{metric}' is not logged by any run", hint=hint)
            keys[metric] = per_run
            lacking = [r for r in runs if r not in per_run]
            if lacking:
                partial[metric] = lacking
        return NameResolution(list(keys), keys, mapped, suggestions, partial)

    # No metric named: cluster every run's names by synonym key, merge where unambiguous.
    classes: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for run in runs:
        for name in named[run]:
            classes.setdefault(synonym_key(name), {}).setdefault(run, []).append(name)
    for members in classes.values():
        if all(len(v) == 1 for v in members.values()):
            groups = [{run: names[0] for run, names in members.items()}]
        else:  # some run logs two names of the class: merge nothing, suggest
            distinct = sorted({n for names in members.values() for n in names})
            for run, names in members.items():
                if len(names) > 1:
                    suggestions.append(
                        f"{run} logs {', '.join(sorted(names))} (equivalent names): not merged; "
                        f"use --map to choose, e.g. --map {sorted(names)[1]}={sorted(names)[0]}"
                    )
            groups = [{run: n for run, names in members.items() if n in names} for n in distinct]
        for group in groups:
            names = list(group.values())
            if prefer is not None and prefer in group:
                metric = group[prefer]
            else:
                metric = min(set(names), key=lambda n: (-names.count(n), n))
            for run, name in group.items():
                if name != metric:
                    tier = "spelling" if spelling_key(name) == spelling_key(metric) else "synonym"
                    mapped.append(Mapped(run, named[run][name], metric, tier))
            keys[metric] = {run: named[run][name] for run, name in group.items()}
    shared = [m for m in sorted(keys) if all(r in keys[m] for r in required_runs)]
    for metric in sorted(keys):
        if metric in shared:
            continue
        holders = [r for r in runs if r in keys[metric]]
        lacking = [r for r in required_runs if r not in keys[metric]]
        for run in lacking:
            used = {name for m in shared for name, key in named[run].items() if keys[m].get(run) == key}
            near = _near(metric, [n for n in named[run] if n not in used])
            if near:
                suggestions.append(
                    f"{metric} (logged by {(labels or {}).get(holders[0], holders[0])}) may be "
                    f"{near[0]} in {(labels or {}).get(run, run)}: "
                    f"--map {near[0]}={metric}"
                )
    partial = {m: [r for r in required_runs if r not in keys[m]] for m in sorted(keys)
               if m not in shared}
    return NameResolution(shared, keys, mapped, list(dict.fromkeys(suggestions)), partial)
