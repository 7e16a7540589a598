"""SB3 logs with damage cost only the damaged line or cell, never the file (issue 33).

Runs are written here by the installed Stable-Baselines3 (its `Monitor` wrapper over two CartPole
envs stepped with seeded random actions — 192 and 30 episodes — and its CSV logger for
`progress.csv`), copied, and damaged with a fixed seed: a half-written last line (a live run's
normal state), a bad number, `nan`/`inf`/empty in the time column or in x, a line with a cell too
many, bits flipped, 512 bytes zeroed. Every case: no traceback, the input untouched, the points
of every undamaged line kept (≥ 90%, most cases all but one episode), no damaged value used as a
sort key, and a note naming the line and what was skipped.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rundiff_core.resolve import load_run
from rundiff_core.testing import hash_tree

EPISODES = (192, 30)  # per env: 222 in all, the second file small (its sniff window holds it all)


@pytest.fixture(scope="module")
def sb3_run(tmp_path_factory) -> Path:
    pytest.importorskip("stable_baselines3")
    import gymnasium as gym
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.monitor import Monitor

    out = tmp_path_factory.mktemp("sb3") / "ppo-cartpole_s3"
    out.mkdir()
    for k, episodes in enumerate(EPISODES):
        env = Monitor(gym.make("CartPole-v1"), str(out / str(k)))
        env.reset(seed=k)
        env.action_space.seed(k)
        done = 0
        while done < episodes:
            _obs, _r, term, trunc, _info = env.step(env.action_space.sample())
            if term or trunc:
                done += 1
                env.reset()
        env.close()
    logger = configure(str(out), ["csv"])
    rng = np.random.default_rng(3)
    for i in range(60):
        logger.record("time/total_timesteps", (i + 1) * 2048)
        logger.record("rollout/ep_rew_mean", float(20 + i + rng.normal()))
        if i:
            logger.record("train/loss", float(1 / i))
        logger.dump(step=(i + 1) * 2048)
    logger.close()
    return out


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _series(run, key: str):
    h = run.history([key])
    h = h[h["key"].astype(str) == key]
    return list(zip(h["step"].tolist(), h["value"].tolist(), strict=True))


def _read(folder: Path):
    before = hash_tree(folder)
    run = load_run(f"local:{folder}")
    rewards = _series(run, "episode/reward")
    lengths = _series(run, "episode/length")
    progress = _series(run, "rollout/ep_rew_mean")
    assert hash_tree(folder) == before  # read-only
    return run, rewards, lengths, progress


def _lines(path: Path) -> list[str]:
    return path.read_text().split("\n")


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines))


def test_clean_run_reads_every_episode(sb3_run):
    run, rewards, lengths, progress = _read(sb3_run)
    assert len(rewards) == len(lengths) == sum(EPISODES) and len(progress) == 60
    assert [s for s, _ in rewards] == sorted(s for s, _ in rewards)


@pytest.mark.parametrize("cut", [3, 7, 12])
def test_a_half_written_last_line_costs_that_line(sb3_run, tmp_path, cut):
    """The issue's case: the 30-episode file's last line cut mid-way dropped the whole file."""
    _, clean, _, _ = _read(sb3_run)
    folder = _copy(sb3_run, tmp_path / "run")
    small = folder / "1.monitor.csv"
    small.write_bytes(small.read_bytes()[:-cut])  # no line end: a line being written
    run, rewards, lengths, _ = _read(folder)
    assert len(rewards) == len(lengths) == sum(EPISODES) - 1
    notes = " | ".join(run.fidelity)
    assert "1.monitor.csv: the last line" in notes and "half-written" in notes and "skipped" in notes
    assert "not a Monitor CSV" not in notes


@pytest.mark.parametrize("cell", ["nan", "inf", "-inf", "", "4.2x"])
def test_a_bad_time_is_a_skipped_episode_never_a_sort_key(sb3_run, tmp_path, cell):
    """The issue's case: `nan` in t sorted that episode last and made its reward the final one."""
    _, clean, clean_len, _ = _read(sb3_run)
    folder = _copy(sb3_run, tmp_path / "run")
    path = folder / "0.monitor.csv"
    lines = _lines(path)
    r, ln, _t = lines[7].split(",")  # episode 6 of env 0 (line 8)
    lines[7] = ",".join([r, ln, cell])
    _write(path, lines)
    run, rewards, lengths, _ = _read(folder)
    assert len(rewards) == len(lengths) == sum(EPISODES) - 1
    assert rewards[-1] == clean[-1]  # the final reward is still the last episode's
    assert lengths[-1] == clean_len[-1]  # its steps still count in x: the last x is unchanged
    assert {s for s, _ in rewards} < {s for s, _ in clean}
    notes = " | ".join(run.fidelity)
    assert "0.monitor.csv: 1 episode(s) whose time t is" in notes and "(line 8)" in notes
    if cell == "4.2x":
        assert "line 8 t='4.2x'" in notes


