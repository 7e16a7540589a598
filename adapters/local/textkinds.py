"""Two kinds of record in one text log that write the same key: never one series.

A training script often prints a line every few batches and a summary line at the end of each
epoch, both with `Train Loss` (purduedb's shortest-distance survey: `Epoch: 1/12000, Batch: 78
(1024 samples), Train Loss: …` and `Epoch: 1/12000, Time elapsed/…, Train Loss: …, Val MRE: …`).
Read into one series, the per-batch values and the epoch's average alternate at one step. The
kinds are told apart by what the lines carry: the finer kind carries a second counter beside
the step (`Batch`, `iter`, …) and comes several times per step; the other comes without it. The
other kind keeps the plain name (what the epoch summarised); the finer kind's shared keys are
named by its counter (`Batch/Train_Loss`), said in a note. A log whose kinds share no key, or
whose records all carry the same counters, is read as before.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol


class _Record(Protocol):
    pairs: list[tuple[str, float]]


def finer_kind_keys(records: list[tuple[float, _Record]], step_key: str,
                    step_keys: tuple[str, ...]) -> tuple[dict[int, str], set[str], str | None]:
    """({index in `records`: the counter naming that record's shared keys}, the shared keys, a
    note): the records of the finer kind and the keys they share with the coarser kind, or
    ({}, set(), None). `records` are (step, record) pairs in file order."""
    counters: dict[int, str] = {}
    plain: list[int] = []
    for i, (_, rec) in enumerate(records):
        keys = [k for k, _ in rec.pairs]
        if step_key not in keys:
            continue  # a record without the step is placed by its neighbours, not a kind
        counter = next((k for k in keys if k != step_key and k.lower() in step_keys), None)
        if counter is None:
            plain.append(i)
        else:
            counters[i] = counter
    if not counters or not plain:
        return {}, set(), None
    per_step = Counter(records[i][0] for i in counters)
    if max(per_step.values()) < 2 or len({records[i][0] for i in plain}) < 2:
        return {}, set(), None  # one finer record per step: a second counter, not a finer kind
    coarse_keys = {k for i in plain for k, _ in records[i][1].pairs} - {step_key}
    shared = {k for i in counters for k, _ in records[i][1].pairs} & coarse_keys
    shared -= set(counters.values())
    if not shared:
        return {}, set(), None
    names = sorted(set(counters.values()))
    said = (f"{', '.join(sorted(shared))} written by two kinds of record: {len(counters)} with a "
            f"{'/'.join(names)} counter (several per {step_key}) and {len(plain)} without; the "
            f"first read as {names[0]}/<key>, the second under the plain name")
    return counters, shared, said


__all__ = ["finer_kind_keys"]
