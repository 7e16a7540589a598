"""A console log whose only numbers are in a tqdm progress bar's postfix.

`pbar.set_postfix(loss=…)` prints the values at the end of the bar, inside its brackets:
`Epoch:0:   0%|          | 1/459 [00:46<3:51:21, 30.31s/it, Cascade=0, CurrLoss=8.31e+8]`
(tqdm's `r_bar`, `| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]`). A
captured bar is redrawn in place with carriage returns, and tqdm redraws it whenever its counter
moves, with the postfix unchanged: that redraw is no new value. So each change of the postfix is
one point, x = the count of changes (1-based: `update`), every numeric `key=value` of it a series.

Tried only when none of textlog's grammars reads the file (a script that prints its epoch
summaries beside the bar is read from those lines, as before).
"""

from __future__ import annotations

import re

from .lazy import pd
from .sniff import points_frame
from .textframeworks import log_lines
from .textgrammar import ANSI

#: The right part of a tqdm bar, `[| ]n/total [elapsed<remaining, rate, k=v, …]` at the line's end
#: (`n` alone when the total is unknown); `post` is the postfix after the rate
_BAR = re.compile(r"(?:\d{1,3}%\|[^|]*\|\s*)?\d+(?:\.\d+)?[kMG]?(?:/\d+(?:\.\d+)?[kMG]?)?\s*"
                  r"\[[\d:]+(?:<[\d:?]+)?,\s*[^,\]]*?(?:it|s)/(?:s|it)\s*(?P<post>(?:,[^\]]*)?)\]\s*$")
_ITEM = re.compile(r"^\s*(?P<key>[A-Za-z_][\w./\-]*)=(?P<val>\S+)\s*$")

X_NAME = "update"


def postfix(line: str) -> tuple[str, list[tuple[str, float]]] | None:
    """(the postfix as written, its numeric `key=value` items) of a tqdm bar, or None when the
    line is no bar or its postfix holds no number."""
    if "\x1b" in line:  # a coloured value (`Loss=\x1b[33m0.042\x1b[0m`)
        line = ANSI.sub("", line)
    m = _BAR.search(line)
    if m is None or not m["post"].strip(", "):
        return None
    text = m["post"].strip(", ").strip()
    pairs: list[tuple[str, float]] = []
    for item in text.split(","):
        it = _ITEM.match(item)
        if it is None:
            return None  # not tqdm's `k=v, k=v`: some other bracket
        v = _number(it["val"])
        if v is not None:
            pairs.append((it["key"], v))
    return (text, pairs) if pairs else None


def sniff_bars(lines: list[str]) -> tuple[int, int] | None:
    """(bar frames with a postfix, content lines) when tqdm postfixes that change at least once
    are in `lines` (textlog asks only where none of its grammars reads the file); else None."""
    if not any("it/s" in ln or "s/it" in ln for ln in lines):
        return None
    frames = 0
    seen: set[str] = set()
    for ln in lines:
        got = postfix(ln)
        if got is not None:
            frames += 1
            seen.add(got[0])
    if len(seen) < 2:
        return None
    return frames, len([ln for ln in lines if ln.strip()])


def read_bars(path: str, name: str, describe: str, lines: list[str] | None = None
              ) -> tuple[pd.DataFrame, list[str]]:
    """Each change of a tqdm bar's postfix as one point (x = the count of changes)."""
    steps: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    total = frames = updates = 0
    last: str | None = None
    text_items: set[str] = set()
    for line in log_lines(path, lines):
        total += 1
        got = postfix(line)
        if got is None:
            continue
        frames += 1
        text, pairs = got
        text_items |= {i.split("=", 1)[0].strip() for i in text.split(",")} - {k for k, _ in pairs}
        if text == last:
            continue  # the bar redrawn as its counter moved: the same values
        last = text
        updates += 1
        for k, v in pairs:
            steps.append(float(updates))
            keys.append(k)
            values.append(v)
    notes = [f"{name} read as a {describe}; {total} lines (split at \\r too), {frames} bar frames, "
             f"{updates} postfix updates (a redraw with the same postfix is no new value)"]
    if text_items:
        notes.append(f"{name}: postfix items without a number not read: {', '.join(sorted(text_items))}")
    return points_frame(steps, keys, values, None, notes, name)


def _number(text: str) -> float | None:
    """A postfix value as tqdm prints a number (`8.31e+8`, `0.0420806`, `nan`); None for text."""
    try:
        return float(text.rstrip(","))
    except ValueError:
        return None

