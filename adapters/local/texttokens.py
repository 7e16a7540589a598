"""Value tokens of a text-log line written in ways the field grammar (textlog) does not split:
each is rewritten into the `key: value` form that grammar reads, before the line is split.

- a key of several words glued to its value, `NER loss:31.08` (the zjy-ucas ChineseNER template's
  `iteration:1 step:100/1044, NER loss:33.2`), is the key `NER loss` as when a space follows the
  colon (`NER loss: 31.08` was already read so);
- a step's name glued to its count, `epoch1/10:` (`print(f"epoch{i}/{n}:")`), is `epoch: 1/10`
  — with the total only: `step1:` may as well be the first step of a recipe;
- a value with a rate unit and no name, after a dash rule or a bar (`Acc=0.43 ---  862.44
  ms/batch`, `| 5.1 it/s`), is named by its unit (`ms/batch: 862.44`);
- a copula between a key and its value (`Best m_IoU is: 21.119`, `best accuracy is 0.91`) is no
  part of the key.
"""

from __future__ import annotations

import re

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
#: a rate printed as a unit (`samples/sec`, `ms/batch`, `tok/s`): textgrammar reads one after a
#: value as its unit
RATE_UNIT = r"[A-Za-z]+/(?:s|sec|second|it|iter|step|batch|epoch)"
#: words before a glued `key:number` (each a key's word, nothing else on the way)
_GLUED_AFTER_WORDS = re.compile(rf"(?P<words>(?:(?<![\w:=.])[A-Za-z_][\w\-]*\s+)+)"
                                rf"(?P<key>[A-Za-z_][\w./\-]*):(?P<val>{_NUM}(?:/\d+)?%?)(?=[,;]?(?:\s|$))")
_STEP_NAMES = ("epoch", "step", "iter", "iteration", "batch")
_GLUED_COUNT = re.compile(r"(?<!\S)(?P<name>[A-Za-z]+)(?P<i>\d+)/(?P<n>\d+):?(?=\s|$)")
_UNIT_NAMED = re.compile(rf"(?:\s[-=~]{{2,}}|\|)\s*(?P<v>{_NUM})\s+"
                         rf"(?P<u>{RATE_UNIT})\s*(?=[|,;]|$)")
_COPULA = re.compile(r"(?<=[\w\])])\s+(?:is|are|was|were)\s*[:=]?\s+(?=[-+]?(?:\d|\.\d))")


def rewrite_tokens(line: str) -> str:
    """`line` with the value tokens above in the `key: value` form (unchanged when it holds none)."""
    if ":" in line:
        line = _GLUED_AFTER_WORDS.sub(_glued, line)
    if "/" in line:
        line = _GLUED_COUNT.sub(_count, line)
        if "-" in line or "=" in line or "~" in line or "|" in line:
            line = _UNIT_NAMED.sub(lambda m: f" | {m['u']}: {m['v']}", line)
    if " is" in line or " are" in line or " was" in line or " were" in line:
        line = _COPULA.sub(": ", line)
    return line


def _glued(m: re.Match[str]) -> str:
    return f"{m['words']}{m['key']}: {m['val']}"


def _count(m: re.Match[str]) -> str:
    if m["name"].lower() not in _STEP_NAMES:
        return m.group(0)
    return f"{m['name']}: {m['i']}/{m['n']}"
