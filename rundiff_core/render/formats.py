"""Every command's `--format`: its choices and plugin reporters' output (`rundiff_register_reporters`).

rundiff's own formats (md, json, csv) are registered by the built-in plugin (`rundiff_core.builtins`)
through the same hook as a plugin's; the command renders those itself from its result object. A
plugin reporter turns the report a command builds for `--format json` — the same dict, before it
is printed — into text: a Slack message, a LaTeX table, a dashboard payload. `--format` offers
every format registered for the command, so `rundiff diff A B --format slack` works once the
plugin is installed, and a broken reporter cannot touch the built-in formats, whose names no
plugin may take. The registry itself is rundiff_core/reporters.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import PluginError, RundiffError
from ..reporters import REPORTING_COMMANDS, RESERVED_NAMES, ReporterRegistry, ReporterSpec

# the registry's names, where plugins and rundiff_core's exports have always found them
__all__ = ["REPORTING_COMMANDS", "RESERVED_NAMES", "ReporterRegistry", "ReporterSpec", "emit",
           "format_choices"]


def format_choices(command: str, builtin: tuple[str, ...] = ()) -> tuple[str, ...]:
    """`--format` choices of a command: every format registered for it, built-in ones first.

    `builtin` names the formats the command renders itself, in the order to list them; each must
    also be registered by the built-in plugin (a test checks that the two agree).
    """
    from ..plugins import get_plugins

    return tuple(dict.fromkeys((*builtin, *get_plugins().reporters.names(command))))


def emit(command: str, fmt: str, report: Callable[[], Any]) -> bool:
    """Print `fmt` through its plugin reporter and return True; False for a built-in format.

    `report` builds what the command prints for --format json (called only when needed)."""
    from ..plugins import get_plugins
    from . import _clean

    spec = get_plugins().reporters.get(command, fmt)
    if spec is None or spec.render is None:
        return False
    try:
        text = spec.render(_clean(report()))
    except RundiffError:
        raise
    except Exception as exc:
        raise PluginError(
            f"reporter '{fmt}' of plugin '{spec.plugin}' failed: {type(exc).__name__}: {exc}",
            hint=f"report it to the plugin's maintainers; --format json gives the same report, "
            f"or skip the plugin with RUNDIFF_DISABLE_PLUGINS={spec.plugin}",
        ) from exc
    if not isinstance(text, str):
        raise PluginError(f"reporter '{fmt}' of plugin '{spec.plugin}' returned "
                          f"{type(text).__name__}, not text",
                          hint="render must return a str")
    print(text, end="" if text.endswith("\n") else "\n")
    return True
