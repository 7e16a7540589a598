"""rundiff_core.read_run_config / read_config_files: the one reader of the config files beside a
run (the local layouts' and the TensorBoard source's), on files written as scripts write them."""

from __future__ import annotations

import json

import pytest
import yaml

from rundiff_core import RUN_CONFIG_FILES, read_config_file, read_run_config


@pytest.mark.parametrize("text,want", [
    (json.dumps({"lr": 0.1, "name": "x"}, indent=2), {"lr": 0.1, "name": "x"}),  # json.dump(vars(args))
    ("Namespace(lr=0.1, name='x', flag=True, ids=[1, 2])",  # str(args)
     {"lr": 0.1, "name": "x", "flag": True, "ids": [1, 2]}),
    ("lr: 0.1\nname: x\n", {"lr": 0.1, "name": "x"}),  # yaml, or f.write(f"{k}: {v}\n")
    ("lr : 0.1 \nname : x \n", {"lr": 0.1, "name": "x"}),  # '{} : {} \n'.format(k, v)
    ("###### ARGS::\nlr:0.1\nname:x\n", {"lr": 0.1, "name": "x"}),  # "{}:{}\n"
    ("batch_size,32\nlr,0.001\nopt,adam", {"batch_size": 32, "lr": 0.001, "opt": "adam"}),  # k,v
    ("lr=0.1\nsched=None\n", {"lr": 0.1, "sched": None}),
])
def test_args_txt_as_scripts_write_it(tmp_path, text, want):
    path = tmp_path / "args.txt"
    path.write_text(text)
    notes: list[str] = []
    assert read_config_file(str(path), notes) == want


def test_a_command_line_or_prose_in_args_txt_is_no_config(tmp_path):
    path = tmp_path / "args.txt"
    for text in ("python train.py --lr 0.1", "the args were lost\nsee the log"):
        path.write_text(text)
        notes: list[str] = []
        assert read_config_file(str(path), notes) is None
        assert notes == ["args.txt: not JSON, YAML, an argparse Namespace or key/value lines; ignored"]


def test_names_and_order():
    assert RUN_CONFIG_FILES == ("config.json", "config.yaml", "config.yml", "hparams.yaml",
                                "params.yaml", "params.json", "args.json", "args.yaml", "args.txt",
                                "opt.yaml", "hyp.yaml", "variant.json")


def test_nothing_beside_gives_the_base_unchanged(tmp_path):
    got = read_run_config(str(tmp_path), base={"lr": 0.1})
    assert got.config == {"lr": 0.1} and got.notes == [] and got.files == {}
    assert got.sources == ["hparams plugin"]


def test_hyp_yaml_alone_goes_under_hyp(tmp_path):
    (tmp_path / "hyp.yaml").write_text(yaml.safe_dump({"lr0": 0.01}))
    got = read_run_config(str(tmp_path))
    assert got.config == {"hyp": {"lr0": 0.01}} and got.notes == ["hyp.yaml → config.hyp (1 key(s))"]


def test_values_equal_as_written_are_the_same(tmp_path):
    """A plugin that stored `[1, 2]` as text, 4 and 4.0: the same value, no 'differs' note."""
    (tmp_path / "config.yaml").write_text("ids: [1, 2]\nlayers: 4.0\n")
    got = read_run_config(str(tmp_path), base={"ids": "[1, 2]", "layers": 4})
    assert got.config == {"ids": "[1, 2]", "layers": 4}
    assert got.notes == ["config.yaml → config (2 key(s): ids, layers); beneath the hparams "
                         "plugin: 0 key(s) added, 2 the hparams plugin also gives (same value)"]


def test_the_callers_base_is_not_changed(tmp_path):
    (tmp_path / "config.yaml").write_text("optim: {name: sgd, momentum: 0.9}\n")
    base = {"optim": {"name": "sgd"}}
    got = read_run_config(str(tmp_path), base=base)
    assert base == {"optim": {"name": "sgd"}}
    assert got.config == {"optim": {"name": "sgd", "momentum": 0.9}}


def test_a_yaml_alias_bomb_is_refused_in_one_note(tmp_path):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [*{chr(96 + i)}, *{chr(96 + i)}, "
                     f"*{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, "
                     f"*{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}]")
    (tmp_path / "config.yaml").write_text("\n".join(lines) + "\n")
    got = read_run_config(str(tmp_path))
    assert got.config == {} and len(got.notes) == 1 and "refused" in got.notes[0]
