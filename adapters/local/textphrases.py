"""Records a text log writes as a phrase, or under a bare word naming their kind.

Scripts often print a schedule's new value as a sentence rather than as a field:
`learning_rate changed to 0.004500` (a PyTorch script's `logging.info`), MXNet's
`lr_scheduler`: `Update[3120]: Change learning rate to 1.00000e-03`, Keras' ReduceLROnPlateau:
`Epoch 00012: ReduceLROnPlateau reducing learning rate to 0.0001.`. Read word by word, the verb
becomes part of the key (`learning_rate_changed_to`). A phrase of that form — the whole line, or
the whole text after a counter — is the field `<key words>: <value>`, so the key is what changed.
Only a line that is nothing but that phrase is read: prose that merely holds "reduced to" (a
generated answer, a sentence with more words after the number) is not.

A record may open with a bare word naming its kind before tab- or bar-separated fields
(`TRAIN<TAB>epoch: 0/200<TAB>batch: 4/11<TAB>loss: 2797.09<TAB>accuracy: 0.319`), as a label
would (`Train metrics: loss: …`): its measured keys are named under it (`TRAIN/loss`), its
counters keep their names (they place the record). The word must look like a kind — written in
capitals (`TRAIN`, `EVAL`) or a split's name (`train`, `valid`, `test`, …) — so a stray first word
of prose is no label.
"""

from __future__ import annotations

import re

_WORD = r"[A-Za-z_][\w.\-]*"
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PAST = (r"changed|set|decayed|reduced|decreased|increased|updated|adjusted|dropped|lowered|"
         r"raised|annealed|scaled")
_ACT = (r"change|changing|set|setting|decay|decaying|reduce|reducing|decrease|decreasing|"
        r"update|updating|adjust|adjusting|lower|lowering|anneal|annealing")
# `<key words> [was|is|has been] changed to <value>` / `[Name] Change <key words> to <value>`,
# alone after an optional counter field (`Update: 3120: `, `Epoch 00012: `)
_PHRASE = re.compile(
    rf"^(?P<head>(?:{_WORD}\s*:?\s+{_NUM}\s*[:,|]\s+)?)"
    rf"(?:(?:the\s+)?(?P<key_a>{_WORD}(?:\s+{_WORD}){{0,3}}?)\s+(?:(?:was|is|has\s+been)\s+)?"
    rf"(?:{_PAST})"
    rf"|(?-i:[A-Z][a-z]+[A-Z]\w*\s+)?(?:{_ACT})\s+(?:the\s+)?(?P<key_b>{_WORD}(?:\s+{_WORD}){{0,3}}?))"
    rf"\s+to:?\s+(?P<value>{_NUM})\.?\s*$", re.I)
_VERBS = re.compile(rf"^(?:{_PAST}|{_ACT}|was|is|has|been|to|the)$", re.I)


def phrase_field(line: str) -> str:
    """`line` with a phrase-valued record written as its field (`learning_rate changed to 0.0045`
    → `learning_rate: 0.0045`); any other line as it is."""
    if " to" not in line:
        return line
    m = _PHRASE.match(line.strip())
    if m is None:
        return line
    words = (m["key_a"] or m["key_b"]).split()
    if any(_VERBS.match(w) for w in words):
        return line  # `set to be changed to 3`: not one key
    return f"{m['head']}{' '.join(words)}: {m['value']}"


# A bare word opening a record before tab- or bar-separated fields (`TRAIN<TAB>epoch: 0 …`)
_KIND = re.compile(r"^\s*(?P<word>[A-Za-z]{2,20})\s*(?:\t+|\s\|\s*)(?P<rest>\S.*)$")
_SPLITS = {"train", "training", "valid", "validation", "val", "dev", "test", "testing", "eval",
           "evaluation", "evaluate"}


def kind_word(line: str, step_keys: tuple[str, ...]) -> tuple[str, str] | None:
    """(the kind word, the fields after it) of a record opened by a bare word naming its kind,
    or None. A step's name (`Epoch<TAB>…`) is a counter's header, no kind."""
    m = _KIND.match(line)
    if m is None:
        return None
    word = m["word"]
    if word.lower() in step_keys or not (word.isupper() or word.lower() in _SPLITS):
        return None
    return word, m["rest"]


__all__ = ["kind_word", "phrase_field"]
