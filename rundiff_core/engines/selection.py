"""Which metrics a report shows: natural order, `--metric` globs, families and headline metrics.

Real runs log hundreds of keys (`val/ngram_1 … val/ngram_128`); a report that prints each one
hides the few a reader needs. Every engine still computes every metric (JSON holds every cell);
this module only decides what the text shows by default:

- **Natural order**: `ngram_2` before `ngram_10` (digit runs compare as numbers).
- **Globs**: `--metric 'val/*'` expands against the keys the runs logged.
- **Families**: keys that differ only in a number (`val/ngram_<n>`, `Eval/<n>/episodic_return`) or
  in one inner path segment (`test/*/acc`) form one family when at least `FAMILY_MIN` share the
  pattern; a family is shown as one summary row.
- **Headline metrics**: every metric outside a family when a section has at most `HEADLINE_CAP`
  of them; otherwise the main loss / accuracy / reward / return / score ones, at most
  `HEADLINE_CAP`, ordered by `MAIN_WORDS` then naturally.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Sequence

FAMILY_MIN = 3
HEADLINE_CAP = 8
# Words that name a section's main metrics, in the order they are preferred.
MAIN_WORDS = ("loss", "acc", "accuracy", "reward", "rew", "return", "ret", "score", "f1",
              "perplexity", "ppl", "error", "success", "pass", "win", "bleu", "rouge", "auc", "map",
              "iou")
_DIGITS = re.compile(r"\d+")
_GLOB = re.compile(r"[*?\[]")


def natural_key(name: str) -> tuple:
    """Sort key where digit runs compare as numbers: `ngram_2` < `ngram_10`."""
    parts = _DIGITS.split(name.lower())
    nums = _DIGITS.findall(name)
    out: list[object] = []
    for i, text in enumerate(parts):
        out.append((0, text))
        if i < len(nums):
            out.append((1, int(nums[i])))
    return tuple(out)


def natural_sorted(names: Iterable[str]) -> list[str]:
    return sorted(names, key=natural_key)


def is_glob(pattern: str) -> bool:
    return _GLOB.search(pattern) is not None


def expand(patterns: Sequence[str], logged: Iterable[str]) -> tuple[list[str], list[str]]:
    """Globs replaced by the logged keys they match (natural order); plain names kept as given.

    Returns (names, globs that matched nothing)."""
    keys = natural_sorted(set(logged))
    out: list[str] = []
    unmatched: list[str] = []
    for p in patterns:
        if not is_glob(p):
            hits = [p]
        else:
            hits = [k for k in keys if fnmatch.fnmatchcase(k.lower(), p.lower())]
            if not hits:
                unmatched.append(p)
        out += [h for h in hits if h not in out]
    return out, unmatched


def _candidates(name: str) -> list[str]:
    """Family patterns a name could belong to: numbers as `<n>`, or one inner segment as `*`."""
    out = []
    if _DIGITS.search(name):
        out.append(_DIGITS.sub("<n>", name))
    segs = name.split("/")
    for i in range(1, len(segs) - 1):
        out.append("/".join([*segs[:i], "*", *segs[i + 1:]]))
    return out


def families(names: Iterable[str], min_size: int = FAMILY_MIN) -> dict[str, list[str]]:
    """Pattern → members (natural order) for every family of at least `min_size` names.

    Each name joins at most one family: the largest pattern it fits (numbers before segments)."""
    names = list(dict.fromkeys(names))
    counts = Counter(p for n in names for p in set(_candidates(n)))
    out: dict[str, list[str]] = {}
    for n in names:
        cands = [p for p in _candidates(n) if counts[p] >= min_size]
        if cands:
            best = max(cands, key=lambda p: (counts[p], p.endswith("<n>") or "<n>" in p))
            out.setdefault(best, []).append(n)
    # A pattern may end up below the minimum once its names chose larger families.
    return {p: natural_sorted(m) for p, m in sorted(out.items(), key=lambda kv: natural_key(kv[0]))
            if len(m) >= min_size}


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z][a-z])")  # `EpRet`, not `mAP`


def _main_rank(name: str) -> int | None:
    """Its main word's place in MAIN_WORDS; words split at separators and at camelCase humps
    (Spinning Up's `AverageEpRet` is a return, `LossPi` a loss)."""
    words = re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower())
    last = words[-1] if words else ""
    for i, w in enumerate(MAIN_WORDS):
        if w in words:
            # The name's own last word counts most (`val/loss` over `loss_scale/val`).
            return i if last == w else i + len(MAIN_WORDS)
    return None


def main_rank(name: str) -> int:
    """How main a metric is (lower first; names with no main word last)."""
    rank = _main_rank(name)
    return len(MAIN_WORDS) * 2 if rank is None else rank


def headline(names: Sequence[str], declared: Iterable[str] = (), cap: int = HEADLINE_CAP) -> list[str]:
    """The metrics a section shows as rows: all when they fit, else declared + main ones.

    `names` are the section's metrics outside any family; the result keeps natural order."""
    names = list(names)
    declared = [n for n in declared if n in names]
    if len(names) <= cap:
        return natural_sorted(names)
    ranked = sorted((n for n in names if n not in declared and _main_rank(n) is not None),
                    key=lambda n: (_main_rank(n), natural_key(n)))
    chosen = declared + ranked[: max(cap - len(declared), 0)]
    return natural_sorted(chosen)


def main_metric(names: Iterable[str]) -> str | None:
    """The one metric a two-run diff leads with: `loss`, else the training loss, else the best
    ranked main metric (`MAIN_WORDS`), natural order breaking ties; None when none is main."""
    names = list(names)
    if "loss" in names:
        return "loss"
    ranked = [n for n in names if _main_rank(n) is not None]
    if not ranked:
        return None

    def key(n: str) -> tuple:
        low = n.lower()
        return (_main_rank(n), not low.startswith(("train", "training")), low.count("/"),
                natural_key(n))

    return min(ranked, key=key)
