"""Evaluation blocks in a text log: a heading naming the split, then its result lines.

A script that evaluates on several splits in turn often prints the same result lines for each,
under a heading naming the split: the zjy-ucas ChineseNER template (and its many forks) writes
`evaluate:dev`, then conlleval's report, then `evaluate:test` and the same report again. Read as
one series each, the dev and test values would alternate. A heading of that form — the line is
only an evaluating word and a split's name (`evaluate:dev`, `Evaluating on test set`, `eval
valid:`) or the split's name alone with a colon (`Validation:`) — names the phase of the records
printed under it, as a decorated banner does (textlog's `_BANNER`); the section ends at the next
record carrying the step (a training line), so training records after an evaluation keep their
names.

conlleval's per-type lines end with the count of phrases found, unnamed
(`LOC: precision:  58.65%; recall:  72.32%; FB1:  64.77  2406`: conlleval.pl's
`%17s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d`): that count is no field and is
dropped, so the line reads as `LOC/precision`, `LOC/recall`, `LOC/FB1`.
"""

from __future__ import annotations

import re

_SPLIT = r"train|training|dev|devel|valid|validation|val|test|testing|eval|evaluation"
_HEADING = re.compile(
    rf"^\s*(?:(?:eval|evaluate|evaluating|evaluation|validate|validating|testing|test)"
    rf"(?:\s*:\s*|\s+on\s+(?:the\s+)?|\s+))?(?P<split>{_SPLIT})"
    rf"(?:\s+(?:set|split|data|dataset))?\s*:?\s*$", re.I)
_CONLL_TYPE = re.compile(r"^(?P<fields>\s*[\w\-]+: precision:\s*[\d.]+%; recall:\s*[\d.]+%; "
                         r"FB1:\s*[\d.]+)\s+\d+\s*$")


def eval_heading(line: str) -> str | None:
    """The split an evaluation heading names (`evaluate:dev` → `dev`), or None. A bare split's
    name is a heading only with its colon (`Validation:`): `test` alone may be any word."""
    m = _HEADING.match(line)
    if m is None:
        return None
    bare = m.group(0).strip().lower().rstrip(":").strip()
    if bare == m["split"].lower() and not line.rstrip().endswith(":"):
        return None
    return m["split"]


def conll_fields(line: str) -> str:
    """A conlleval per-type line without its trailing phrase count; any other line as it is."""
    if "FB1:" not in line:
        return line
    m = _CONLL_TYPE.match(line)
    return m["fields"] if m else line


__all__ = ["conll_fields", "eval_heading"]
