"""Configs that hold serialized objects (rundiff_core.parsing.opaque): each blob is ONE short
opaque value that never differs between seeds of one config, while objects whose state is a
mapping stay mappings. Real files: Sacred's jsonpickle (tests/fixtures/realworld/sacred-jsonpickle),
Lightning's `!!python/...` hparams (tests/fixtures/realworld/yaml-pyobject, ../shared/realdata)."""

from __future__ import annotations

import base64
import json
import shutil
import struct
import sys
from pathlib import Path

import pytest

from rundiff_core import is_opaque, load_yaml_config, opaque_config
from rundiff_core.cli import main
from rundiff_core.engines.arms import arm_config, load_arms
from rundiff_core.resolve import open_source

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
CATNIP = REAL / "sacred-jsonpickle" / "catniplab-music-lds"
RUNS = CATNIP / "models"
PYOBJ = REAL / "yaml-pyobject"


def _expected(source: Path) -> dict:
    return json.loads((source / "expected.json").read_text())


def _text(value) -> str:
    return json.dumps(value, default=str)


# -- Sacred's jsonpickle ------------------------------------------------------------------------


def test_catniplab_blobs_become_equal_opaque_values_and_readable_arrays_are_read():
    exp = _expected(CATNIP)
    seen = []
    for rid in exp["run_ids"]:
        raw = json.loads((RUNS / rid / "config.json").read_text())
        notes: list[str] = []
        cfg = opaque_config(raw, notes, "config.json")
        assert cfg["seed"] == exp["files"][rid]["seed"]
        assert len(cfg) == exp["files"][rid]["config_keys"]
        # the torch distribution keeps its fields; its tensors are one placeholder each
        assert cfg["t_distrib"]["low"] == cfg["t_distrib"]["high"] == "<pickled torch.Tensor>"
        assert cfg["t_distrib"]["_batch_shape"] == []  # torch.Size(()) via py/seq
        # jsonpickled numpy arrays are their `values` (equal in all runs, per expected.json)
        assert cfg["learning_rates"] == raw["learning_rates"]["values"]
        text = _text(cfg)
        assert "py/" not in text and "gAKK" not in text  # no jsonpickle tag, no base64
        assert notes == ["config.json: 2 serialized value(s) shown as one opaque value each "
                         "(<pickled torch.Tensor> ×2); read as plain values: 4 numpy array(s) as "
                         "lists, 2 torch.Size as a list, 1 torch.distributions.uniform.Uniform as "
                         "its fields"]
        seen.append({k: v for k, v in cfg.items() if k != "seed"})
    # expected.json: the plain config is equal across runs, and t_distrib's py/b64 differs —
    # read through the rule, the five configs are equal except the seed
    assert exp["plain_config_equal_across_runs_ignoring_seed"] is True
    assert exp["blob_keys_that_differ_between_runs"] == ["t_distrib"]
    assert all(s == seen[0] for s in seen)


def test_catniplab_five_seeds_are_one_arm_and_another_config_is_another(tmp_path, capsys):
    root = tmp_path / "models"
    for rid in ("6", "7", "8", "9", "10"):
        shutil.copytree(RUNS / rid, root / rid)
    shutil.copytree(RUNS / "6", root / "11")  # a sixth run of another config (lr 0.001)
    cfg = json.loads((root / "11" / "config.json").read_text())
    cfg["lr"] = 0.001
    cfg["seed"] = 12345
    (root / "11" / "config.json").write_text(json.dumps(cfg))
    arms = load_arms(f"local:{root}")
    assert sorted(a.n for a in arms) == [1, 5]
    five = next(a for a in arms if a.n == 5)
    assert sorted(r.run_id for r in five.seeds) == ["10", "6", "7", "8", "9"]
    keys = {json.dumps(arm_config(r), sort_keys=True, default=str) for r in five.seeds}
    assert len(keys) == 1
    # rank: two groups, the 5 seeds' mean against the lone run
    assert main(["rank", str(root), "--metric", "validLoss", "--format", "json"]) == 0
    order = json.loads(capsys.readouterr().out)["metrics"][0]["order"]
    assert sorted(row["n"] for row in order) == [1, 5]


