"""The redaction rule: a secret is replaced wherever it sits — inside lists, tuples and lists of
dicts too — in config, env, summaries and event payloads, and in every output format.

The secrets are plain strings ("hunter2-…") that no key-shape pattern knows: only the key name
(`api_key`, `password`, `token`) or an inline `--api_key=` marks them, so a reader or renderer
that stops descending into a list lets them through. Expectations are written out by hand.
"""

from __future__ import annotations

import glob
import json
import os

import pyarrow.parquet as pq
import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.model import RunEvent
from rundiff_core.redact import REDACTED, redact
from rundiff_core.testing import memory_run, memory_source

R = REDACTED


def test_rule_redact_descends_into_lists_tuples_and_nested_lists_of_dicts():
    value = {
        "args": ["train.py", "--api_key=hunter2-a", "--lr=0.1"],
        "argv": ("train.py", "--password=hunter2-b"),
        "callbacks": [{"name": "wandb", "api_key": "hunter2-c"}, {"name": "csv"}],
        "grid": [[{"token": "hunter2-d", "lr": 0.1}], [{"password": "hunter2-e"}]],
        "urls": ("https://bob:hunter2-f@example.org/x",),
        "tags": ["x", "y"],
    }
    assert redact(value) == {
        "args": ["train.py", f"--api_key={R}", "--lr=0.1"],
        "argv": ("train.py", f"--password={R}"),
        "callbacks": [{"name": "wandb", "api_key": R}, {"name": "csv"}],
        "grid": [[{"token": R, "lr": 0.1}], [{"password": R}]],
        "urls": (f"https://bob:{R}@example.org/x",),
        "tags": ["x", "y"],
    }
    assert isinstance(redact(value)["argv"], tuple)  # the shape is kept, only secrets change
    assert redact(["--api_key=hunter2"]) == [f"--api_key={R}"]  # a bare list at top level


def _config(side: str) -> dict:
    return {
        "lr": 0.1 if side == "a" else 0.2,
        "args": ["train.py", f"--api_key=hunter2-args-{side}", f"--lr={side}"],
        "callbacks": [{"name": "wandb", "api_key": f"hunter2-cb-{side}"}],
        "grid": [[{"password": f"hunter2-grid-{side}", "width": 4}]],
    }


def _secrets(side: str) -> list[str]:
    return [f"hunter2-{where}-{side}" for where in ("args", "cb", "grid", "sum", "env", "ev")]


def _write_pair(root) -> tuple[str, str]:
    paths = []
    for side in ("a", "b"):
        paths.append(write_journal_run(
            str(root / "runs" / side), config=_config(side),
            rows=[{"step": i, "loss": 1.0 / (i + 1)} for i in range(10)],
            events=[{"event": "resume", "step": 3,
                     "argv": ["train.py", f"--api_key=hunter2-ev-{side}"],
                     "hooks": [{"name": "slack", "token": f"hunter2-ev-{side}"}]}],
            env={"LAUNCH": f"python train.py --password=hunter2-env-{side}"},
            final={"loss": 0.1, "eval": [{"split": "val", "secret": f"hunter2-sum-{side}"}]},
        ))
    return paths[0], paths[1]


def _outputs(capsys, tmp_path, a: str, b: str) -> dict[str, str]:
    """Every output format of every command that prints config, env, summary or events."""
    outs: dict[str, str] = {}

    def cli(name: str, *argv: str) -> None:
        code = main(list(argv))
        captured = capsys.readouterr()
        assert code == 0, (name, captured.err)
        outs[name] = captured.out + captured.err

    cli("diff md all keys", "diff", a, b, "--all-keys")  # every changed key listed, none collapsed
    for fmt in ("md", "json"):
        cli(f"diff {fmt}", "diff", a, b, "--format", fmt)
        cli(f"report {fmt}", "report", a, b, "--format", fmt)
        cli(f"ablate {fmt}", "ablate", b, "--baseline", a, "--format", fmt)
        cli(f"ls {fmt}", "ls", a, b, "--format", fmt)
    html = tmp_path / "report.html"
    cli("report html", "report", a, b, "-o", str(html))
    outs["report html"] = html.read_text()
    dataset = tmp_path / "fleet"
    cli("export md", "export", a, b, "-o", str(dataset), "--workers", "0", "--no-progress")
    tables = sorted(glob.glob(os.path.join(dataset, "**", "*.parquet"), recursive=True))
    assert tables, "export wrote no table"
    outs["export runs table"] = json.dumps(
        [pq.read_table(t).to_pylist() for t in tables], default=str)
    return outs


def test_rule_secrets_in_lists_never_reach_any_output_journal(tmp_path, capsys):
    """Journal runs planting list-held secrets in config, env, summary and event payloads."""
    a, b = _write_pair(tmp_path)
    from rundiff_core.resolve import load_run

    payload = load_run(a).events[0].payload  # list fields are read as lists, not arrays
    assert type(payload["argv"]) is list and type(payload["hooks"]) is list
    assert payload["argv"][0] == "train.py" and payload["hooks"][0]["name"] == "slack"
    outs = _outputs(capsys, tmp_path, a, b)
    # the changed list-valued keys are reported (the redaction did not just drop them)
    assert "`args`" in outs["diff md"]
    assert f"--api_key={R}" in outs["diff json"]
    runs_table = outs["export runs table"]
    assert "slack" in runs_table and "eval" in runs_table  # payload and summary are exported
    for name, text in outs.items():
        for secret in _secrets("a") + _secrets("b"):
            assert secret not in text, f"{secret} leaked into {name}"


