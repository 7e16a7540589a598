"""The exit-code contract through `main()`: 0 ok, 1 a requested check failed, 2 a user error (one
line and a hint), 3 a bug (one line; `--debug` adds the traceback)."""

from __future__ import annotations

import json
import math
import time

import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.hookspecs import hookimpl
from rundiff_core.testing import registered_plugin

INTERNAL = "rundiff: internal error: {kind}: {message} — rerun with --debug and report it\n"


def _run(root, name: str, loss: float, *, running: bool = False, nan_at: int | None = None) -> str:
    rows = [{"step": s, "loss": math.nan if s == nan_at else loss + 1 / (s + 1), "time": time.time()}
            for s in range(30)]
    return write_journal_run(str(root / name), config={"lr": loss}, rows=rows,
                             final=None if running else {"status": "finished"})


class Crashing:
    """A plugin command with a bug in it (a multi-line message, as real exceptions have)."""

    @hookimpl
    def rundiff_register_commands(self, cli):
        cli.add_command("crash", help="raise a bug").set_defaults(func=self.run)

    @staticmethod
    def run(args):
        settings = {"a": 1}
        return settings["missing key"]


class Dividing(Crashing):
    @staticmethod
    def run(args):
        raise ZeroDivisionError("float division by zero\nwhile scaling the loss")


def test_a_bug_in_a_plugin_command_is_one_line_and_exit_3(isolated_plugins, capsys):
    with registered_plugin(Dividing(), "crashing", isolated_plugins):
        assert main(["crash"]) == 3
    captured = capsys.readouterr()
    assert captured.err == INTERNAL.format(kind="ZeroDivisionError",
                                           message="float division by zero while scaling the loss")
    assert captured.out == ""


def test_debug_shows_the_traceback_before_the_line(isolated_plugins, capsys):
    with registered_plugin(Crashing(), "crashing", isolated_plugins):
        assert main(["--debug", "crash"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "in run" in err and "KeyError: 'missing key'" in err
    assert err.endswith(INTERNAL.format(kind="KeyError", message="'missing key'"))


def test_a_bug_in_an_engine_is_exit_3_not_the_check_failed_code(tmp_path, monkeypatch, capsys):
    import rundiff_core.engines.diff as engine

    a, b = _run(tmp_path, "a", 0.5), _run(tmp_path, "b", 0.4)
    assert main(["diff", a, b, "--format", "json"]) == 0  # the real engine works on these runs
    assert json.loads(capsys.readouterr().out)["metric"] == "loss"

    def broken(*args, **kwargs):
        raise AttributeError("'NoneType' object has no attribute 'seeds'")

    monkeypatch.setattr(engine, "run_diff", broken)
    assert main(["diff", a, b]) == 3
    assert capsys.readouterr().err == INTERNAL.format(
        kind="AttributeError", message="'NoneType' object has no attribute 'seeds'")


def test_an_exception_without_a_message_is_named_alone(isolated_plugins, capsys):
    class Asserting(Crashing):
        @staticmethod
        def run(args):
            raise AssertionError

    with registered_plugin(Asserting(), "asserting", isolated_plugins):
        assert main(["crash"]) == 3
    assert capsys.readouterr().err == (
        "rundiff: internal error: AssertionError — rerun with --debug and report it\n")


def test_a_bug_while_building_the_command_line_is_exit_3(isolated_plugins, monkeypatch, capsys):
    """A built-in command module that breaks is a bug in rundiff, not a plugin to skip quietly."""
    import rundiff_core.commands.ls as ls

    def broken(sub):
        raise TypeError("add_argument() got an unexpected keyword argument 'nargz'")

    monkeypatch.setattr(ls, "add_parser", broken)
    # a built-in command's parser is built when that command is used (rundiff_core/builtins.py)
    assert main(["ls"]) == 3
    assert capsys.readouterr().err == INTERNAL.format(
        kind="TypeError", message="add_argument() got an unexpected keyword argument 'nargz'")
    assert main(["--debug", "ls"]) == 3
    assert "in broken" in capsys.readouterr().err


def test_user_errors_still_exit_2_with_a_hint(tmp_path, capsys):
    assert main(["diff", str(tmp_path / "nope"), str(tmp_path / "nope2")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("rundiff: error: ") and err[1].startswith("  hint: ")
    assert "internal error" not in "\n".join(err)


def test_a_failed_check_exits_1(tmp_path, capsys):
    healthy = _run(tmp_path, "healthy", 0.5, running=True)
    assert main(["watch", healthy, "--once"]) == 0
    sick = _run(tmp_path, "sick", 0.5, running=True, nan_at=29)
    assert main(["watch", sick, "--once"]) == 1
    assert "ALERT nan" in capsys.readouterr().out


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage: rundiff" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--help"], ["diff", "--help"]])
def test_help_exits_0(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0 and "usage: rundiff" in capsys.readouterr().out
