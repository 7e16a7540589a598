"""A framework's console log that also holds another grammar's records: both are kept.

A framework grammar (textgrammar.FRAMEWORKS: the HF Trainer's `{'loss': …}` dicts, fairseq's progress
rows, torchtune's tqdm descriptions) reads only its own lines. The script around the framework
often logs more beside them, in a grammar the generic text reader knows — P-tuning v2's
`12/06/2022 14:01:36 - INFO - training.trainer_base - best_eval_f1 = 0.907` after every
evaluation. Those lines are read as the generic reader would read a file of them alone (its own
step, its own rules for banners and printed blocks), and kept as a second family of records:
never merged into the framework's series. A key both families write is kept apart, the other
family's named `log/<key>`, said in a note.

A second family is kept only on evidence: the generic grammar finds records in the lines the
framework did not read, they are a real part of the file (textshare.MIN_RECORD_SHARE, as for any
text log), and at least one key has two points (a lone `DPO examples: train=1282` is a banner).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .lazy import pd
from .textshare import MIN_RECORD_SHARE

#: The prefix of a key the other family shares with the framework's records
OTHER_PREFIX = "log/"


def other_family(path: str, name: str, lines: list[str], is_framework: Callable[[str], bool],
                 framework_keys: set[str], sniff_text: Callable[..., Any],
                 read_text_log: Callable[..., tuple[pd.DataFrame, list[str]]]
                 ) -> tuple[pd.DataFrame | None, list[str]]:
    """(the records of `lines` that are not the framework's, read by the generic text grammar, or
    None; notes). `framework_keys`: the keys the framework's records gave; `sniff_text` and
    `read_text_log`: textlog's (passed in: textlog calls this module)."""
    rest = [ln for ln in lines if ln.strip() and not is_framework(ln)]
    if not rest:
        return None, []
    grammar = sniff_text(path, rest)
    if grammar is None or grammar.framework in ("hf-dict", "fairseq", "torchtune-tqdm"):
        return None, []
    records, content = grammar.share
    if not records or records < MIN_RECORD_SHARE * max(content, 1):
        return None, []
    frame, notes = read_text_log(path, grammar, rest)
    if not len(frame) or frame["key"].value_counts().max() < 2:
        return None, []
    keys = [str(k) for k in frame["key"].unique()]
    shared = sorted(k for k in keys if k in framework_keys)
    if shared:
        frame = frame.assign(key=frame["key"].astype(str).map(
            lambda k: f"{OTHER_PREFIX}{k}" if k in framework_keys else k))
    said = [f"{name}: {len(keys)} key(s) from {records} line(s) of another grammar beside the "
            f"framework's records ({grammar.describe()}), kept as their own series: "
            + ", ".join(keys[:6]) + (", …" if len(keys) > 6 else "")]
    if shared:
        said.append(f"{name}: {', '.join(shared[:4])} written by both: the other grammar's kept "
                    f"apart as {OTHER_PREFIX}<key>")
    return frame, said + [n.replace(f"{name} read as", f"{name}: the other lines read as", 1)
                          for n in notes]