def test_a_bad_reward_costs_the_reward_point_alone(sb3_run, tmp_path):
    _, clean, clean_len, _ = _read(sb3_run)
    folder = _copy(sb3_run, tmp_path / "run")
    path = folder / "0.monitor.csv"
    lines = _lines(path)
    _r, ln, t = lines[9].split(",")
    lines[9] = ",".join(["1O.0", ln, t])  # a letter O for a zero
    _write(path, lines)
    run, rewards, lengths, _ = _read(folder)
    assert len(rewards) == sum(EPISODES) - 1 and lengths == clean_len
    notes = " | ".join(run.fidelity)
    assert "1 cell(s) not a number skipped (line 10 r='1O.0')" in notes


def test_a_bad_length_loses_its_episode_and_says_x_is_short(sb3_run, tmp_path):
    _, clean, _, _ = _read(sb3_run)
    folder = _copy(sb3_run, tmp_path / "run")
    path = folder / "1.monitor.csv"
    lines = _lines(path)
    r, _l, t = lines[4].split(",")
    lines[4] = ",".join([r, "", t])
    _write(path, lines)
    run, rewards, lengths, _ = _read(folder)
    assert len(rewards) == len(lengths) == sum(EPISODES) - 1
    assert "whose length l is empty or not a number skipped (line 5)" in " | ".join(run.fidelity)


def test_a_line_with_a_cell_too_many_is_skipped_and_counted(sb3_run, tmp_path):
    folder = _copy(sb3_run, tmp_path / "run")
    path = folder / "0.monitor.csv"
    lines = _lines(path)
    lines[20] += ",7"
    _write(path, lines)
    run, rewards, _, _ = _read(folder)
    assert len(rewards) == sum(EPISODES) - 1
    assert "0.monitor.csv: 1 line(s) with the wrong number of cells skipped (line 21: 4 of 3 cells" in \
        " | ".join(run.fidelity)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["flip8", "zero512"])
def test_random_damage_costs_the_lines_it_touches(sb3_run, tmp_path, kind, seed):
    _, clean, _, clean_progress = _read(sb3_run)
    folder = _copy(sb3_run, tmp_path / "run")
    path = folder / "0.monitor.csv"
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    start = data.index(b"\n", data.index(b"\n") + 1) + 1  # the rows, after the comment and header
    touched: set[int] = set()
    if kind == "flip8":
        for off in rng.integers(start, len(data) - 1, 8).tolist():
            line = data[:off].count(b"\n")
            touched |= {line, line + 1} if data[off] == 0x0A else {line}  # a line end joins two
            data[off] ^= 1 << int(rng.integers(0, 7))  # ASCII stays ASCII
    else:
        off = int(rng.integers(start, len(data) - 600))
        touched |= set(range(data[:off].count(b"\n"), data[:off + 512].count(b"\n") + 1))
        data[off:off + 512] = bytes(512)
    path.write_bytes(bytes(data))
    run, rewards, lengths, progress = _read(folder)
    assert len(rewards) >= len(clean) - len(touched)  # every line the damage did not touch
    if kind == "flip8":  # 512 zeroed bytes are ~28 of this 3.7 KB file's 194 lines
        assert len(rewards) >= 0.9 * len(clean)
    assert progress == clean_progress  # another file: untouched
    if len(rewards) < len(clean):  # (a digit flipped to a digit is a number still: no trace)
        assert any("0.monitor.csv:" in n for n in run.fidelity)  # what was skipped is said


