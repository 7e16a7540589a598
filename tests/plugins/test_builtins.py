"""Built-ins through the front door: rundiff's own commands and formats come from the `builtins`
plugin through the hooks a third party uses; adapter options and claim priorities are data."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

from rundiff_core.cli import build_parser, main
from rundiff_core.demo import write_journal_run
from rundiff_core.detect import detect_project, sniff_path
from rundiff_core.errors import AmbiguousSourceError
from rundiff_core.hookspecs import hookimpl
from rundiff_core.plugins import DEFAULT_PLUGINS, ESSENTIAL_PLUGINS, Plugins, set_plugins
from rundiff_core.registry import AdapterSpec, Claim, OptionSpec, ProjectClaim
from rundiff_core.render.formats import ReporterSpec
from rundiff_core.testing import registered_plugin


def _subcommands(parser) -> dict:
    return parser._subparsers._group_actions[0].choices


def _format_choices(sub) -> tuple[str, ...] | None:
    for action in sub._actions:
        if "--format" in action.option_strings:
            return tuple(action.choices)
    return None


def _journal(tmp_path, name: str = "run") -> str:
    return write_journal_run(str(tmp_path / name), config={"lr": 0.1},
                             rows=[{"step": s, "loss": 1 / (s + 1)} for s in range(10)],
                             final={"status": "finished"})


# -- commands and formats -------------------------------------------------------------------------
def test_every_builtin_command_and_format_comes_from_the_builtins_plugin(isolated_plugins, capsys):
    assert ESSENTIAL_PLUGINS[0] == DEFAULT_PLUGINS[0] == "rundiff_core.builtins"
    commands = _subcommands(build_parser())
    owners = {name: sub.get_default("_plugin") for name, sub in commands.items()}
    assert {"diff", "compare", "rank", "ls", "detect", "adapters", "plugins"} <= set(owners)
    assert main(["plugins", "--all"]) == 0
    row = next(p for p in json.loads(capsys.readouterr().out)["plugins"] if p["name"] == "builtins")
    assert row["builtin"] and row["module"] == "rundiff_core.builtins" and row["package"] == "rundiff"
    assert row["commands"] == [n for n, owner in owners.items() if owner == "builtins"]
    # no built-in command bypasses the hook: `mcp` and `serve` come from the rundiff package's
    # own plugin
    assert set(row["commands"]) == set(owners) - {"mcp", "serve"}
    assert owners["mcp"] == owners["serve"] == "agents"
    assert row["reporters"] == ["md", "json", "csv"]
    assert set(row["hooks"]) == {"rundiff_register_commands", "rundiff_register_reporters"}


def test_mcp_comes_from_the_rundiff_package_through_the_command_hook(isolated_plugins, capsys):
    """The core never imports `rundiff`: the package adds `mcp` and `serve` as a plugin of its
    own, listed after the core's commands (where `rundiff --help` always showed `mcp`)."""
    assert "rundiff.agents" in DEFAULT_PLUGINS
    assert list(_subcommands(build_parser()))[-2:] == ["mcp", "serve"]
    assert main(["plugins", "--all"]) == 0
    row = next(p for p in json.loads(capsys.readouterr().out)["plugins"] if p["name"] == "agents")
    assert row["builtin"] and row["module"] == "rundiff.agents" and row["package"] == "rundiff"
    assert row["commands"] == ["mcp", "serve"] and row["hooks"] == ["rundiff_register_commands"]
    assert main(["plugins"]) == 0  # third-party plugins only: not there
    assert "agents" not in {p["name"] for p in json.loads(capsys.readouterr().out)["plugins"]}


def test_each_commands_format_choices_are_the_registered_formats(isolated_plugins):
    """A command's own `--format` formats are exactly what the builtins plugin registered for it."""
    reporters = isolated_plugins.reporters
    offered = 0
    for name, sub in _subcommands(build_parser()).items():
        choices = _format_choices(sub)
        if choices is None or reporters.get(name, "md") is None:
            continue  # adapters, detect: --format without plugin reporters
        offered += 1
        builtin = [n for n in reporters.names(name) if reporters.get(name, n).builtin]
        assert list(choices) == builtin, name
    assert offered == 9


