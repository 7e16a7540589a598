"""What the MCP server may read: roots, symlinks, `..`, schemes, remote trackers; capped answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rundiff.agents.confine import Confinement, OutsideRootsError
from rundiff.agents.server import parse_http
from rundiff.agents.tools import Tools
from rundiff_core.demo import make_arm, write_journal_run
from rundiff_core.engines.diff import VERDICTS
from rundiff_core.errors import RunNotFoundError, UsageError


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """root/ (served) with two journal arms, and outside/ beside it with a secret run."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    make_arm(str(root / "runs"), "exp-a", lr=3e-4, floor=0.6, seeds=2, steps=100)
    make_arm(str(root / "runs"), "exp-b", lr=6e-4, floor=0.5, seeds=2, steps=100)
    write_journal_run(str(outside / "private"), config={"x": 1}, rows=[{"step": 0, "loss": 1.0}])
    os.symlink(outside / "private", root / "link-out")
    monkeypatch.chdir(root)
    return tmp_path


def test_paths_inside_the_roots_pass_and_outside_ones_are_refused(tree: Path) -> None:
    c = Confinement.of([str(tree / "root")])
    for ok in ("runs/exp-a/seed-0", "journal:runs/exp-a", "./runs", str(tree / "root" / "runs"),
               "tb:runs", "traj:runs/x.json#trial=1", "runs/../runs/exp-b"):
        c.check_address(ok)
    for bad in (str(tree / "outside" / "private"), "journal:../outside/private", "runs/../../outside",
                "link-out", "journal:link-out", "traj:../outside/x.json#trial=0", "/etc/passwd",
                "local:~/"):
        with pytest.raises(OutsideRootsError) as exc:
            c.check_address(bad)
        assert "outside the folders" in exc.value.message and "--root" in exc.value.hint


def test_remote_trackers_need_allow_remote(tree: Path) -> None:
    local, remote = Confinement.of([str(tree / "root")]), Confinement.of(
        [str(tree / "root")], allow_remote=True)
    for address in ("wandb:ent/proj/abc123", "wandb:ent/proj?state=finished", "neptune:ws/proj",
                    "mlflow:http://127.0.0.1:5000#exp", "mlflow:my-experiment",
                    "https://wandb.ai/ent/proj/runs/abc", "nosuchscheme:thing"):
        with pytest.raises(OutsideRootsError) as exc:
            local.check_address(address)
        assert "--allow-remote" in exc.value.hint
        remote.check_address(address)
    # path-shaped locators of those schemes are still confined, with or without --allow-remote
    for address in ("wandb:/etc", "wandb:../outside/x.wandb", "mlflow:sqlite:////etc/mlflow.db#e",
                    "mlflow:../outside#exp", "neptune:/var/lib"):
        with pytest.raises(OutsideRootsError):
            remote.check_address(address)
    local.check_address("mlflow:runs#exp")
    local.check_address("wandb:./runs")


