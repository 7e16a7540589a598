"""The output-format registry behind every command's `--format` (`rundiff_register_reporters`).

The registry is data the plugin manager fills (rundiff_core/plugins.py) and the commands read
through render/formats.py; it lives apart from both so neither imports the other to reach it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import PluginError

# Commands whose --format accepts plugin reporters (each prints a JSON report with --format json).
REPORTING_COMMANDS = ("diff", "compare", "rank", "ablate", "report", "ls", "watch", "export",
                      "trajectories")
# Names kept for rundiff's file outputs (compare --html/--png, report -o FILE.html) and plain text,
# so that no plugin's --format reads like one of them. The --format formats rundiff renders itself
# are reserved by being registered by the built-in plugin.
RESERVED_NAMES = frozenset({"html", "png", "text"})
_NAME = re.compile(r"^[a-z][a-z0-9_-]{1,31}$")


@dataclass(frozen=True)
class ReporterSpec:
    """One output format a plugin adds.

    `render(report)` gets what the command prints for `--format json` — a dict, or for `ls` a list
    of run rows — and returns the text to print. `commands` names the commands that offer it.
    `render=None` means the command renders the format itself: only a built-in plugin may do that.
    `plugin` and `builtin` are filled in by rundiff when the spec is registered.
    """

    name: str
    commands: tuple[str, ...]
    render: Callable[[Any], str] | None
    summary: str = ""
    plugin: str = field(default="", compare=False)
    builtin: bool = field(default=False, compare=False)


class ReporterRegistry:
    """Output formats by (command, format name): the built-in plugin's first, then plugins'."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], ReporterSpec] = {}

    def builtin_names(self) -> frozenset[str]:
        """Every name a built-in plugin registered, for any command: no plugin may take one."""
        return frozenset(s.name for s in self._by_key.values() if s.builtin)

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
        if not spec.builtin and (spec.name in RESERVED_NAMES or spec.name in self.builtin_names()):
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
        if not (callable(spec.render) or spec.builtin and spec.render is None):
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
        """Formats for `command`: built-in ones in registration order, then plugins' by name."""
        mine = [s for (cmd, _name), s in self._by_key.items() if cmd == command]
        return ([s.name for s in mine if s.builtin]
                + sorted(s.name for s in mine if not s.builtin))

    def get(self, command: str, name: str) -> ReporterSpec | None:
        return self._by_key.get((command, name))

    def __iter__(self) -> Iterator[ReporterSpec]:
        return iter(dict.fromkeys(self._by_key.values()))
