"""The `rundiff` command line: a thin argparse shell over the commands plugins register.

Every subcommand — rundiff's own (`rundiff_core.builtins`, one module each under `commands/`) and
a plugin's — is added through `rundiff_register_commands`; global backend options come from the
adapters that declare them (`AdapterSpec.options`). Building the parser imports no engine, so
`rundiff --help` stays instant. rundiff's own subcommands are listed by name and one-line help and
built when used (`CommandHost.add_lazy`): `rundiff ls …` imports and builds `ls` alone.

Exit codes: 0 success, 1 a check the user asked for failed (e.g. `watch --once` raised alerts),
2 usage or input error (a RundiffError: one line plus a hint; `--debug` shows the traceback),
3 internal error (any other exception: one line; `--debug` shows the traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import PluginError, RundiffError


class _Parser(argparse.ArgumentParser):
    # A lazily built subcommand's arguments: added the first time the parser parses or formats.
    _build: Callable[[argparse.ArgumentParser], None] | None = None

    def error(self, message: str) -> None:  # exit 2 with a one-line message, like every user error
        self.print_usage(sys.stderr)
        sys.stderr.write(f"rundiff: error: {message}\n")
        raise SystemExit(2)

    def materialize(self) -> _Parser:
        """Add this subcommand's arguments now if they were deferred; returns self."""
        build, self._build = self._build, None
        if build is not None:
            build(self)
        return self

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.materialize()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.materialize()
        return super().format_usage()

    def format_help(self) -> str:
        self.materialize()
        return super().format_help()

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse's formatters take the width from `shutil.get_terminal_size()`, and importing
        # shutil (with bz2, lzma and zlib) costs ~3 ms of every start; the same width, computed
        # here, for argparse's own formatter classes (a plugin's may take other arguments)
        if self.formatter_class.__init__ is argparse.HelpFormatter.__init__:
            return self.formatter_class(prog=self.prog, width=_terminal_columns() - 2)
        return super()._get_formatter()


def _terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, without importing shutil: COLUMNS when it is a
    positive integer, else the width of the terminal behind sys.__stdout__, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
    return size.columns or 80


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """The whole `rundiff` command line. With `lazy`, rundiff's own subcommands get their
    arguments when one is used (what `main` does); without it every parser is complete."""
    from .plugins import get_plugins

    plugins = get_plugins()
    parser = _Parser(prog="rundiff", description="Compare ML runs wherever they were logged.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    for spec, opt in plugins.registry.options():
        parser.add_argument(opt.flag, metavar=opt.metavar, dest=_option_dest(opt.flag),
                            help=f"{opt.help} (sets {opt.env}; {spec.name} adapter)".lstrip())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                action=_Subcommands)
    plugins.add_commands(CommandHost(sub, plugins))
    if not lazy:
        for name in list(sub.choices):
            child = sub.parser(name)
            if isinstance(child, _Parser):
                child.materialize()
    return parser


class _Subcommands(argparse._SubParsersAction):
    """rundiff's subcommands: argparse's, plus commands listed now (name and help, as argparse
    lists any) whose parser is created the first time one is parsed — of the 14 parsers a start
    would create, `rundiff --help` creates one and `rundiff ls …` two."""

    def add_pending(self, name: str, help: str, create: Callable[[], argparse.ArgumentParser],
                    plugin: str) -> None:
        """`add_parser(name, help=help)` with the parser created by `create()` when used."""
        if name in self._name_parser_map:
            raise argparse.ArgumentError(self, f"conflicting subparser: {name}")
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        self._name_parser_map[name] = _Pending(create, plugin)

    def parser(self, name: str) -> argparse.ArgumentParser:
        """The parser of command `name`, created now if it was pending."""
        got = self._name_parser_map[name]
        if isinstance(got, _Pending):
            got = self._name_parser_map[name] = got.create()
        return got

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if values and values[0] in self._name_parser_map:
            self.parser(values[0])
        super().__call__(parser, namespace, values, option_string)


class _Pending:
    """A listed command's parser-to-be: what `CommandHost` asks of a taken name before then."""

    __slots__ = ("create", "plugin")

    def __init__(self, create: Callable[[], argparse.ArgumentParser], plugin: str) -> None:
        self.create, self.plugin = create, plugin

    def get_default(self, dest: str) -> Any:
        return self.plugin if dest == "_plugin" else None


def _option_dest(flag: str) -> str:
    """Namespace key of an adapter option, apart from every subcommand's own arguments."""
    return "_adapter_option_" + flag.lstrip("-").replace("-", "_")


def apply_adapter_options(args: argparse.Namespace) -> None:
    """Set the environment variable behind each adapter option given on the command line."""
    from .plugins import get_plugins

    for _spec, opt in get_plugins().registry.options():
        value = getattr(args, _option_dest(opt.flag), None)
        if value is not None:
            os.environ[opt.env] = value