def test_bare_run_names_are_not_looked_up(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI resolves a bare name through project detection (WANDB_API_KEY → a W&B project);
    the server refuses it before anything is detected."""
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    c = Confinement.of([str(tree / "root")], allow_remote=True)
    with pytest.raises(RunNotFoundError) as exc:
        c.check_address("seed-0")
    assert "not looked up" in exc.value.hint
    answer = Tools(c).compare(["seed-0", "runs/exp-b"])
    assert answer.error and answer.data["error"]["type"] == "RunNotFoundError"


def test_parse_http_is_loopback_only() -> None:
    assert parse_http("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert parse_http("[::1]:9000") == ("::1", 9000)
    assert parse_http("localhost:1") == ("localhost", 1)
    for bad in ("0.0.0.0:8000", "192.168.1.5:80", "example.com:80", "127.0.0.1", "127.0.0.1:0",
                "127.0.0.1:http"):
        with pytest.raises(UsageError):
            parse_http(bad)


def test_a_seed_sibling_outside_the_roots_is_refused(tree: Path) -> None:
    """Serving only seed-0 must not read seed-1 through the seed-sibling lookup."""
    tools = Tools(Confinement.of([str(tree / "root" / "runs" / "exp-a" / "seed-0"),
                                  str(tree / "root" / "runs" / "exp-b")]))
    answer = tools.diff("runs/exp-a/seed-0", "runs/exp-b/seed-0")
    assert answer.error and "seed sibling" in answer.text
    assert "exp-a/seed-1" in answer.text
    ok = Tools(Confinement.of([str(tree / "root")])).diff("runs/exp-a/seed-0", "runs/exp-b/seed-0")
    assert not ok.error and ok.data["verdict"].removesuffix(" (preliminary)") in VERDICTS
    assert ok.data["variance_a"]["n"] == 2  # both seeds were read once the parent is a root


def test_tools_answer_markdown_and_json_and_refuse_outside(tree: Path) -> None:
    tools = Tools(Confinement.of([str(tree / "root")]))
    answer = tools.compare(["runs/exp-a", "runs/exp-b"], "loss")
    assert not answer.error and answer.text.startswith("# Same-step comparison")
    assert answer.data["schema"] == "rundiff.compare/1"
    refused = tools.ls([str(tree / "outside" / "private")])
    assert refused.error and refused.text.startswith("rundiff: error:")
    assert refused.data["error"]["type"] == "OutsideRootsError"
    assert tools.ls([]).error and tools.rank([""]).error
    listed = tools.ls(["runs/exp-a/seed-0"])
    assert listed.data["runs"][0]["points"] > 0 and "loss:" in listed.text
    assert "demo-secret-key" not in listed.text + json.dumps(listed.data)


def test_answers_are_capped_with_a_notice(tree: Path) -> None:
    tools = Tools(Confinement.of([str(tree / "root")]), max_chars=1500)
    answer = tools.compare(["runs/exp-a", "runs/exp-b"])
    assert len(answer.text) < 1500 + 300
    assert "[truncated: showing" in answer.text and "pass `metric`" in answer.text
    assert answer.data["truncated"]["chars"] > 1500 and "metric" in answer.data["truncated"]["message"]
    assert len(json.dumps(answer.data)) <= 1500
    with pytest.raises(UsageError):
        Tools(Confinement.of([str(tree / "root")]), max_chars=10)


def test_secrets_in_messages_are_redacted(tree: Path) -> None:
    tools = Tools(Confinement.of([str(tree / "root")]))
    secret = "sk-proj-SECRETSECRETSECRET1234567890"
    answer = tools.ls([f"runs/{secret}"])
    assert answer.error and secret not in answer.text and secret not in json.dumps(answer.data)


def test_without_the_sdk_the_command_says_which_extra(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['mcp'] = None; sys.modules['mcp_types'] = None; "
            "from rundiff_core.cli import main; sys.exit(main(['mcp', '--root', '.']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ}, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert "needs the MCP SDK" in out.stderr and "rundiff[mcp]" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_internal_error_is_an_error_answer_not_a_crash(tree: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    from rundiff import _bridge

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("token=abcdef123456 division by zero")

    monkeypatch.setattr(_bridge, "ls_listing", broken)
    answer = Tools(Confinement.of([str(tree / "root")])).ls(["runs/exp-a"])
    assert answer.error and answer.data["error"]["type"] == "InternalError"
    assert "ZeroDivisionError" in answer.text and "abcdef123456" not in answer.text
    logged = "".join(r.getMessage() for r in caplog.records)
    assert "Traceback" in logged and "abcdef123456" not in logged


def test_tools_on_real_tensorboard_runs_match_the_cli(realdata: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from rundiff_core.cli import main

    group = realdata / "tb-tensorboard-reducer" / "tests" / "runs" / "strict"
    tools = Tools(Confinement.of([str(group)]))
    listed = tools.ls([f"tb:{group}"])
    capsys.readouterr()
    assert main(["ls", f"tb:{group}", "--format", "json"]) == 0
    assert listed.data == {"runs": json.loads(capsys.readouterr().out)}
    assert len(listed.data["runs"]) == 3
    outside = tools.ls([f"tb:{group.parent / 'lax'}"])
    assert outside.error and "outside the folders" in outside.text
