"""neptune 1.x offline queues: runs written by the real `neptune` client (mode="offline"), read back
point by point, plus the replay quirks (null steps, rotation, clear/delete, torn lines, crashes)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil

import pytest

from rundiff_core.detect import sniff_path
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import AdapterContract, WrittenRun, hash_tree

neptune = pytest.importorskip("neptune")

QUIET = dict(capture_hardware_metrics=False, capture_stdout=False, capture_stderr=False,
             capture_traceback=False, git_ref=False, source_files=[])
T0 = 1_700_000_000.0
PARAMS = {"lr": 0.01, "batch": 32, "opt": {"name": "adam", "beta": 0.9}}


def _folder(run) -> str:
    """The container folder the client writes to (found by the run's uuid)."""
    uuid = run._id
    base = os.path.join(os.getcwd(), ".neptune", "offline")
    (name,) = [d for d in os.listdir(base) if d.startswith(f"run__{uuid}")]
    return os.path.join(base, name)


@pytest.fixture(scope="module")
def legacy_runs(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("neptune1")
    out: dict = {"root": str(root / ".neptune")}
    with contextlib.chdir(root):
        # 1. the contract run: params, secret, null and decimal steps, a batch, an atom, strings
        run = neptune.init_run(mode="offline", project="ws/proj", name="baseline", tags=["b", "a"], **QUIET)
        run["parameters"] = PARAMS
        run["seed"] = 5
        run["config/api_token"] = "s3cr3t-value"
        points = []
        for i in range(40):
            v, t = 1.0 / (i + 1), T0 + i
            run["train/loss"].append(v, timestamp=t)  # step None: the series' last step + 1
            points.append((float(i), "train/loss", v, t))
        for i, s in enumerate([0.5, 1.25, 2.0]):
            run["train/acc"].append(0.1 * i, step=s, timestamp=T0 + 100 + i)
            points.append((s, "train/acc", 0.1 * i, T0 + 100 + i))
        run["train/acc"].append(0.9, timestamp=T0 + 200)  # null after 2.0 → 3.0
        points.append((3.0, "train/acc", 0.9, T0 + 200))
        run["eval/lr"].extend([1e-3, 5e-4], steps=[10, 20], timestamps=[T0 + 300, T0 + 301])
        points += [(10.0, "eval/lr", 1e-3, T0 + 300), (20.0, "eval/lr", 5e-4, T0 + 301)]
        run["eval/f1"] = 0.9
        run["logs/text"].append("hello")
        out["main"] = _folder(run)
        run.stop()
        s, k, v, t = zip(*points, strict=True)
        out["main_history"] = make_history(s, k, v, t)

        # 2. rotated queue files: the client's 64 MiB limit shrunk to 1 KiB
        from neptune.core.components.queue.disk_queue import DiskQueue

        defaults = DiskQueue.__init__.__defaults__
        DiskQueue.__init__.__defaults__ = (1024, *defaults[1:])
        try:
            run = neptune.init_run(mode="offline", project="ws/proj", name="rotated", **QUIET)
            for i in range(200):
                run["loss"].append(float(i), step=i, timestamp=T0 + i)
            out["rotated"] = _folder(run)
            run.stop()
        finally:
            DiskQueue.__init__.__defaults__ = defaults

        # 3. a crash: the client marks sys/failed when the with-block raises
        with contextlib.suppress(RuntimeError), neptune.init_run(
                mode="offline", project="ws/proj", name="crashed",
                **{**QUIET, "capture_traceback": True}) as run:
            run["loss"].append(1.0)
            out["crashed"] = _folder(run)
            raise RuntimeError("boom")

        # 4. clear, delete and a step going backwards
        run = neptune.init_run(mode="offline", project="ws/proj", name="edited", **QUIET)
        run["a"].extend([1.0, 2.0, 3.0])
        run["a"].clear()
        run["a"].append(7.0)
        run["gone"].extend([1.0, 2.0])
        del run["gone"]
        run["back"].append(1.0, step=5)
        run["back"].append(2.0, step=3)
        out["edited"] = _folder(run)
        run.stop()
    return out


class TestNeptuneLegacyContract(AdapterContract):
    adapter = "neptune"

    @pytest.fixture
    def extra_foreign_paths(self, near_misses):
        return near_misses

    @pytest.fixture
    def written_run(self, legacy_runs) -> WrittenRun:
        folder = legacy_runs["main"]
        return WrittenRun(path=folder, address=f"neptune:{folder}", history=legacy_runs["main_history"],
                          config={**PARAMS, "seed": 5}, summary={"eval/f1": 0.9})

    @pytest.fixture
    def corrupt_run(self, legacy_runs, tmp_path) -> str:
        folder = tmp_path / "run__bad"
        shutil.copytree(legacy_runs["main"], folder)
        with open(folder / "data-1.log", "ab") as fh:
            fh.write(b'not json at all\n{"obj": {"type": "LogFloats", "path": ["train", "lo')
        return f"neptune:{folder}"


def test_metadata_name_tags_and_secret(legacy_runs):
    run = load_run(f"neptune:{legacy_runs['main']}")
    assert run.name == "baseline" and run.meta["tags"] == ["a", "b"]
    meta = json.load(open(os.path.join(legacy_runs["main"], "metadata.json")))
    assert run.run_id == meta["containerId"] and run.meta["creation_time"] == meta["createdAt"]
    assert run.meta["format"] == "neptune-1.x" and run.status == "unknown" and run.seed == 5
    assert run.meta["path"] == legacy_runs["main"] and run.meta["mode"] == "offline"
    assert run.config["api_token"] == "***REDACTED***" and "s3cr3t" not in repr(run.to_record())
    assert any("1 string series point(s)" in n for n in run.fidelity)


def test_rotated_files_replay_in_version_order(legacy_runs):
    files = [f for f in os.listdir(legacy_runs["rotated"]) if f.startswith("data-")]
    assert len(files) > 3, "the client did not rotate"
    h = load_run(f"neptune:{legacy_runs['rotated']}").history()
    assert h["step"].tolist() == [float(i) for i in range(200)]
    assert h["value"].tolist() == [float(i) for i in range(200)]
    assert h["wall_time"].tolist() == [T0 + i for i in range(200)]


def test_crashed_run_is_crashed(legacy_runs):
    run = load_run(f"neptune:{legacy_runs['crashed']}")
    assert run.status == "crashed" and run.name == "crashed"
    assert run.history()["value"].tolist() == [1.0]


def test_clear_delete_and_backward_steps(legacy_runs):
    run = load_run(f"neptune:{legacy_runs['edited']}")
    h = run.history()
    a = h[h["key"] == "a"]
    assert a["value"].tolist() == [7.0] and a["step"].tolist() == [0.0]
    assert "gone" not in set(h["key"].astype(str))
    back = h[h["key"] == "back"]
    assert back["step"].tolist() == [5.0, 3.0]  # kept, and said
    notes = " ".join(run.fidelity)
    assert "a: cleared by the run (ClearFloatLog); 3 earlier point(s)" in notes
    assert "gone: deleted by the run (DeleteAttribute); 2 point(s)" in notes
    assert "1 point(s) in 1 series have a step not above the previous one (back)" in notes


def test_neptune_folder_lists_every_run_and_is_sniffed(legacy_runs):
    runs = load_runs(legacy_runs["root"])  # bare `.neptune` path
    assert sorted(r.name for r in runs) == ["baseline", "crashed", "edited", "rotated"]
    assert sniff_path(os.path.join(legacy_runs["main"], "data-1.log")).spec.name == "neptune"
    one = load_run(f"neptune:{legacy_runs['root']}#{os.path.basename(legacy_runs['rotated'])}")
    assert one.name == "rotated"


def test_torn_tail_and_corrupt_lines_are_counted(legacy_runs, tmp_path):
    folder = tmp_path / "run__x"
    shutil.copytree(legacy_runs["rotated"], folder)
    last = max((f for f in os.listdir(folder) if f.startswith("data-")), key=lambda f: int(f[5:-4]))
    with open(folder / last, "ab") as fh:
        fh.write(b'{"obj": {"type": "LogFloats", "path": ["loss"], "values": [{"val')
    first = folder / "data-1.log"
    lines = first.read_bytes().split(b"\n")
    lines.insert(2, b"{garbage")
    first.write_bytes(b"\n".join(lines))
    run = load_run(f"neptune:{folder}")
    assert len(run.history()) == 200
    notes = " ".join(run.fidelity)
    assert "truncated last line dropped" in notes and "1 corrupt operation line(s) skipped (data-1.log:3)" in notes


def test_async_folder_missing_synced_operations_says_so(legacy_runs, tmp_path):
    """An async folder after a partial sync: the client deleted the acknowledged data files.
    (Built from a real rotated offline queue, with the files a sync would have removed deleted.)"""
    folder = tmp_path / ".neptune" / "async" / os.path.basename(legacy_runs["rotated"])
    shutil.copytree(legacy_runs["rotated"], folder)
    files = sorted((f for f in os.listdir(folder) if f.startswith("data-")), key=lambda f: int(f[5:-4]))
    for name in files[:2]:
        os.remove(folder / name)
    run = load_run(f"neptune:{folder}")
    first = int(files[2][5:-4])
    assert run.history()["step"].min() > 0
    assert any(f"operations before version {first} are gone" in n for n in run.fidelity)


def test_model_containers_are_not_runs(legacy_runs, tmp_path):
    base = tmp_path / ".neptune" / "offline"
    shutil.copytree(legacy_runs["rotated"], base / "model__abc__1__x")
    meta = json.load(open(base / "model__abc__1__x" / "metadata.json"))
    meta["containerType"] = "model"
    json.dump(meta, open(base / "model__abc__1__x" / "metadata.json", "w"))
    shutil.copytree(legacy_runs["crashed"], base / os.path.basename(legacy_runs["crashed"]))
    assert [r.name for r in load_runs(f"neptune:{tmp_path / '.neptune'}")] == ["crashed"]


def test_reading_leaves_the_queue_untouched(legacy_runs):
    before = hash_tree(legacy_runs["root"])
    for run in load_runs(f"neptune:{legacy_runs['root']}"):
        run.history()
    assert hash_tree(legacy_runs["root"]) == before
