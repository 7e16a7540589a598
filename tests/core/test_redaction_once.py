"""Redaction happens once, where a Run leaves its source (`open_source` → `RedactedSource`).

The runs here come from the test kit's memory source, which redacts nothing itself: every secret
below must still be gone from every output format, and from what the Python API hands out.
"""

from __future__ import annotations

import json

import pytest

from rundiff_core import InputError, RunEvent, load_run, open_source
from rundiff_core.redact import REDACTED, RedactedSource, redact_run
from rundiff_core.testing import memory_run, memory_source, run_cli

KEY = "sk-proj-" + "A1b2C3d4" * 4  # an API-key shape, found in free text too
PASSWORD = "hunter2-correct-horse"
TOKEN = "ghp_" + "x9" * 15


def _leaky(name: str, offset: float) -> object:
    run = memory_run(
        name,
        {"loss": ([0, 1, 2, 3], [1.0 + offset, 0.8 + offset, 0.6 + offset, 0.5 + offset])},
        config={"lr": 0.1 + offset, "api_key": KEY, "db": {"password": PASSWORD},
                "cmd": ["train.py", "--hf-token", TOKEN], "note": f"{name}: resume with OPENAI_API_KEY={KEY}"},
        summary={"loss": 0.5 + offset, "secret": PASSWORD},
        events=[RunEvent("restart", step=2.0, payload={"url": f"https://user:{PASSWORD}@host/x",
                                                       "auth": TOKEN})],
    )
    run.env = {"WANDB_API_KEY": KEY, "PATH": "/usr/bin"}
    run.meta = {"server": f"https://bot:{PASSWORD}@tracker.example", "tags": ["a"]}
    run.fidelity = [f"re-read with token={TOKEN}"]
    return run


def _no_secret(text: str) -> None:
    for secret in (KEY, PASSWORD, TOKEN):
        assert secret not in text, f"{secret[:8]}… leaked"


def test_every_field_of_a_loaded_run_is_redacted(isolated_plugins):
    with memory_source([_leaky("a", 0.0)], "leak", isolated_plugins) as addr:
        run = load_run(f"{addr}")
    assert run.config["api_key"] == REDACTED and run.config["db"]["password"] == REDACTED
    assert run.config["cmd"] == ["train.py", "--hf-token", REDACTED]
    assert run.config["note"] == f"a: resume with OPENAI_API_KEY={REDACTED}"
    assert run.config["lr"] == 0.1 and run.env["PATH"] == "/usr/bin"
    assert run.summary == {"loss": 0.5, "secret": REDACTED}
    assert run.env["WANDB_API_KEY"] == REDACTED
    assert run.meta["server"] == f"https://bot:{REDACTED}@tracker.example"
    assert run.events[0].payload == {"url": f"https://user:{REDACTED}@host/x", "auth": REDACTED}
    _no_secret(repr(run.to_record()) + " ".join(run.fidelity))


def test_open_source_always_hands_out_a_redacting_source(isolated_plugins):
    with memory_source([_leaky("a", 0.0)], "leak", isolated_plugins) as addr:
        src = open_source(addr)
        assert isinstance(src, RedactedSource)
        ref = src.list_runs()[0]
        assert src.load_run(ref).config["api_key"] == REDACTED
        assert src.thread_safe is False and src.seed_siblings(ref) == [ref]  # the adapter's own


def test_a_deferred_summary_and_late_notes_are_redacted_when_they_arrive():
    run = memory_run("d", {"loss": ([0], [1.0])})
    run.defer_summary(lambda: (run.note(f"folded with {TOKEN}"), {"api_key": KEY, "loss": 1.0})[1])
    inner = run.loader
    run.loader = lambda keys: _with_notes(inner(keys), [f"skipped a line holding password={PASSWORD}"])
    redact_run(run)
    assert "_summary_loader" in run.__dict__  # still deferred: redaction did not fold it
    assert run.summary == {"api_key": REDACTED, "loss": 1.0}
    run.history()
    _no_secret(" ".join(run.fidelity))
    assert len(run.fidelity) == 2


def _with_notes(frame, notes):
    frame.attrs["fidelity"] = notes
    return frame


def test_errors_a_source_raises_are_scrubbed(isolated_plugins):
    run = memory_run("e", {"loss": ([0], [1.0])})

    def broken(keys):
        raise InputError(f"server said 401 for https://me:{PASSWORD}@host", hint=f"token={TOKEN}")

    run.loader = broken
    with memory_source([run], "err", isolated_plugins) as addr:
        loaded = load_run(addr)
        with pytest.raises(InputError) as info:
            loaded.history()
    _no_secret(str(info.value))
    assert REDACTED in str(info.value)


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_no_output_format_shows_a_planted_secret(isolated_plugins, capsys, fmt):
    with memory_source([_leaky("a", 0.0)], "a", isolated_plugins) as a, \
            memory_source([_leaky("b", 0.3)], "b", isolated_plugins) as b:
        outputs = []
        for argv in (["ls", a, "--format", fmt], ["diff", a, b, "--metric", "loss", "--format", fmt]):
            code = run_cli(argv)
            out, err = capsys.readouterr()
            assert code in (0, 1), (argv, err)
            if fmt == "json":
                json.loads(out)
            outputs.append(out + err)
    for text in outputs:
        _no_secret(text)
        assert REDACTED in text  # the secret-bearing fields are shown, redacted
    assert "OPENAI_API_KEY=" + REDACTED in outputs[1]  # diff's config section: the changed note
