"""A run's config written as a line of text: an argparse `Namespace(…)` dump or a command line.

Scripts without a config file still say how they ran, in the first lines of their log:
`print(args)` writes `Namespace(lr=0.0002, opt='Adam', …)` (whole: every argument, defaults too),
a launcher echoes the command (`PYTHON_COMMAND: python train.py --model_class gcn --lr 0.01
--validate`: only what was typed). `log_head_config` reads either from the head of a text log,
as that run's config; the Namespace wins over a command line (it holds the defaults as well).
Two different ones in the head (a driver log running many tasks) are no run's config: none is
taken, and a note says so. `namespace_dumps` finds every dump in a text file, for a file that
holds several runs' configs (parsing.configjoin).
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from .configfiles import _namespace, _scalar

HEAD_BYTES = 64 << 10  # the head of a log where its config is printed, before training starts
MAX_LINE = 64 << 10  # a longer line is no config print

_NAMESPACE = re.compile(r"\bNamespace\(")
# a Python interpreter running a script or a module: `python3 train.py …`, `/opt/py/bin/python
# -u -m pkg.train …`; its own options (`-u`, `-W ignore`) come before the script
_COMMAND = re.compile(r"(?:^|[\s:=>$`'\"])(?:\S*/)?python(?:\d+(?:\.\d+)?)?"
                      r"(?P<opts>(?:\s+-[A-Za-z]+(?:\s+(?!-)\S+(?<!\.py))?)*?)"
                      r"\s+(?:-m\s+(?P<module>[\w.]+)|(?P<script>\S+\.py))(?P<args>(?:\s.*)?)$")
_OPTION = re.compile(r"^--(?P<key>[A-Za-z][\w.-]*)(?:=(?P<value>.*))?$")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def namespace_in(line: str) -> dict[str, Any] | None:
    """The fields of an argparse `Namespace(…)` printed on `line` (after any prefix: a logger's
    `… INFO: Arguments: `), or None. Values that are not literals stay the text written."""
    if len(line) > MAX_LINE:
        return None
    m = _NAMESPACE.search(line)
    end = line.rfind(")")
    if m is None or end < m.end():
        return None
    return _namespace(line[m.start():end + 1])


def command_in(line: str) -> tuple[str, dict[str, Any]] | None:
    """(the program, its options) of a Python command line on `line`, or None: `--key value`,
    `--key=value`, `--flag` (True), `--key a b` (a list); keys as argparse names them (`-` →
    `_`); values read as Python literals where they are one. None without a `--` option."""
    if len(line) > MAX_LINE or "python" not in line:
        return None
    m = _COMMAND.search(line.rstrip())
    if m is None:
        return None
    try:
        tokens = shlex.split(m.group("args"))
    except ValueError:  # an unclosed quote: not a command as written
        return None
    out: dict[str, Any] = {}
    key: str | None = None
    for tok in tokens:
        opt = _OPTION.match(tok)
        if opt is not None:
            key = opt.group("key").replace("-", "_")
            if opt.group("value") is not None:
                out[key] = _scalar(opt.group("value"))
                key = None
            else:
                out[key] = True  # a flag, until a value follows
            continue
        if tok.startswith("-") and not _NUMBER.match(tok):
            key = None  # a short option: its meaning is the script's
            continue
        if key is None:
            continue  # a positional argument
        value = _scalar(tok)
        if out[key] is True:
            out[key] = value
        elif isinstance(out[key], list):
            out[key].append(value)
        else:
            out[key] = [out[key], value]
    if not out:
        return None
    return m.group("script") or f"-m {m.group('module')}", out


def _head_lines(path: str) -> list[str]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(HEAD_BYTES)
    except OSError:
        return []
    if b"\0" in raw[:4096]:
        return []
    lines = raw.decode("utf-8", errors="replace").splitlines()
    return lines[:-1] if len(raw) == HEAD_BYTES else lines  # the last may be cut


def log_head_config(path: str) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(config, meta, notes) a text log's head gives its run: the fields of the first argparse
    `Namespace(…)` printed there, else the options of the Python command line echoed there
    (meta `command`: the line, `program`: the script). Nothing when two different ones are
    printed (several runs' configs, no one run's)."""
    name = os.path.basename(path)
    dumps: list[tuple[int, dict[str, Any]]] = []
    commands: list[tuple[int, str, dict[str, Any], str]] = []
    for i, line in enumerate(_head_lines(path), 1):
        if "Namespace(" in line and (got := namespace_in(line)) is not None:
            dumps.append((i, got))
        elif "python" in line and (cmd := command_in(line)) is not None:
            commands.append((i, cmd[0], cmd[1], line.strip()))
    if dumps:
        if any(d != dumps[0][1] for _, d in dumps[1:]):
            return {}, {}, [f"{name}: {len(dumps)} different argparse Namespace lines in its "
                            "head (several runs' configs?); none read as this run's config"]
        line_no, config = dumps[0]
        return config, {}, [f"{name}: line {line_no}, an argparse Namespace → config "
                            f"({len(config)} key(s))"]
    if commands:
        if any(c[2] != commands[0][2] for c in commands[1:]):
            return {}, {}, [f"{name}: {len(commands)} different command lines in its head "
                            "(a driver's log?); none read as this run's config"]
        line_no, program, config, text = commands[0]
        return config, {"command": text, "program": program}, [
            f"{name}: line {line_no}, the command line `{program} …` → config ({len(config)} "
            "option(s) as typed; defaults not shown)"]
    return {}, {}, []


__all__ = ["command_in", "log_head_config", "namespace_in"]
