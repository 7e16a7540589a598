"""The built-in plugin: rundiff's own commands and `--format` formats, through the front door.

Registered first from `DEFAULT_PLUGINS` and through the same hooks a third-party plugin uses
(`rundiff_register_reporters`, `rundiff_register_commands`), so `rundiff plugins --all` lists them
as built-in and no plugin can take their names. It cannot be disabled: without it rundiff has no
commands. Each command module's `add_parser(cli)` must stay cheap — engines and renderers are
imported inside the command's `run`, so `rundiff --help` imports no pandas or numpy.

The commands are listed from `COMMANDS` (name, module, one-line help) without importing their
modules; a command's module is imported, and its `add_parser` called, when that command is used or
its `--help` asked for (`CommandHost.add_lazy`). So `rundiff --help` builds one parser, and
`rundiff ls …` two. tests/core/test_startup_imports.py checks each help here against its module's.
`lazy_commands` builds that hook for any plugin of rundiff's own: the `rundiff` package adds `mcp`
with it (`rundiff.agents`), so the core never imports the package above it.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from .hookspecs import hookimpl
from .reporters import REPORTING_COMMANDS, ReporterSpec

NAME = "builtins"

# Subcommands in `rundiff --help` order: (name, module, the help `rundiff --help` shows).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("diff", "rundiff_core.commands.diff",
     "decision-grade diff of two runs (config, headline, seeds, verdict)"),
    ("ls", "rundiff_core.commands.ls", "list runs with their keys, point counts and step ranges"),
    ("adapters", "rundiff_core.commands.adapters", "list adapters in detection order"),
    ("detect", "rundiff_core.commands.detect",
     "show which adapter claims a path (or the project) and why"),
    ("plugins", "rundiff_core.commands.plugins",
     "list installed plugins (JSON); --all includes built-ins"),
    ("compare", "rundiff_core.commands.compare",
     "same-step comparison of runs from any backends (proxy vs downstream)"),
    ("trajectories", "rundiff_core.commands.trajectories",
     "task-by-task behavioural diff of agent runs (trajectory exports, Inspect, τ-bench, "
     "SWE-bench, mini-swe-agent, SWE-agent, OpenHands, lm-eval)"),
    ("rank", "rundiff_core.commands.rank",
     "rank runs or seed groups on headline metrics at a common step"),
    ("ablate", "rundiff_core.commands.ablate",
     "ablation table: changed keys and same-step deltas vs a baseline"),
    ("report", "rundiff_core.commands.report",
     "experiment report: overview, results at one step, findings, next experiments"),
    ("watch", "rundiff_core.commands.watch",
     "monitor live runs: freshness, progress, anomalies, completion"),
    ("export", "rundiff_core.commands.export",
     "export runs from any trackers into one Hive-partitioned Parquet dataset"),
)
# The modules of COMMANDS that are always present; an optional one whose module is absent is
# skipped (found without importing it).
COMMAND_MODULES: tuple[str, ...] = (
    "rundiff_core.commands.diff",
    "rundiff_core.commands.ls",
    "rundiff_core.commands.adapters",
    "rundiff_core.commands.detect",
    "rundiff_core.commands.plugins",
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


def lazy_commands(commands: tuple[tuple[str, str, str], ...], *,
                  always_present: tuple[str, ...] = ()) -> Any:
    """A `rundiff_register_commands` hook that lists each (name, module, help) of `commands` now
    and builds it from `module`'s `add_parser(cli)` when used, so listing imports no module. A
    command whose module is absent is skipped (looked up without importing it, except the
    `always_present` modules)."""

    @hookimpl
    def rundiff_register_commands(cli: Any) -> None:
        for name, module, help in commands:
            if module not in always_present and importlib.util.find_spec(module) is None:
                continue
            add_lazy = getattr(cli, "add_lazy", None)
            if add_lazy is None:  # a host without lazy commands: build the parser now
                _builder(module)(cli)
            else:
                add_lazy(name, help=help, build=_builder(module))

    return rundiff_register_commands


rundiff_register_commands = lazy_commands(COMMANDS, always_present=COMMAND_MODULES)


def _builder(module: str) -> Any:
    def build(cli: Any) -> None:
        importlib.import_module(module).add_parser(cli)

    return build
