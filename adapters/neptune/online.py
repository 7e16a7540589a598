"""The online address form (`neptune:WORKSPACE/PROJECT[/RUN_ID]`): a clear error, never a guess.

rundiff reads Neptune's local formats itself. Querying a hosted deployment would go through the
optional `neptune-query` package and an API token; that path is not implemented, so this module
only says precisely what is missing and how to get the data onto disk instead. The token's value
is never read into a message — only whether `NEPTUNE_API_TOKEN` is set.
"""

from __future__ import annotations

import importlib.util
import os
import re

from rundiff_core import InputError, MissingDependencyError, RundiffError, UsageError

ONLINE_FORM = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(?:/[A-Za-z0-9][\w.-]*)?$")
LOCAL_HINT = (
    "read local files instead: an export made with neptune-exporter (neptune:PATH/TO/EXPORT/PROJECT), "
    "a .neptune folder (neptune:PATH/.neptune) or a run_operations.sqlite3"
)


def is_online_form(locator: str) -> bool:
    """WORKSPACE/PROJECT or WORKSPACE/PROJECT/RUN_ID that is not an existing path."""
    return bool(ONLINE_FORM.match(locator)) and not os.path.exists(locator)


def client_installed() -> bool:
    """Whether the optional `neptune-query` package is importable (checked without importing)."""
    try:
        return importlib.util.find_spec("neptune_query") is not None
    except (ImportError, ValueError):
        return False


def online_error(locator: str, environ: dict[str, str] | None = None) -> RundiffError:
    """The typed error for an online address: what is needed, in the order a user fixes it."""
    env = os.environ if environ is None else environ
    what = f"neptune:{locator} names a project on Neptune's hosted service"
    if not client_installed():
        return MissingDependencyError(
            f"{what}; querying it needs the neptune-query package and an API token (NEPTUNE_API_TOKEN)",
            hint=f"pip install neptune-query and set NEPTUNE_API_TOKEN, where a deployment still exists; or {LOCAL_HINT}",
        )
    if not env.get("NEPTUNE_API_TOKEN"):
        return InputError(
            f"{what}; querying it needs an API token and NEPTUNE_API_TOKEN is not set",
            hint=f"export NEPTUNE_API_TOKEN=… (never pass it on the command line); or {LOCAL_HINT}",
        )
    return UsageError(
        f"{what}; rundiff does not query Neptune online (neptune-query and a token are present)",
        hint=f"export the project with neptune-exporter and {LOCAL_HINT.removeprefix('read local files instead: ')}",
    )