def test_a_plugin_format_lists_after_the_builtin_ones(isolated_plugins):
    class Slack:
        @hookimpl
        def rundiff_register_reporters(self, register):
            register(ReporterSpec("slack", ("compare",), render=str))

    with registered_plugin(Slack(), "slack", isolated_plugins):
        compare = _subcommands(build_parser())["compare"]
        assert _format_choices(compare) == ("md", "json", "csv", "slack")
        assert isolated_plugins.reporters.get("compare", "slack").builtin is False


@pytest.mark.parametrize("spec, message", [
    (ReporterSpec("csv", ("rank",), render=str), "a built-in format"),  # csv is compare's only
    (ReporterSpec("md", ("export",), render=str), "a built-in format"),
    (ReporterSpec("html", ("diff",), render=str), "a built-in format"),  # compare --html's name
    (ReporterSpec("fancy", ("diff",), render=None), "without a callable render"),
    (ReporterSpec("fancy", ("diff",), render=None, builtin=True), "without a callable render"),
])
def test_a_plugin_cannot_shadow_or_impersonate_a_builtin_format(isolated_plugins, spec, message):
    class Shadow:
        @hookimpl
        def rundiff_register_reporters(self, register):
            register(spec)

    assert not isolated_plugins.add(Shadow(), name="shadow")
    assert "shadow" in isolated_plugins.errors[-1] and message in isolated_plugins.errors[-1]


def test_builtin_commands_win_even_over_a_plugin_registered_first(tmp_path, capsys):
    """Command order is data (built-ins first), not registration order."""
    class Grabby:
        @hookimpl
        def rundiff_register_commands(self, cli):
            cli.add_command("ls", help="mine").set_defaults(func=lambda args: 7)

    plugins = Plugins(builtins=(), entry_points=False)
    assert plugins.add(Grabby(), name="grabby")
    assert plugins.add(importlib.import_module("rundiff_core.builtins"), name="builtins",
                       package="rundiff", builtin=True)
    plugins.add(importlib.import_module("rundiff_adapters.journal"), name="journal", builtin=True)
    previous = set_plugins(plugins)
    try:
        assert main(["ls", _journal(tmp_path), "--no-points"]) == 0
    finally:
        set_plugins(previous)
    assert "run  [journal, finished]" in capsys.readouterr().out
    assert any("'grabby' added the command 'ls', which rundiff already has" in e
               for e in plugins.errors)


