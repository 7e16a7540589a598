"""Whether `local:` is only detecting a path: claims then read files' heads alone and leave what
needs a whole file read (a table's launches) to the listing that follows."""

from __future__ import annotations

from contextvars import ContextVar

DETECTING: ContextVar[bool] = ContextVar("rundiff_local_detecting", default=False)
