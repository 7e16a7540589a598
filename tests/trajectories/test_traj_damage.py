"""Damage costs only what it touches in Inspect `.eval` logs (issue 33): a damaged member costs its
sample, skipped and counted in one line in the user's words ("eval log X: 2 of 50 samples
unreadable (member CRC failed); the rest read"); a lost central directory is got round by the
members' local headers, each CRC-checked; no zipfile/zlib/inspect_ai message, no traceback; exit 2
with one line and a hint when no sample reads; the input never changes.

Logs: one written here with zipfile in Inspect's v2 layout (50 samples, so counts are exact), and
the real logs of ../shared/realdata/agent-inspect-ai (skipped when absent). Damage on copies, with
fixed seeds: flipped bits, a zeroed 512-byte block, a cut tail, 200 inserted bytes. Both readers:
inspect_ai's (which stops at the damage and hands over) and the direct one (inspect_ai absent).
"""

from __future__ import annotations

import json
import random
import re
import sys
import zipfile
from pathlib import Path

import pytest
from rundiff_adapters.trajectory import sniff_kind
from rundiff_adapters.trajectory.formats import read_trajectory_run

from rundiff_core.cli import main
from rundiff_core.errors import InputError
from rundiff_core.testing import hash_tree

INSPECT = "agent-inspect-ai/tests"
N = 50
_COUNT = re.compile(r"eval log (\S+): (\d+) of (\d+) samples unreadable \(([^)]*)\); the rest read")


@pytest.fixture(params=["inspect_ai", "direct"])
def reader(request, monkeypatch):
    """Each test twice: inspect_ai installed (its reader first), and without it."""
    if request.param == "direct":
        monkeypatch.setitem(sys.modules, "inspect_ai", None)
        monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    else:
        pytest.importorskip("inspect_ai")
    return request.param


def _sample(i: int) -> dict:
    passed = i % 3 != 0
    return {
        "id": i, "epoch": 1, "input": f"question {i}", "target": "yes",
        "messages": [{"role": "user", "content": f"question {i}"},
                     {"role": "assistant", "content": "yes" if passed else "no"}],
        "output": {"model": "mockllm/model", "choices": [
            {"message": {"role": "assistant", "content": "yes" if passed else "no"},
             "stop_reason": "stop"}]},
        "scores": {"match": {"value": "C" if passed else "I", "answer": "yes" if passed else "no"}},
        "metadata": {}, "store": {}, "events": [], "model_usage": {},
        "attachments": {},
    }


def _eval_log(path: Path, n: int = N, stored: bool = False) -> Path:
    """An Inspect v2 .eval log of `n` samples, members in Inspect's order."""
    ev = {"task": "mock_task", "task_id": "t1", "run_id": "r1", "created": "2025-01-01T00:00:00",
          "model": "mockllm/model", "dataset": {"name": "mock", "samples": n,
                                                "sample_ids": list(range(1, n + 1))},
          "config": {"epochs": 1}, "scorers": [{"name": "match"}]}
    start = {"version": 2, "eval": ev, "plan": {}}
    header = {"version": 2, "status": "success", "eval": ev, "plan": {}, "results": {},
              "stats": {}}
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("_journal/start.json", json.dumps(start))
        for i in range(1, n + 1):
            zf.writestr(f"samples/{i}_epoch_1.json", json.dumps(_sample(i)))
        zf.writestr("summaries.json", "[]")
        zf.writestr("header.json", json.dumps(header))
    return path


def _attempts(run) -> set[tuple]:
    """Every attempt read (primary and repeats), by what the diff uses of it."""
    out = set()
    for name, rec in run.records.items():
        for r in [rec, *run.repeats.get(name, [])]:
            out.add((name, r.repeat, r.passed, r.finish, r.steps, len(r.features.calls)))
    return out


def _unreadable(run) -> tuple[int, int, str] | None:
    for note in run.notes:
        m = _COUNT.search(note)
        if m:
            return int(m.group(2)), int(m.group(3)), m.group(4)
    return None


def _member_span(path: Path, name: str) -> tuple[int, int]:
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    return start, start + info.compress_size


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    for internal in ("EOCD", "KeyError", "BadZipFile", "zlib", "Error -3", "IncompleteJSON",
                     "lexical error", "Bad CRC-32", "Bad magic"):
        assert internal not in out.out + out.err, internal
    return code, out.out, out.err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("rundiff: error: "), err
    assert len(lines) == 1 or lines[1].strip().startswith("hint: "), err
    return lines[0]


# -- a log written here: exact counts -----------------------------------------------------------------