def test_rule_secrets_in_tuples_and_env_lists_never_reach_any_output_memory(tmp_path, capsys):
    """Runs built in memory carry what YAML cannot: tuples, and env values that are lists."""
    runs = []
    for side in ("a", "b"):
        runs.append(memory_run(
            side, {"loss": ([0, 1, 2], [1.0, 0.5, 0.25])},
            # argv differs beyond its secret, so the diff must list it (redacted values alone
            # would compare equal and drop out of the config diff)
            config={**_config(side),
                    "argv": ("train.py", f"--api_key=hunter2-tuple-{side}", f"--run={side}")},
            summary={"eval": ({"split": "val", "password": f"hunter2-sum-{side}"},)},
            env={"args": ("train.py", f"--api_key=hunter2-env-{side}"),
                 "extra": [{"token": f"hunter2-env-{side}"}]},
            events=[RunEvent(kind="resume", step=1.0, time=None,
                             payload={"argv": ("x", f"--password=hunter2-ev-{side}"),
                                      "hooks": [{"token": f"hunter2-ev-{side}"}]})],
        ))
    with memory_source(runs[:1], name="secrets-a") as a, memory_source(runs[1:], name="secrets-b") as b:
        outs = _outputs(capsys, tmp_path, a, b)
    assert "`argv`" in outs["diff md all keys"] and f"--password={R}" in outs["export runs table"]
    for name, text in outs.items():
        for side in ("a", "b"):
            for secret in [*_secrets(side), f"hunter2-tuple-{side}"]:
                assert secret not in text, f"{secret} leaked into {name}"


@pytest.mark.parametrize("container", [list, tuple])
def test_rule_config_diff_redacts_changed_list_values(container):
    """The diff engine redacts changed values itself, whatever the adapter did."""
    from rundiff_core.engines.diff import config_diff

    a = memory_run("a", {}, config={"args": container(["--api_key=hunter2-1"])})
    b = memory_run("b", {}, config={"args": container(["--api_key=hunter2-2"])})
    (change,) = config_diff(a, b)
    assert change.old == container([f"--api_key={R}"]) and change.new == change.old


def test_rule_scrubbed_text_keeps_its_shape_and_only_the_secret_goes():
    """The key, quotes and scheme stay (so a reader sees what was there), the value is replaced."""
    from rundiff_core.redact import redact_text

    assert redact_text('{"password": "hunter2", "lr": "0.1"}') == f'{{"password": "{R}", "lr": "0.1"}}'
    assert redact_text("api_key='hunter2'") == f"api_key='{R}'"
    assert redact_text("Authorization: Bearer abcdefgh12345678") == f"Authorization: Bearer {R}"
    assert redact_text("postgres://bob:hunter2@db/x") == f"postgres://bob:{R}@db/x"


def test_rule_empty_secrets_stay_empty_and_secret_mappings_redact_every_member():
    """An unset secret ("" / None / {} / []) is shown as unset; a secret-named mapping keeps its
    keys but every value inside is replaced."""
    assert redact({"api_key": "", "token": None, "secret": {}, "password": []}) == {
        "api_key": "", "token": None, "secret": {}, "password": []}
    assert redact({"credentials": {"user": "bob", "nested": {"x": 1}}}) == {
        "credentials": {"user": R, "nested": {"x": R}}}


def test_rule_plugin_patterns_match_the_full_dotted_key_through_dicts_and_lists(isolated_plugins):
    """A plugin pattern sees the whole dotted key (`db.conn`), however the value is nested —
    also through a list — and is anchored like any regex."""
    from rundiff_core import redact as redact_mod
    from rundiff_core.hookspecs import hookimpl
    from rundiff_core.testing import registered_plugin

    class Db:
        @hookimpl
        def rundiff_secret_patterns(self):
            return [r"^db\.conn$"]

    redact_mod._plugin_patterns.cache_clear()
    try:
        with registered_plugin(Db(), "db-secrets", isolated_plugins):
            redact_mod._plugin_patterns.cache_clear()
            got = redact({"db": {"conn": "hunter2-1"}, "conn": "kept",
                          "dbs": [{"conn": "kept-too"}], "db2": {"conn": "kept"}})
            listed = redact([{"x": 1}], "db")  # list elements inherit the list's key
            in_list = redact({"db": [{"conn": "hunter2-2"}]})
    finally:
        redact_mod._plugin_patterns.cache_clear()
    assert got == {"db": {"conn": R}, "conn": "kept", "dbs": [{"conn": "kept-too"}],
                   "db2": {"conn": "kept"}}
    assert listed == [{"x": 1}] and in_list == {"db": [{"conn": R}]}
