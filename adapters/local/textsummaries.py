"""Records without the step that write a key the step's records write too: a summary kind, kept
apart; and a line holding a counter alone: a heading, no series.

A training script prints `step: 100, lr: …, loss: …` every hundred steps and, at each epoch's
end, `loss: 2.586…, training time: 0h 17m 24s` (RA-MATQA's `log.txt`); or `epoch 1, step 100,
loss: 19.4, f1: 15.97` and, after each epoch's evaluation, `acc 94.4012 - f1 54.6012`
(ChineseNER's `log.txt`). The summary line has no step; read into the step's series, the epoch's
mean loss (or the evaluation's f1) would alternate with the per-step values. Such a kind comes
once per value of a coarser counter (`epoch`: on the step's records, or a heading line `epoch: 3`
above it); its shared keys are named by that counter (`epoch/loss`), the step's keep the plain
name. A summary kind that comes twice under one counter value, or with no counter, is read as
before.
"""

from __future__ import annotations

from typing import Protocol


class _Record(Protocol):
    pairs: list[tuple[str, float]]


def is_heading(keys: tuple[str, ...] | list[str], step_key: str | None,
               step_keys: tuple[str, ...]) -> bool:
    """A line holding one counter other than the step and nothing else (`epoch: 3` above the
    epoch's `step: …` lines): it says where the records under it belong, it measures nothing."""
    return len(keys) == 1 and keys[0] != step_key and keys[0].lower() in step_keys


def summary_kind_keys(records: list[tuple[float, _Record]], step_key: str | None,
                      step_keys: tuple[str, ...]) -> tuple[dict[int, str], set[str], str | None]:
    """({index in `records`: the counter naming that record's shared keys}, the shared keys, a
    note), or ({}, set(), None). `records` are (step, record) pairs in file order."""
    if step_key is None:
        return {}, set(), None
    stepped: set[str] = set()
    for _, rec in records:
        keys = [k for k, _ in rec.pairs]
        if step_key in keys:
            stepped |= {k for k in keys if k.lower() not in step_keys}
    current: dict[str, float] = {}  # the coarser counters' values as of each record
    changes: dict[str, int] = {}  # how often each changed: the coarsest changes least
    kinds: dict[tuple[str, ...], list[tuple[int, dict[str, float]]]] = {}
    for i, (_, rec) in enumerate(records):
        keys = tuple(k for k, _ in rec.pairs)
        if step_key in keys or is_heading(keys, step_key, step_keys):
            for k, v in rec.pairs:
                if k != step_key and k.lower() in step_keys:
                    changes[k] = changes.get(k, 0) + (current.get(k) != v)
                    current[k] = v
            continue
        if set(keys) & stepped:
            kinds.setdefault(keys, []).append((i, dict(current)))
    named: dict[int, str] = {}
    shared: set[str] = set()
    for sig, seen in kinds.items():
        if len(seen) < 2:
            continue  # a one-off line (a banner) is the reader's to drop
        once = [c for c in seen[0][1] if all(c in s for _, s in seen)
                and len({s[c] for _, s in seen}) == len(seen)]
        if not once:
            continue
        counter = min(once, key=lambda c: changes[c])
        named.update((i, counter) for i, _ in seen)
        shared |= set(sig) & stepped
    if not named:
        return {}, set(), None
    said = (f"{', '.join(sorted(shared))} also written by {len(named)} record(s) without the "
            f"{step_key}, one per {'/'.join(sorted(set(named.values())))}: read as "
            f"<counter>/<key>, the {step_key}'s records under the plain name")
    return named, shared, said


__all__ = ["is_heading", "summary_kind_keys"]
