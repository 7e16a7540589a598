"""A Python config file (mmengine/mmcv `dict(...)` style) read as TEXT: parsed with `ast`, its
literals read with `ast.literal_eval`, never executed, imported or evaluated. OpenMMLab writes a
run's config this way (`vis_data/config.py`, the work dir's `<config>.py`, a log header's
`config` string)."""

from __future__ import annotations

import ast
import os
from typing import Any

from .bounded import read_bounded

MAX_PY_BYTES = 8 << 20  # a config .py longer than this is not parsed
_UNREAD = object()


class _Reader:
    """The values of assignments, in order: a name assigned earlier is read as its value."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {}
        self.missing: list[str] = []
        self.as_text = 0

    def value(self, node: ast.AST, path: str) -> Any:
        try:
            return _plain(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and not node.args and all(kw.arg is not None for kw in node.keywords):
            return self._mapping(((kw.arg, kw.value) for kw in node.keywords), path)
        if isinstance(node, ast.Dict) and None not in node.keys:
            pairs = []
            for k, v in zip(node.keys, node.values, strict=True):
                try:
                    key = ast.literal_eval(k)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    self.missing.append(f"{path}[?]")
                    continue
                pairs.append((key if isinstance(key, str) else str(key), v))
            return self._mapping(pairs, path)
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.value(e, f"{path}[{i}]") for i, e in enumerate(node.elts)]
            return _UNREAD if any(x is _UNREAD for x in items) else items
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            self.as_text += 1
            return node.id  # an imported class or function (lazy-import configs): its name
        if isinstance(node, ast.Attribute):
            try:
                text = ast.unparse(node)
            except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
                return _UNREAD
            self.as_text += 1
            return text
        return _UNREAD

    def _mapping(self, pairs: Any, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            got = self.value(v, f"{path}.{k}")
            if got is _UNREAD:
                self.missing.append(f"{path}.{k}")
            else:
                out[k] = got
        return out


def _plain(v: Any) -> Any:
    """Tuples as lists and sets sorted, as a JSON or YAML config would hold them."""
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, set | frozenset):
        return sorted((_plain(x) for x in v), key=repr)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, bytes | complex):
        return repr(v)
    return v


def read_py_config(text: str, name: str) -> tuple[dict[str, Any], list[str]]:
    """A Python config (mmengine/mmcv `dict(...)` style) from its TEXT: top-level assignments
    whose right-hand side is a literal, a `dict(k=…)` call of literals, or a name assigned
    earlier. It is parsed with `ast` and read with `ast.literal_eval`: never executed, imported
    or evaluated. The notes say what was not read."""
    if len(text) > MAX_PY_BYTES:
        return {}, [f"{name}: larger than {MAX_PY_BYTES >> 20} MiB; config not read"]
    try:
        tree = ast.parse(text, filename=name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {}, [f"{name}: not valid Python ({type(exc).__name__}); config not read"]
    reader = _Reader()
    unread: list[str] = []
    statements: dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            targets, node = [t.id for t in stmt.targets], stmt.value  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            targets, node = [stmt.target.id], stmt.value
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        else:
            kind = {"Import": "import", "ImportFrom": "import", "With": "with block",
                    "FunctionDef": "def", "ClassDef": "class", "If": "if"}.get(
                        type(stmt).__name__, type(stmt).__name__)
            statements[kind] = statements.get(kind, 0) + 1
            continue
        got = reader.value(node, targets[0])
        if got is _UNREAD:
            unread.extend(targets)
            continue
        for t in targets:
            reader.env[t] = got
    config = {k: v for k, v in reader.env.items() if not k.startswith("__")}
    note = (f"{name}: {len(config)} top-level assignment(s) → config (read as text: parsed with "
            "`ast`, literals only; never executed)")
    skipped = []
    if unread:
        skipped.append(f"{len(unread)} assignment(s) not literals ({', '.join(unread[:6])}"
                       f"{', …' if len(unread) > 6 else ''})")
    if reader.missing:
        skipped.append(f"{len(reader.missing)} nested entr(y/ies) not literals "
                       f"({', '.join(reader.missing[:4])}{', …' if len(reader.missing) > 4 else ''})")
    if statements:
        skipped.append(", ".join(f"{n} {k} statement(s)" for k, n in sorted(statements.items())))
    if skipped:
        note += "; not read: " + "; ".join(skipped)
    if reader.as_text:
        note += f"; {reader.as_text} name(s) of imported objects kept as text"
    return config, [note]


def read_py_config_file(path: str) -> tuple[dict[str, Any], list[str]]:
    """`read_py_config` of a file, its size checked before it is read."""
    name = os.path.basename(path)
    raw, why = read_bounded(path, MAX_PY_BYTES)
    if raw is None:
        return {}, [f"{name}: {why}; config not read"]
    return read_py_config(raw.decode("utf-8", errors="replace"), name)


def config_differences(a: dict[str, Any], b: dict[str, Any], limit: int = 6) -> list[str]:
    """The dotted keys whose values differ between two configs (first `limit`)."""
    from .nested import flatten

    fa, fb = flatten(a), flatten(b)
    keys = sorted(k for k in set(fa) | set(fb) if fa.get(k, _UNREAD) != fb.get(k, _UNREAD))
    return keys[:limit] + ([f"… {len(keys) - limit} more"] if len(keys) > limit else [])