def test_the_builtins_plugin_cannot_be_disabled(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RUNDIFF_DISABLE_PLUGINS", "builtins,local")
    plugins = Plugins(entry_points=False)
    assert "builtins" in plugins.info and "local" not in plugins.info
    [error] = plugins.errors
    assert "'builtins'" in error and "cannot be disabled" in error
    previous = set_plugins(plugins)
    try:
        assert main(["ls", _journal(tmp_path), "--no-points"]) == 0
    finally:
        set_plugins(previous)


# -- adapter options -----------------------------------------------------------------------------
class Homed:
    """An adapter whose backend reads DEMO_TRACKER_HOME, and a command that shows what it got."""

    @hookimpl
    def rundiff_register_adapters(self, register):
        register(AdapterSpec("homed", ("homed",), "x:Y", priority=90, options=(
            OptionSpec("--homed-home", "DEMO_TRACKER_HOME", metavar="DIR",
                       help="where the homed tracker keeps runs"),)))

    @hookimpl
    def rundiff_register_commands(self, cli):
        cli.add_command("homed-home", help="print the home").set_defaults(func=self.run)

    @staticmethod
    def run(args):
        print(os.environ.get("DEMO_TRACKER_HOME", "(unset)"))
        return 0


def test_an_adapter_option_is_a_global_flag_that_sets_its_variable(isolated_plugins, monkeypatch,
                                                                   capsys):
    monkeypatch.setenv("DEMO_TRACKER_HOME", "placeholder")  # so teardown restores the original
    monkeypatch.delenv("DEMO_TRACKER_HOME")
    with registered_plugin(Homed(), "homed", isolated_plugins):
        assert main(["homed-home"]) == 0
        assert capsys.readouterr().out == "(unset)\n"
        assert main(["--homed-home", "/srv/runs", "homed-home"]) == 0
        assert capsys.readouterr().out == "/srv/runs\n"
        with pytest.raises(SystemExit):
            main(["--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert ("--homed-home DIR where the homed tracker keeps runs (sets DEMO_TRACKER_HOME; "
                "homed adapter)") in help_text
    with pytest.raises(SystemExit) as stop:  # gone with its adapter
        main(["--homed-home", "/x", "adapters"])
    assert stop.value.code == 2


@pytest.mark.parametrize("option, message", [
    (OptionSpec("-H", "DEMO_TRACKER_HOME"), "option flag '-H'"),
    (OptionSpec("--debug", "DEMO_TRACKER_HOME"), "option flag '--debug'"),
    (OptionSpec("--homed-home", "demo home"), "option env 'demo home'"),
    (OptionSpec("--tracking-uri", "DEMO_TRACKER_HOME"), "adapter 'mlflow' from plugin 'mlflow'"),
    ("--homed-home", "pass OptionSpec"),
])
def test_bad_or_taken_adapter_options_drop_the_plugin(isolated_plugins, option, message):
    class Bad:
        @hookimpl
        def rundiff_register_adapters(self, register):
            register(AdapterSpec("homed", ("homed",), "x:Y", priority=90, options=(option,)))

    assert not isolated_plugins.add(Bad(), name="bad-option")
    assert "bad-option" in isolated_plugins.errors[-1] and message in isolated_plugins.errors[-1]
    assert isolated_plugins.registry.by_name("homed") is None


# -- claim priorities ----------------------------------------------------------------------------
class Eager:
    """Claims journal folders; strong evidence ranks the claim above the adapter's own priority."""

    def __init__(self, priority: int | None):
        self.priority = priority

    @hookimpl
    def rundiff_register_adapters(self, register):
        register(AdapterSpec("eager", ("eager",), "x:Y", priority=90))

    @hookimpl
    def rundiff_sniff_path(self, path):
        if os.path.isfile(os.path.join(path, "metrics.jsonl")):
            return Claim("eager", "eager reads metrics.jsonl", priority=self.priority)
        return None


def test_a_claims_own_priority_ranks_it(isolated_plugins, tmp_path, capsys):
    run = _journal(tmp_path)
    with registered_plugin(Eager(None), "eager", isolated_plugins):
        assert sniff_path(run, isolated_plugins).spec.name == "journal"  # 50 beats 90
    with registered_plugin(Eager(5), "eager", isolated_plugins):
        assert sniff_path(run, isolated_plugins).spec.name == "eager"
        assert main(["detect", run]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == "claim: eager (priority 5): eager reads metrics.jsonl"
        assert lines[-1] == f"winner: eager → eager:{run}"
    with registered_plugin(Eager(50), "eager", isolated_plugins), \
            pytest.raises(AmbiguousSourceError, match="claimed by eager .* journal"):
        sniff_path(run, isolated_plugins)


def test_neptune_evidence_outranks_an_mlruns_folder(isolated_plugins, realdata, monkeypatch,
                                                    capsys):
    """The ranking is data Neptune's claim carries; the generic code knows no adapter by name."""
    project = realdata / "mlflow-aiops-mnist"  # holds an MLflow file store, mlruns/
    alone = detect_project(cwd=str(project), environ={}, plugins=isolated_plugins)
    assert alone[0][1].name == "mlflow" and "neptune" not in [s.name for _c, s in alone]
    both = detect_project(cwd=str(project), environ={"NEPTUNE_PROJECT": "ws/proj"},
                          plugins=isolated_plugins)
    assert [s.name for _c, s in both][:2] == ["neptune", "mlflow"]
    claim, spec = both[0]
    assert isinstance(claim, ProjectClaim) and claim.priority == 15 < spec.priority
    monkeypatch.chdir(project)
    monkeypatch.setenv("NEPTUNE_PROJECT", "ws/proj")
    assert main(["detect", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["claims"]
    assert [(r["adapter"], r["priority"]) for r in rows][:2] == [("neptune", 15), ("mlflow", 20)]
    core = Path(__file__).resolve().parents[2] / "rundiff_core"
    assert "neptune" not in (core / "detect.py").read_text().lower()