def test_progress_csv_damage_costs_the_row_or_cell(sb3_run, tmp_path):
    _, _, _, clean = _read(sb3_run)
    folder = _copy(sb3_run, tmp_path / "run")
    path = folder / "progress.csv"
    lines = _lines(path)
    header = lines[0].split(",")
    x, m = header.index("time/total_timesteps"), header.index("rollout/ep_rew_mean")
    row = lines[10].split(",")
    row[m] = "2O.5"  # a bad number: that cell alone
    lines[10] = ",".join(row)
    row = lines[20].split(",")
    row[x] = "nan"  # no x: that row's points
    lines[20] = ",".join(row)
    text = "\n".join(lines).rstrip("\n")
    path.write_text(text[: -5])  # and the last line half-written
    run, _, _, progress = _read(folder)
    assert len(progress) == len(clean) - 3 >= 0.9 * len(clean)
    assert set(progress) < set(clean)
    notes = " | ".join(run.fidelity)
    assert "progress.csv: 1 cell(s) not a number skipped (line 11 rollout/ep_rew_mean='2O.5')" in notes
    assert "progress.csv: 1 row(s) whose time/total_timesteps is NaN skipped (line 21)" in notes
    assert "progress.csv: the last line" in notes and "half-written" in notes


def test_monitor_files_of_other_shapes_still_read(tmp_path):
    """Extra info columns (Monitor's info_keywords), quoted cells, CRLF line ends."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "0.monitor.csv").write_text(
        '#{"t_start": 1700000000.0, "env_id": "X"}\r\nr,l,t,is_success,note\r\n'
        '1.0,10,0.5,True,"a, b"\r\n2.0,12,1.5,False,c\r\n')
    (folder / "1.monitor.csv").write_text('#{"t_start": 1700000000.0}\nr,l,t\n3.0,5,1.0\n')
    run = load_run(f"local:{folder}")
    rewards = _series(run, "episode/reward")
    assert rewards == [(10.0, 1.0), (15.0, 3.0), (27.0, 2.0)]
    assert os.path.exists(folder / "0.monitor.csv")


@pytest.mark.parametrize("damage", ["none", "nan-time", "nan-reward"])
def test_the_fast_read_and_the_careful_read_agree(sb3_run, tmp_path, monkeypatch, damage):
    """A clean CSV goes through pyarrow; the careful line-by-line read must give the same."""
    from rundiff_adapters.local import sniff

    folder = _copy(sb3_run, tmp_path / "run")
    if damage != "none":
        path = folder / "0.monitor.csv"
        lines = _lines(path)
        r, ln, t = lines[7].split(",")
        lines[7] = ",".join([r, ln, "nan"] if damage == "nan-time" else ["nan", ln, t])
        _write(path, lines)
    fast = load_run(f"local:{folder}")
    fast_h, fast_notes = fast.history(), fast.fidelity
    calls: list[int] = []
    monkeypatch.setattr(sniff, "_read_arrow_csv", lambda *a: calls.append(1))  # None: read carefully
    monkeypatch.setattr(sniff, "_RECENT", {})  # no table kept from the fast read
    careful = load_run(f"local:{folder}")
    assert careful.history().equals(fast_h) and careful.fidelity == fast_notes
    assert calls  # the careful read did run
