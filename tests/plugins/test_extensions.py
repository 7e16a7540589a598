"""Plugins that add output formats (`rundiff_register_reporters`) and subcommands
(`rundiff_register_commands`), driven through the real command line."""

from __future__ import annotations

import json

import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.hookspecs import hookimpl
from rundiff_core.render.formats import ReporterSpec
from rundiff_core.testing import registered_plugin


def _arm(root, name: str, finals: list[float]) -> str:
    for seed, final in enumerate(finals):
        write_journal_run(str(root / name / f"seed-{seed}"), config={"lr": final},
                          rows=[{"step": s, "loss": final + 1.0 / (s + 1)} for s in range(40)],
                          final={"status": "finished"}, seed=seed)
    return str(root / name / "seed-0")


def _one_line(report: dict) -> str:
    return f"{report['a_name']} vs {report['b_name']} on {report['metric']}: {report['verdict']}"


class OneLine:
    @hookimpl
    def rundiff_register_reporters(self, register):
        register(ReporterSpec(name="oneline", commands=("diff", "rank"), render=self.render,
                              summary="one line"))

    @staticmethod
    def render(report):
        if "verdict" in report:
            return _one_line(report)
        return "\n".join(str(row) for row in sorted(report))


def test_a_plugin_format_renders_the_json_report(isolated_plugins, tmp_path, capsys):
    a, b = _arm(tmp_path, "a", [0.50, 0.51, 0.49]), _arm(tmp_path, "b", [0.30, 0.31, 0.29])
    with registered_plugin(OneLine(), "oneline-plugin", isolated_plugins):
        assert main(["diff", a, b, "--format", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert main(["diff", a, b, "--format", "oneline"]) == 0
        assert capsys.readouterr().out == _one_line(report) + "\n"
        assert main(["rank", str(tmp_path / "a"), "--format", "oneline"]) == 0
        assert capsys.readouterr().out.strip()
        with pytest.raises(SystemExit) as stop:  # not registered for compare
            main(["compare", a, b, "--format", "oneline"])
        assert stop.value.code == 2
        assert main(["plugins"]) == 0
        rows = {p["name"]: p for p in json.loads(capsys.readouterr().out)["plugins"]}
        assert rows["oneline-plugin"]["reporters"] == ["oneline"]
    with pytest.raises(SystemExit):  # gone with the plugin
        main(["diff", a, b, "--format", "oneline"])


@pytest.mark.parametrize("spec, message", [
    (dict(name="json", commands=("diff",)), "a built-in format"),
    (dict(name="Fancy Name", commands=("diff",)), "reporter name"),
    (dict(name="fancy", commands=("nope",)), "unknown command"),
    (dict(name="fancy", commands="diff"), "non-empty tuple"),
    (dict(name="fancy", commands=("diff",), render="not callable"), "without a callable render"),
])
def test_bad_reporter_registrations_drop_the_plugin(isolated_plugins, spec, message):
    class Bad:
        @hookimpl
        def rundiff_register_reporters(self, register):
            register(ReporterSpec(**{"render": str, **spec}))

    assert not isolated_plugins.add(Bad(), name="bad-reporter")
    error = isolated_plugins.errors[-1]
    assert "bad-reporter" in error and (message in error or message in error.lower()), error
    assert "bad-reporter" not in isolated_plugins.info


def test_two_plugins_cannot_share_a_format_for_a_command(isolated_plugins):
    class Twin:
        @hookimpl
        def rundiff_register_reporters(self, register):
            register(ReporterSpec(name="oneline", commands=("rank",), render=str))

    with registered_plugin(OneLine(), "first", isolated_plugins):
        assert not isolated_plugins.add(Twin(), name="second")
        assert "plugin 'first' already provides" in isolated_plugins.errors[-1]
        assert isolated_plugins.reporters.get("rank", "oneline").plugin == "first"


@pytest.mark.parametrize("result, message", [(RuntimeError("boom"), "RuntimeError: boom"),
                                             (b"bytes", "returned bytes, not text")])
def test_a_failing_reporter_is_one_line_and_names_the_plugin(isolated_plugins, tmp_path, capsys,
                                                             result, message):
    def render(report):
        if isinstance(result, Exception):
            raise result
        return result

    class Flaky:
        @hookimpl
        def rundiff_register_reporters(self, register):
            register(ReporterSpec(name="flaky", commands=("diff",), render=render))

    a, b = _arm(tmp_path, "a", [0.5]), _arm(tmp_path, "b", [0.4])
    with registered_plugin(Flaky(), "flaky-plugin", isolated_plugins):
        assert main(["diff", a, b, "--format", "flaky"]) == 2
        err = capsys.readouterr().err
        assert "reporter 'flaky' of plugin 'flaky-plugin'" in err and message in err
        assert "Traceback" not in err
        assert main(["diff", a, b, "--format", "md"]) == 0  # built-in formats are untouched


class Status:
    @hookimpl
    def rundiff_register_commands(self, cli):
        p = cli.add_command("status", help="one line per run: name and status")
        p.add_argument("source", metavar="SRC")
        p.set_defaults(func=self.run)

    @staticmethod
    def run(args):
        from rundiff_core.resolve import load_runs

        for run in load_runs(args.source):
            print(f"{run.name} {run.status}")
        return 0


def test_a_plugin_command_runs_and_is_listed(isolated_plugins, tmp_path, capsys):
    _arm(tmp_path, "a", [0.5, 0.6])
    with registered_plugin(Status(), "status-plugin", isolated_plugins):
        assert main(["status", str(tmp_path / "a")]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 2 and all(line.endswith(" finished") for line in lines)
        assert main(["plugins"]) == 0
        rows = {p["name"]: p for p in json.loads(capsys.readouterr().out)["plugins"]}
        assert rows["status-plugin"]["commands"] == ["status"]
    with pytest.raises(SystemExit) as stop:
        main(["status", str(tmp_path / "a")])
    assert stop.value.code == 2


@pytest.mark.parametrize("name, message", [("diff", "which rundiff already has"),
                                           ("Bad Name", "command name")])
def test_a_taken_or_bad_command_name_is_reported_and_the_rest_works(isolated_plugins, tmp_path,
                                                                    capsys, name, message):
    class Grabby:
        @hookimpl
        def rundiff_register_commands(self, cli):
            cli.add_command(name, help="mine").set_defaults(func=lambda args: 7)

    a, b = _arm(tmp_path, "a", [0.5]), _arm(tmp_path, "b", [0.4])
    with registered_plugin(Grabby(), "grabby-cmd", isolated_plugins):
        assert main(["diff", a, b]) == 0  # the built-in still answers
        assert any("grabby-cmd" in e and message in e for e in isolated_plugins.errors)


def test_two_plugins_cannot_add_the_same_command(isolated_plugins, capsys, tmp_path):
    class Again(Status):
        pass

    _arm(tmp_path, "a", [0.5])
    with registered_plugin(Status(), "first-status", isolated_plugins), \
            registered_plugin(Again(), "second-status", isolated_plugins):
        assert main(["status", str(tmp_path / "a")]) == 0
        assert any("'second-status'" in e and "plugin 'first-status'" in e
                   for e in isolated_plugins.errors)


def test_a_command_without_a_handler_fails_in_one_line(isolated_plugins, capsys):
    class Lazy:
        @hookimpl
        def rundiff_register_commands(self, cli):
            cli.add_command("lazy", help="forgot set_defaults")

    with registered_plugin(Lazy(), "lazy-plugin", isolated_plugins):
        assert main(["lazy"]) == 2
        assert "'lazy-plugin' added the command 'lazy' without a handler" in capsys.readouterr().err


def test_an_installed_plugin_command_shows_in_help(plugin_dir, run_cli):
    plugin_dir.dist("rundiff-hello", "hello", "rundiff_hello", '''
        from rundiff_core.hookspecs import hookimpl


        def run(args):
            print(f"hello {args.who}")
            return 0


        @hookimpl
        def rundiff_register_commands(cli):
            p = cli.add_command("hello", help="say hello")
            p.add_argument("who")
            p.set_defaults(func=run)
    ''')
    helped = run_cli("--help")
    assert helped.returncode == 0 and "hello" in helped.stdout
    said = run_cli("hello", "world")
    assert said.returncode == 0 and said.stdout == "hello world\n", said.stderr