def test_two_damaged_members_cost_two_samples(tmp_path, capsys, reader):
    clean = _attempts(read_trajectory_run(str(_eval_log(tmp_path / "clean.eval", stored=True))))
    (tmp_path / "log").mkdir()
    log = _eval_log(tmp_path / "log" / "run.eval", stored=True)
    data = bytearray(log.read_bytes())
    rng = random.Random(33)
    hit = sorted(rng.sample(range(1, N + 1), 2))
    for i in hit:  # one flipped bit inside each member's data: its CRC no longer matches
        a, b = _member_span(log, f"samples/{i}_epoch_1.json")
        data[rng.randrange(a, b)] ^= 1 << rng.randrange(8)
    log.write_bytes(bytes(data))
    before = hash_tree(log.parent)
    run = read_trajectory_run(str(log))
    assert len(run.records) == N - 2 and _attempts(run) <= clean
    assert sorted(int(n) for n in set(range(1, N + 1)) - {int(k) for k in run.records}) == hit
    said = " | ".join(run.notes)
    assert "eval log run.eval: 2 of 50 samples unreadable (member CRC failed); the rest read" \
        in said, said
    code, out, _err = _cli(capsys, "ls", str(log), "--format", "json")
    assert code == 0
    (row,) = json.loads(out)
    assert row["tasks"] == N - 2
    assert any("2 of 50 samples unreadable (member CRC failed)" in n for n in row["fidelity"])
    assert hash_tree(log.parent) == before


def test_a_cut_tail_keeps_every_member_before_it(tmp_path, capsys, reader):
    log = _eval_log(tmp_path / "run.eval")
    cut_at = _member_span(log, "samples/31_epoch_1.json")[0] + 5  # inside sample 31
    data = log.read_bytes()[:cut_at]
    log.write_bytes(data)
    before = hash_tree(tmp_path)
    assert sniff_kind(str(log)) == "inspect"  # its directory is gone, its local headers are not
    run = read_trajectory_run(str(log))
    assert sorted(int(k) for k in run.records) == list(range(1, 31))
    said = " | ".join(run.notes)
    assert "its zip directory is lost (the file ends before it: cut short)" in said
    assert "header.json lost with its directory: eval spec from _journal/start.json" in said
    assert _unreadable(run) == (20, 50, "19 lost with the damaged end of the file, 1 member cut "
                                "short"), said
    assert run.model == "mockllm/model" and run.task_set == "mock_task"
    code, out, _ = _cli(capsys, "ls", str(log))
    assert code == 0 and "30 tasks" in out
    assert hash_tree(tmp_path) == before


@pytest.mark.parametrize("how", ["insert", "block"])
def test_inserted_bytes_or_a_zeroed_block_cost_only_the_samples_they_touch(tmp_path, reader, how):
    clean = _attempts(read_trajectory_run(str(_eval_log(tmp_path / "clean.eval"))))
    log = _eval_log(tmp_path / "run.eval")
    with zipfile.ZipFile(log) as zf:  # each sample's bytes: its local header to its data's end
        spans = {int(i.filename.split("/")[1].split("_")[0]): (i.header_offset,
                                                              _member_span(log, i.filename)[1])
                 for i in zf.infolist() if i.filename.startswith("samples/")}
    data = bytearray(log.read_bytes())
    rng = random.Random(17)
    at = rng.randrange(spans[2][0], spans[N][1])
    if how == "insert":
        data[at:at] = bytes(rng.getrandbits(8) for _ in range(200))
        touched = {i for i, (a, b) in spans.items() if a < at < b}
    else:
        at -= at % 512
        data[at:at + 512] = bytes(512)
        touched = {i for i, (a, b) in spans.items() if a < at + 512 and at < b}
    log.write_bytes(bytes(data))
    run = read_trajectory_run(str(log))
    got = _attempts(run)
    assert got <= clean
    assert {int(k) for k in run.records} >= set(range(1, N + 1)) - touched
    lost = _unreadable(run)
    assert lost is not None and lost[0] == N - len(got) and lost[1] == N, run.notes


def test_no_readable_sample_is_one_line_and_exit_2(tmp_path, capsys, reader):
    log = _eval_log(tmp_path / "run.eval", n=3, stored=True)
    data = bytearray(log.read_bytes())
    for i in (1, 2, 3):
        a, _b = _member_span(log, f"samples/{i}_epoch_1.json")
        data[a + 10] ^= 0x20
    log.write_bytes(bytes(data))
    before = hash_tree(tmp_path)
    with pytest.raises(InputError, match="all 3 of 3 sample"):
        read_trajectory_run(str(log))
    code, _out, err = _cli(capsys, "ls", str(log))
    assert code == 2
    line = _one_line(err)
    assert "eval log run.eval: all 3 of 3 sample(s) unreadable (member CRC failed); nothing to " \
           "read" in line
    assert "hint: the log was damaged after Inspect wrote it" in err
    code, _out, err = _cli(capsys, "trajectories", str(log), str(log))
    assert code == 2 and "eval log run.eval" in _one_line(err)
    assert hash_tree(tmp_path) == before


