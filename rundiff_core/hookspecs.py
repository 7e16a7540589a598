"""The hooks rundiff asks plugins. Hook docstrings are the reference (docs/plugins/hooks.md).

Hooks decide *who*; the `RunSource` objects an adapter registers do the work. Call every hook with
keyword arguments only; parameters are added, never renamed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "rundiff"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def rundiff_register_adapters(register: Callable[[Any], None]) -> None:
    """Register this plugin's adapters.

    Called once when the plugin manager loads. Call `register(AdapterSpec(...))` once per adapter;
    `register` validates on the spot and raises `PluginError` for a scheme another adapter owns.
    Backend settings the command line should offer are `AdapterSpec.options` (`OptionSpec`: a
    global flag that sets an environment variable). Return value is ignored. Must not import a
    tracker SDK (name the source class by dotted path).
    """


@hookspec
def rundiff_register_layouts(register: Callable[[Any], None]) -> None:
    """Register folder layouts the `local:` adapter reads (rundiff_core.layouts).

    Called once when the plugin manager loads, after `rundiff_register_adapters`. Call
    `register(LayoutSpec(name, module, summary, priority, one_run))` once per layout; `module` is
    the dotted name of a module with `claim(folder)`, `meta(run)`, `history(run)` (and optionally
    `claim_file(path)`, `DIRECTIONS`), imported only when a path is read. A name another plugin
    registered raises `PluginError` and the whole plugin is dropped. rundiff's own layouts come
    through this hook from the `local` plugin. Return value is ignored.
    """


@hookspec
def rundiff_sniff_path(path: str) -> Any:
    """Say whether this plugin's adapter recognises a bare path.

    Called for every bare path the user gives without a scheme. Return a `Claim(adapter, reason)`,
    a list of them, or None when the path is not yours. Read a few KiB at most, never write, never
    import a tracker SDK (nor pandas, numpy, pyarrow). All claims are collected and ranked by
    their `priority` when set, else by the adapters' priorities.
    """


@hookspec(firstresult=True)
def rundiff_parse_address(raw: str) -> Any:
    """Claim an address that has no registered scheme (a URL, say).

    Called only when the raw address's scheme is not registered. Return an `Address` whose
    `scheme` is a registered one, or None to pass. The first non-None answer wins.
    """


@hookspec
def rundiff_detect_project(cwd: str, environ: dict[str, str]) -> Any:
    """Say whether the current project logs to this plugin's tracker (no address given).

    Called by project-level detection (`rundiff detect` with no path, commands with no address).
    Return a `ProjectClaim(adapter, reason, address)` or list of them, or None. Look only at `cwd`
    and `environ`; no network. Claims rank like `rundiff_sniff_path`'s (a claim's `priority`, else
    its adapter's).
    """


@hookspec
def rundiff_secret_patterns() -> Any:
    """Extra key-name regexes whose values must be redacted in every output.

    Return a list of regex strings (matched case-insensitively against flattened key names), or
    None. Called once per process.
    """


@hookspec
def rundiff_register_reporters(register: Callable[[Any], None]) -> None:
    """Register output formats for commands' `--format`.

    Called once when the plugin manager loads, after `rundiff_register_adapters`. Call
    `register(ReporterSpec(name, commands, render, summary))` (from `rundiff_core.render.formats`)
    once per format; `render(report)` receives the dict the command prints for `--format json` and
    returns text. rundiff's own formats come through this hook too, from the `builtins` plugin
    (with `render=None`: the command renders them). `register` raises `PluginError` for a built-in
    or taken name or an unknown command, and the whole plugin is dropped. Return value is ignored.
    """


@hookspec
def rundiff_register_commands(cli: Any) -> None:
    """Add subcommands to `rundiff`.

    Called each time the command line is built, for built-in plugins first (rundiff's own
    commands come through this hook from the `builtins` plugin). Call `cli.add_command(name,
    help=...)`, which returns an `argparse.ArgumentParser`: add arguments to it and
    `set_defaults(func=run)`, where `run(args) -> int` is the exit code. A name that a built-in or
    another plugin's command has raises `PluginError`; rundiff reports it and skips that command.
    Import heavy modules inside `run`, not here: building the command line must stay instant.
    """