def test_rank_of_the_real_folder_is_one_arm_taken_run_by_run(capsys):
    assert main(["rank", str(RUNS), "--metric", "validLoss"]) == 0
    out = capsys.readouterr().out
    assert "every run given is a seed of one arm (5 runs" in out
    assert "gAKK" not in out


def test_diff_of_two_seeds_prints_no_base64_and_only_the_seed(capsys):
    a, b = RUNS / "6", RUNS / "7"
    exp = _expected(CATNIP)["files"]
    assert main(["diff", str(a), str(b), "--metric", "validLoss", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(c["key"], c["old"], c["new"]) for c in out["config_changes"]] == [
        ("seed", exp["6"]["seed"], exp["7"]["seed"])]
    assert main(["diff", str(a), str(b), "--metric", "validLoss", "--all-keys"]) == 0
    text = capsys.readouterr().out
    section = text.split("## Config diff", 1)[1].split("##", 1)[0]
    assert section.strip().splitlines() == [f"- `seed`: {exp['6']['seed']} → {exp['7']['seed']}"]
    assert "gAKK" not in text and "py/b64" not in text and "py/reduce" not in text


def test_sacred_run_reads_its_config_through_the_rule_and_says_so():
    src = open_source(f"local:{RUNS}")
    run = src.load_run(next(r for r in src.list_runs() if r.run_id == "6"))
    assert run.flat_config["t_distrib.low"] == "<pickled torch.Tensor>"
    assert any("serialized value(s) shown as one opaque value each" in n for n in run.fidelity)
    # the experiment name is a number drawn per run: seeds are grouped by main file and config
    assert any("experiment '204758' (a bare number" in n for n in run.fidelity)
    assert sorted(r.run_id for r in src.seed_siblings(src.list_runs()[0])) == ["10", "6", "7", "8", "9"]


@pytest.mark.parametrize("blob,want", [
    ({"py/b64": "AAAA"}, "<binary data>"),
    ({"py/function": "__main__.make_env"}, "<python function __main__.make_env>"),
    ({"py/type": "torch.optim.adam.Adam"}, "<python type torch.optim.adam.Adam>"),
    ({"py/id": 3}, "<python reference>"),
    ({"py/tuple": [1, {"py/tuple": [2, 3]}]}, [1, [2, 3]]),
    ({"py/set": [3, 1, 2]}, [1, 2, 3]),
    ({"py/object": "numpy.float64", "dtype": "float64", "value": 0.25}, 0.25),
    ({"py/object": "numpy.ndarray", "dtype": "float32", "shape": [512, 64], "values": "QUJD" * 60},
     "<numpy.ndarray float32 (512, 64)>"),
    ({"py/object": "argparse.Namespace", "lr": 0.1, "layers": {"py/tuple": [64, 64]}},
     {"lr": 0.1, "layers": [64, 64]}),
    ({"py/object": "foo.Bar", "py/state": {"a": 1}}, {"a": 1}),
    ({"py/object": "foo.Bar", "py/state": {"py/b64": "AAAA"}}, "<python object foo.Bar>"),
    ({"py/reduce": [{"py/type": "collections.OrderedDict"}, {"py/tuple": []}, None, None,
                    {"py/tuple": [{"py/tuple": ["a", 1]}]}]}, {"a": 1}),
    ({"py/reduce": [{"py/function": "torch._utils._rebuild_parameter"}, {"py/tuple": []}]},
     "<pickled torch.nn.Parameter>"),
    ({"py/reduce": [{"py/type": "torch.device"}, {"py/tuple": ["cuda", 0]}]}, ["cuda", 0]),
    ({"py/reduce": [{"py/function": "mylib.load"}, {"py/tuple": [{"py/b64": "AAAA"}]}]},
     "<pickled mylib.load>"),
])
def test_jsonpickle_forms(blob, want):
    assert opaque_config({"x": blob})["x"] == want


def test_a_jsonpickled_numpy_scalar_is_decoded_from_its_bytes():
    """jsonpickle without its numpy extension pickles np.float64 by reduce: dtype + raw bytes."""
    dtype = {"py/reduce": [{"py/type": "numpy.dtype"}, {"py/tuple": ["f8", False, True]},
                           {"py/tuple": [3, "<", None, None, None, -1, -1, 0]}]}
    raw = base64.b64encode(struct.pack("<d", 0.1)).decode()
    blob = {"py/reduce": [{"py/function": "numpy.core.multiarray.scalar"},
                          {"py/tuple": [dtype, {"py/b64": raw}]}]}
    assert opaque_config({"lr": blob})["lr"] == 0.1


def test_long_base64_text_is_opaque_but_long_prose_and_paths_are_not():
    blob = base64.b64encode(bytes(range(256)) * 2).decode()
    path = "/data/" + "/".join(["experiments", "run_2024-01-01", "checkpoints"] * 12)
    prose = "a long free-text description of the experiment " * 10
    hexdigest = "0123456789abcdef" * 20
    cfg = opaque_config({"blob": blob, "path": path, "prose": prose, "hex": hexdigest})
    assert cfg["blob"] == "<base64 text>"
    assert cfg["path"] == path and cfg["prose"] == prose and cfg["hex"] == hexdigest
    assert is_opaque(cfg["blob"]) and not is_opaque(path)


def test_nothing_changes_in_a_plain_config_and_no_note_is_written():
    raw = {"lr": 0.1, "model": {"layers": [64, 64], "act": "relu"}, "tags": ["a"], "n": None}
    notes: list[str] = []
    assert opaque_config(raw, notes) == raw and notes == []


def test_a_config_nested_beyond_recursion_is_kept_with_a_note():
    deep: dict = {}
    cur = deep
    for _ in range(sys.getrecursionlimit() + 100):
        cur["a"] = {}
        cur = cur["a"]
    notes: list[str] = []
    assert opaque_config(deep, notes, "config.json") is deep
    assert notes == ["config.json: nested too deeply to look for serialized objects; kept as read"]


# -- YAML python tags ---------------------------------------------------------------------------


def test_lightning_python_name_tag_is_one_opaque_value():
    src = PYOBJ / "carlschader-arcface-lightning"
    exp = _expected(src)["files"]["lightning_logs/version_0/hparams.yaml"]
    notes: list[str] = []
    cfg = load_yaml_config((src / "lightning_logs/version_0/hparams.yaml").read_bytes(),
                           "hparams.yaml", notes)
    assert sorted(cfg) == exp["top_level_keys"]
    assert cfg["loss_fn"] == "<python name __main__.arcface_loss>"  # was '' (the empty scalar)
    for key, text in exp["top_level_scalar_text"].items():
        assert cfg[key] == (float(text) if "." in text else int(text)), key
    assert notes == ["hparams.yaml: 1 serialized value(s) shown as one opaque value each "
                     "(<python name __main__.arcface_loss>)"]


def test_lightning_python_tuple_stays_a_list_and_says_nothing():
    src = PYOBJ / "arshya-byol3d-lightning"
    exp = _expected(src)["files"]
    for rel, info in exp.items():
        if not rel.endswith("hparams.yaml"):
            continue
        notes: list[str] = []
        cfg = load_yaml_config((src / rel).read_bytes(), "hparams.yaml", notes)
        assert sorted(cfg) == info["top_level_keys"]
        assert cfg["optimizer"]["betas"] == [0.9, 0.999]
        assert notes == []


def test_local_reads_lightning_hparams_through_the_rule(tmp_path):
    src = PYOBJ / "carlschader-arcface-lightning" / "lightning_logs" / "version_0"
    run_dir = tmp_path / "version_0"
    run_dir.mkdir()
    shutil.copy(src / "hparams.yaml", run_dir / "hparams.yaml")
    (run_dir / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    source = open_source(f"local:{run_dir}")
    run = source.load_run(source.list_runs()[0])
    assert run.config["loss_fn"] == "<python name __main__.arcface_loss>"
    assert any("hparams.yaml: 1 serialized value(s)" in n for n in run.fidelity)


def test_argparse_namespace_state_is_the_config(realdata):
    path = realdata / "metrics-lightning-csv-toadgan" / "lightning_logs" / "version_4" / "hparams.yaml"
    notes: list[str] = []
    cfg = load_yaml_config(path.read_bytes(), "hparams.yaml", notes)
    assert cfg["opt"]["batch_size"] == 256 and cfg["opt"]["manualSeed"] == 9636
    assert cfg["opt"]["device"] == ["cuda", 0]  # torch.device's plain arguments, as before
    assert notes == ["hparams.yaml: read as plain values: 1 argparse.Namespace as its fields, "
                     "1 torch.device as its arguments"]


def test_a_pickled_module_keeps_its_structure_and_drops_its_weights(realdata):
    """FractalDB's 699 KB hparams.yaml: a `__main__.Backbone` nn.Module with pickled weights."""
    path = realdata / "tb-lightning-fractaldb" / "lightning_logs" / "version_0" / "hparams.yaml"
    raw = path.read_bytes()
    assert raw.count(b"!!binary") == 4
    notes: list[str] = []
    cfg = load_yaml_config(raw, "hparams.yaml", notes)
    assert cfg["learning_rate"] == 0.001
    l1 = cfg["backbone"]["_modules"]["l1"]
    assert (l1["in_features"], l1["out_features"]) == (784, 128)
    assert l1["_parameters"] == {"weight": "<pickled torch.nn.Parameter>",
                                 "bias": "<pickled torch.nn.Parameter>"}
    assert len(_text(cfg)) < 2000  # from 699 KB
    assert "(<pickled torch.nn.Parameter> ×4)" in notes[0]


def test_sb3_zoo_ordered_dicts_read_as_before(realdata):
    path = realdata / "sb3-zoo-ppo-clipping" / "logs" / "ppo" / "CartPole-v1_1" / "CartPole-v1" / "config.yml"
    from rundiff_core import load_yaml_plain

    assert load_yaml_config(path.read_bytes()) == load_yaml_plain(path.read_bytes())


def test_pyyaml_dumps_of_numpy_values_are_read_or_opaque():
    np = pytest.importorskip("numpy")
    yaml = pytest.importorskip("yaml")
    text = yaml.dump({"lr": np.float64(0.1), "steps": np.int64(3), "small": np.arange(3.0),
                      "grid": np.eye(2, dtype=np.float32), "big": np.zeros((10, 10), np.float32),
                      "blob": b"\x00\x01", "dtype": np.dtype("float32")})
    notes: list[str] = []
    cfg = load_yaml_config(text, "hparams.yaml", notes)
    assert cfg["lr"] == 0.1 and cfg["steps"] == 3
    assert cfg["small"] == [0.0, 1.0, 2.0] and cfg["grid"] == [[1.0, 0.0], [0.0, 1.0]]
    assert cfg["big"] == "<numpy.ndarray float32 (10, 10)>"
    assert cfg["blob"] == "<binary data>" and cfg["dtype"] == "f4"
    assert "2 serialized value(s)" in notes[0]


def test_torch_pickles_with_different_storage_keys_read_the_same():
    """The storage key in a torch pickle is a memory address: two runs of one config differ in
    those bytes only, so the placeholder must not depend on them."""
    def dump(key: str) -> str:
        payload = base64.b64encode(b"\x80\x02storage" + key.encode() + b"\x00" * 8).decode()
        return ("w: !!python/object/apply:torch._utils._rebuild_parameter\n"
                "- !!python/object/apply:torch._utils._rebuild_tensor_v2\n"
                "  - !!python/object/apply:torch.storage._load_from_bytes\n"
                f"    - !!binary |\n      {payload}\n  - 0\n")
    a, b = load_yaml_config(dump("94794115446656")), load_yaml_config(dump("94153112402960"))
    assert a == b == {"w": "<pickled torch.nn.Parameter>"}


def test_nothing_is_executed(tmp_path):
    marker = tmp_path / "pwned"
    text = (f"x: !!python/object/apply:os.system ['touch {marker}']\n"
            "y: !!python/object/new:subprocess.Popen [['touch', 'x']]\n"
            "z: !!python/name:os.system ''\n")
    cfg = load_yaml_config(text)
    assert not marker.exists()
    assert cfg["z"] == "<python name os.system>"


def test_an_alias_bomb_is_refused_as_before():
    from rundiff_core import YamlRefused

    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=False))
    with pytest.raises(YamlRefused):
        load_yaml_config(bomb, "bomb.yaml")