def test_a_damaged_header_falls_back_to_the_journal(tmp_path, reader):
    log = _eval_log(tmp_path / "run.eval", stored=True)
    data = bytearray(log.read_bytes())
    a, _b = _member_span(log, "header.json")
    data[a + 3] ^= 0x01
    log.write_bytes(bytes(data))
    run = read_trajectory_run(str(log))
    assert len(run.records) == N and run.model == "mockllm/model"
    said = " | ".join(run.notes)
    assert "header.json unreadable (member CRC failed): eval spec from _journal/start.json" in said


def test_not_a_zip_at_all_is_still_one_line(tmp_path, capsys, reader):
    log = tmp_path / "x.eval"
    log.write_bytes(b"PK\x03\x04 truncated")
    code, _out, err = _cli(capsys, "ls", f"traj:{log}")
    assert code == 2 and "not a readable Inspect .eval archive" in _one_line(err)


# -- the real logs --------------------------------------------------------------------------------------


def _damages(data: bytes, rng: random.Random):
    n = len(data)
    d = bytearray(data)
    for _ in range(4):
        i = rng.randrange(n)
        d[i] ^= 1 << rng.randrange(8)
    yield "flip", d
    d = bytearray(data)
    at = rng.randrange(n // 512) * 512
    d[at:at + 512] = bytes(512)
    yield "block", d
    yield "cut", bytearray(data[:rng.randrange(n // 3, n)])
    d = bytearray(data)
    at = rng.randrange(n)
    d[at:at] = bytes(rng.getrandbits(8) for _ in range(200))
    yield "insert", d


def test_real_logs_damaged_keep_what_reads(trajdata, tmp_path, capsys, reader):
    logs = sorted((trajdata / INSPECT).rglob("*.eval"))
    assert logs
    rng = random.Random(33)
    kept = lost = 0
    for src in logs:
        clean = _attempts(read_trajectory_run(str(src)))
        total = len(clean)
        for how, data in _damages(src.read_bytes(), rng):
            path = tmp_path / how / src.name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(bytes(data))
            before = hash_tree(path)
            try:
                run = read_trajectory_run(str(path))
            except InputError as exc:  # nothing read: one line in the user's words, a hint
                assert "\n" not in str(exc.args[0]) and exc.hint, exc
                assert f"eval log {src.name}" in str(exc.args[0]) or "not a readable" in str(exc)
                code, _out, err = _cli(capsys, "ls", f"traj:{path}")
                assert code == 2 and "eval log" in _one_line(err) + err
                lost += total
                continue
            got = _attempts(run)
            # what reads is what the clean log holds (an epoch whose primary is lost reads as
            # the primary: compare without the repeat index)
            assert {a[:1] + a[2:] for a in got} <= {a[:1] + a[2:] for a in clean}, (src, how)
            said = _unreadable(run)
            if said is not None:
                assert said[0] + len(got) == said[1] or (how == "cut" and said[1] <= total), \
                    (src.name, how, said, len(got))
            else:
                assert len(got) == total or how == "cut", (src.name, how, run.notes)
            assert all("\n" not in n for n in run.notes)
            kept += len(got)
            lost += total - len(got)
            assert hash_tree(path) == before
    assert kept > lost  # most of what damage did not touch still reads


@pytest.mark.slow
def test_hostile_bytes_in_an_eval_log(tmp_path_factory, monkeypatch):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    clean = _eval_log(tmp_path_factory.mktemp("hostile-eval") / "clean.eval", n=8).read_bytes()

    @settings(max_examples=60, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(edits=st.lists(st.tuples(st.integers(0, len(clean) - 1), st.integers(0, 255)),
                          max_size=20),
           cut=st.integers(0, len(clean)), insert=st.integers(0, 300),
           at=st.integers(0, len(clean)))
    def check(edits, cut, insert, at):
        data = bytearray(clean)
        for i, b in edits:
            data[i] = b
        data[at:at] = bytes((7 * k) % 256 for k in range(insert))
        data = data[:cut + insert]
        path = tmp_path_factory.mktemp("hostile-eval") / "run.eval"
        path.write_bytes(bytes(data))
        before = hash_tree(path)
        try:
            run = read_trajectory_run(str(path))
            assert all("\n" not in n for n in run.notes)
            assert len(run.records) <= 8
        except InputError as exc:
            assert "\n" not in str(exc.args[0]), exc
        assert hash_tree(path) == before

    check()