class CommandHost:
    """What `rundiff_register_commands(cli)` receives: adds a plugin's subcommands, refusing a
    name that is taken, and records them for `rundiff plugins`."""

    def __init__(self, sub: argparse._SubParsersAction, plugins: Any, plugin: str = "") -> None:
        self._sub, self._plugins, self.plugin = sub, plugins, plugin

    def for_plugin(self, plugin: str) -> CommandHost:
        return CommandHost(self._sub, self._plugins, plugin)

    def add_command(self, name: str, *, help: str = "", description: str | None = None,
                    **kwargs: object) -> argparse.ArgumentParser:
        """A new subcommand's parser: add arguments, then `set_defaults(func=run)`."""
        return self.add_parser(name, help=help or None, description=description or help, **kwargs)

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """`add_command` with argparse's own `add_parser` keywords, passed through unchanged
        (the built-in command modules call it as they would call a subparsers action)."""
        self._check_free(name)
        parser = self._sub.add_parser(name, **kwargs)
        self._adopt(parser, name)
        return parser

    def add_lazy(self, name: str, *, help: str, build: Callable[[Any], None]) -> None:
        """A subcommand listed now (name and one-line help) and built when it is used:
        `build(host)` then calls `host.add_parser(name, **kwargs)` and adds the arguments, as a
        command module's `add_parser` does. Names are checked and recorded now, as for
        `add_parser`; `help` here is the one `rundiff --help` shows (the module's is ignored).
        Its parser, too, is created only when the command is used."""
        sub = self._sub
        if not isinstance(sub, _Subcommands):  # a subparsers action of another kind: build now
            parser = self.add_parser(name, help=help)
            if isinstance(parser, _Parser):
                parser._build = lambda p: build(_Into(p))
            else:
                build(_Into(parser))
            return
        self._check_free(name)

        def create() -> argparse.ArgumentParser:  # what `add_parser(name, help=help)` creates
            parser = sub._parser_class(prog=f"{sub._prog_prefix} {name}")
            parser.set_defaults(func=_no_handler(self.plugin, name), _plugin=self.plugin)
            if isinstance(parser, _Parser):
                parser._build = lambda p: build(_Into(p))
            else:
                build(_Into(parser))
            return parser

        sub.add_pending(name, help, create, self.plugin)
        self._record(name)

    def _check_free(self, name: str) -> None:
        """A plugin's command name must be a word and not taken; PluginError otherwise."""
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]{1,31}", name):
            raise PluginError(f"plugin '{self.plugin}' added the command name {name!r}",
                              hint="use a word such as 'slack-notify'")
        owner = self._owner(name)
        if owner is not None:
            raise PluginError(f"plugin '{self.plugin}' added the command '{name}', which "
                              f"{owner} already has", hint="rename the plugin's command")

    def _adopt(self, parser: argparse.ArgumentParser, name: str) -> None:
        parser.set_defaults(func=_no_handler(self.plugin, name), _plugin=self.plugin)
        self._record(name)

    def _record(self, name: str) -> None:
        info = getattr(self._plugins, "info", {}).get(self.plugin)
        if info is not None and name not in info.commands:
            info.commands.append(name)

    def _owner(self, name: str) -> str | None:
        taken = self._sub.choices.get(name)
        if taken is None:
            return None
        plugin = taken.get_default("_plugin")
        info = getattr(self._plugins, "info", {}).get(plugin)
        return "rundiff" if not plugin or info is not None and info.builtin else f"plugin '{plugin}'"


class _Into:
    """The host a lazily built subcommand's `add_parser(host)` receives: it fills the parser
    already listed instead of adding one."""

    _SETTABLE = ("description", "epilog", "formatter_class", "usage")

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self._parser = parser

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.pop("help", None)
        unknown = sorted(set(kwargs) - set(self._SETTABLE))
        if unknown:
            raise TypeError(f"a lazily built command cannot set {', '.join(unknown)}")
        for key, value in kwargs.items():
            setattr(self._parser, key, value)
        return self._parser

    def add_command(self, name: str, *, help: str = "", description: str | None = None,
                    **kwargs: object) -> argparse.ArgumentParser:
        return self.add_parser(name, description=description or help, **kwargs)


def _no_handler(plugin: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise PluginError(f"plugin '{plugin}' added the command '{name}' without a handler",
                          hint="the plugin must call parser.set_defaults(func=run)")
    return run


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # known before parsing: a failure while building the parser obeys it
    try:
        parser = build_parser(lazy=True)
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help()
            return 2
        apply_adapter_options(args)
        if args.__dict__.get("_opens_no_source"):  # `adapters`, `plugins`: nothing to reuse
            return int(args.func(args) or 0)
        from .opening import reuse_loads

        with reuse_loads():
            return int(args.func(args) or 0)
    except RundiffError as exc:
        if debug:
            _print_traceback()
        sys.stderr.write(f"rundiff: error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {exc.hint}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("rundiff: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line to report, the traceback only when asked for
        if debug:
            _print_traceback()
        message = " ".join(str(exc).split())
        what = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        sys.stderr.write(f"rundiff: internal error: {what} — rerun with --debug and report it\n")
        return 3


def _print_traceback() -> None:
    import traceback  # only for --debug: imports linecache and tokenize

    traceback.print_exc()


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
