"""Reading a whole file only when it is small enough: one rule for every reader that loads a
document whole (a state file, a Markdown page, a config, a results file), and one wording for why
it did not — a hostile or mistaken path never costs unbounded memory."""

from __future__ import annotations

import os


def size_text(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit:,} bytes"


def read_bounded(path: str, limit: int) -> tuple[bytes | None, str]:
    """(the file's bytes, "") when it holds at most `limit` bytes; else (None, why): `larger than
    N MiB` or `unreadable (<the OS's reason>)`. The size is checked before a byte is read, and
    again by what is read (a file still growing)."""
    try:
        if os.path.getsize(path) > limit:
            return None, f"larger than {size_text(limit)}"
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or type(exc).__name__})"
    if len(raw) > limit:
        return None, f"larger than {size_text(limit)}"
    return raw, ""


__all__ = ["read_bounded", "size_text"]
