"""Output formats that plugins add to commands (`rundiff_register_reporters`).

A plugin reporter turns the report a command builds for `--format json` — the same dict, before it
is printed — into text: a Slack message, a LaTeX table, a dashboard payload. Commands list the
formats registered for them next to their own in `--format`, so `rundiff diff A B --format slack`
works once the plugin is installed, and a broken reporter cannot touch the built-in formats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import PluginError, RundiffError

# Commands whose --format accepts plugin reporters (each prints a JSON report with --format json).
REPORTING_COMMANDS = ("diff", "compare", "rank", "ablate", "report", "ls", "watch", "export",
                      "trajectories")
BUILTIN_FORMATS = frozenset({"md", "json", "csv", "html", "png", "text"})
_NAME = re.compile(r"^[a-z][a-z0-9_-]{1,31}$")


@dataclass(frozen=True)
class ReporterSpec:
    """One output format a plugin adds.

    `render(report)` gets what the command prints for `--format json` — a dict, or for `ls` a list
    of run rows — and returns the text to print. `commands` names the commands that offer it.
    """

    name: str
    commands: tuple[str, ...]
    render: Callable[[Any], str]
    summary: str = ""
    plugin: str = field(default="", compare=False)


class ReporterRegistry:
    """Plugin reporters by (command, format name)."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], ReporterSpec] = {}

    def register(self, spec: ReporterSpec) -> None:
        """Validate and add, or raise PluginError naming what is wrong and the fix."""
        if not isinstance(spec, ReporterSpec):
            raise PluginError(f"plugin '{getattr(spec, 'plugin', '?')}' registered {spec!r}, "
                              "not a ReporterSpec",
                              hint="call register(ReporterSpec(name=..., commands=(...), "
                              "render=callable))")
        who = f"plugin '{spec.plugin}'"
        if not isinstance(spec.name, str) or not _NAME.match(spec.name):
            raise PluginError(f"{who} registered the reporter name {spec.name!r}",
                              hint="use 2-32 lower-case letters, digits, '-' or '_'")
        if spec.name in BUILTIN_FORMATS:
            raise PluginError(f"{who} registered the reporter '{spec.name}', a built-in format",
                              hint="pick another name")
        if isinstance(spec.commands, str) or not spec.commands:
            raise PluginError(f"{who} registered reporter '{spec.name}' for {spec.commands!r}",
                              hint="give commands as a non-empty tuple, e.g. ('diff',)")
        unknown = [c for c in spec.commands if c not in REPORTING_COMMANDS]
        if unknown:
            raise PluginError(f"{who} registered reporter '{spec.name}' for unknown command(s) "
                              + ", ".join(map(repr, unknown)),
                              hint="use one of " + ", ".join(REPORTING_COMMANDS))
        if not callable(spec.render):
            raise PluginError(f"{who} registered reporter '{spec.name}' without a callable render",
                              hint="render=function(report: dict) -> str")
        for command in spec.commands:
            taken = self._by_key.get((command, spec.name))
            if taken is not None:
                raise PluginError(f"{who} registered reporter '{spec.name}' for '{command}', which "
                                  f"plugin '{taken.plugin}' already provides",
                                  hint="rename one of them")
        for command in spec.commands:
            self._by_key[(command, spec.name)] = spec

    def unregister_plugin(self, plugin: str) -> None:
        self._by_key = {k: s for k, s in self._by_key.items() if s.plugin != plugin}

    def names(self, command: str) -> list[str]:
        return sorted(name for (cmd, name) in self._by_key if cmd == command)

    def get(self, command: str, name: str) -> ReporterSpec | None:
        return self._by_key.get((command, name))

    def __iter__(self) -> Iterator[ReporterSpec]:
        return iter(dict.fromkeys(self._by_key.values()))


def format_choices(command: str, builtin: tuple[str, ...]) -> tuple[str, ...]:
    """`--format` choices of a command: its own formats, then the plugins' for it."""
    from ..plugins import get_plugins

    return builtin + tuple(n for n in get_plugins().reporters.names(command) if n not in builtin)


def emit(command: str, fmt: str, report: Callable[[], Any]) -> bool:
    """Print `fmt` through its plugin reporter and return True; False for a built-in format.

    `report` builds what the command prints for --format json (called only when needed)."""
    from ..plugins import get_plugins
    from . import _clean

    spec = get_plugins().reporters.get(command, fmt)
    if spec is None:
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
