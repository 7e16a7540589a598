"""The built-in plugin: rundiff's own commands and `--format` formats, through the front door.

Registered first from `DEFAULT_PLUGINS` and through the same hooks a third-party plugin uses
(`rundiff_register_reporters`, `rundiff_register_commands`), so `rundiff plugins --all` lists them
as built-in and no plugin can take their names. It cannot be disabled: without it rundiff has no
commands. Each command module's `add_parser(cli)` must stay cheap — engines and renderers are
imported inside the command's `run`, so `rundiff --help` imports no pandas or numpy.
"""

from __future__ import annotations

import importlib
from typing import Any

from .hookspecs import hookimpl
from .render.formats import REPORTING_COMMANDS, ReporterSpec

NAME = "builtins"

# Subcommands in `rundiff --help` order. An optional one whose module is absent is skipped.
COMMAND_MODULES: tuple[str, ...] = (
    "rundiff_core.commands.diff",
    "rundiff_core.commands.ls",
    "rundiff_core.commands.adapters",
    "rundiff_core.commands.detect",
    "rundiff_core.commands.plugins",
)
OPTIONAL_COMMAND_MODULES: tuple[str, ...] = (
    "rundiff_core.commands.compare",
    "rundiff_core.commands.trajectories",
    "rundiff_core.commands.rank",
    "rundiff_core.commands.ablate",
    "rundiff_core.commands.report",
    "rundiff_core.commands.watch",
    "rundiff_core.commands.export",
    "rundiff_core.commands.mcp",
)

# The --format formats the commands render themselves from their result objects (render=None).
FORMATS: tuple[ReporterSpec, ...] = (
    ReporterSpec("md", REPORTING_COMMANDS, None, "Markdown tables and prose (the default)"),
    ReporterSpec("json", REPORTING_COMMANDS, None,
                 "the command's stable JSON report (what plugin reporters receive)"),
    ReporterSpec("csv", ("compare",), None,
                 "one line per arm and per seed cell, with each cell's provenance"),
)


@hookimpl
def rundiff_register_reporters(register: Any) -> None:
    for spec in FORMATS:
        register(spec)


@hookimpl
def rundiff_register_commands(cli: Any) -> None:
    for name in COMMAND_MODULES + OPTIONAL_COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name and name in OPTIONAL_COMMAND_MODULES:
                continue
            raise
        module.add_parser(cli)
