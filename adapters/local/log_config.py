"""The config a text log printed: a YAML block between its stamped lines.

Trainers built on yacs (maskrcnn-benchmark, lufficc/SSD, FCOS, Detectron's descendants) log
`Running with config:` and then the whole config as YAML, each launch again; its lines carry no
time stamp, while every record of the log does. The last such block is the config the run's last
launch ran with (a log appended by several launches keeps each one's; the last is what the run
is now). Read from the content only: blocks of lines without the log's stamp that parse as a
YAML mapping of three or more settings.
"""

from __future__ import annotations

import re
from typing import Any

from rundiff_core import flatten

_STAMP = re.compile(r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T]|\d{2}/\d{2} )?\d{2}:\d{2}:\d{2}")
_YAML_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.\-]*:(?:\s.*)?|-\s.*|#.*)$")
MIN_SETTINGS = 3
MAX_BYTES = 8 << 20  # a log larger than this is not searched for its config (said by the caller)


def printed_config(path: str) -> tuple[dict[str, Any], str | None]:
    """(the last printed config block flattened with `.`, where it was: "lines A–B"), or ({},
    None) when the log prints none. Only a log whose lines carry a time stamp is
    searched: in it, an unstamped block after a stamped line is visibly something printed, not a
    record."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(MAX_BYTES).splitlines()
    except OSError:
        return {}, None
    if sum(1 for ln in lines[:200] if _STAMP.match(ln)) < 2:
        return {}, None
    blocks: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate([*lines, "00:00:00"]):  # a stamp closes the last block
        if _STAMP.match(line):
            if start is not None:
                blocks.append((start, i))
            start = None
        elif start is None and line.strip() and i > 0:  # after a stamped line: printed by it
            start = i
    for first, end in reversed(blocks):
        config = _mapping(lines[first:end])
        if config:
            return config, f"lines {first + 1}–{end}"
    return {}, None


def _mapping(block: list[str]) -> dict[str, Any]:
    """The block as a YAML mapping of MIN_SETTINGS settings or more, flattened; {} if it is not."""
    content = [ln for ln in block if ln.strip()]
    if len(content) < MIN_SETTINGS or not all(_YAML_LINE.match(ln) for ln in content):
        return {}
    from rundiff_core import load_yaml_config  # yaml loads for a printed block only

    try:
        data = load_yaml_config("\n".join(block), "printed config", [])
    except Exception:  # noqa: BLE001 - any YAML error: the block is not a config
        return {}
    if not isinstance(data, dict):
        return {}
    flat = {k: _tuple(v) for k, v in flatten(data, sep=".").items()}
    return flat if len(flat) >= MIN_SETTINGS else {}


def _tuple(value: Any) -> Any:
    """yacs prints a tuple by its repr (`TEST: ('val',)`): the tuple's values, as a list."""
    if isinstance(value, str) and value.startswith("(") and value.endswith(")"):
        from .shape import python_literal

        parsed = python_literal(value)
        if isinstance(parsed, tuple):
            return list(parsed)
    return value
