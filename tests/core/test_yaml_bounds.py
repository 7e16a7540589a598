"""Hostile YAML is refused fast, with one line naming the file, and the rest of the run survives."""

from __future__ import annotations

import time

import pytest
import yaml

from rundiff_core.parsing.yamlsafe import YamlRefused, load_yaml_plain
from rundiff_core.resolve import open_source


def alias_bomb(levels: int = 8, width: int = 9) -> str:
    """~width**levels leaves from a few hundred bytes (the 'billion laughs' of YAML)."""
    out = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    out.append("bomb: [" + ", ".join([f"*a{levels - 1}"] * width) + "]")
    return "\n".join(out) + "\nlr: 0.1\n"


def test_alias_bomb_refused_in_a_fraction_of_a_second():
    t0 = time.perf_counter()
    with pytest.raises(YamlRefused) as info:
        load_yaml_plain(alias_bomb(), "config.yaml")
    assert time.perf_counter() - t0 < 0.5
    message = str(info.value)
    assert "\n" not in message and message.startswith("config.yaml: refused") and "alias" in message
    assert isinstance(info.value, yaml.YAMLError)  # callers that catch YAMLError degrade too


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "- " * 50_000 + "x",
                                  "".join(" " * i + "k:\n" for i in range(1000)) + " " * 1000 + "v"])
def test_excessive_nesting_refused(text):
    t0 = time.perf_counter()
    with pytest.raises(YamlRefused):
        load_yaml_plain(text, "deep.yaml")
    assert time.perf_counter() - t0 < 0.5


def test_small_aliases_and_tags_still_load_and_nothing_executes(tmp_path):
    marker = tmp_path / "pwned"
    text = (f"base: &b {{lr: 0.1}}\nrun: *b\nx: !!python/object/apply:os.system ['touch {marker}']\n"
            "ns: !!python/object:argparse.Namespace {seed: 3}\n")
    data = load_yaml_plain(text)
    assert data["run"] == {"lr": 0.1} and data["ns"] == {"seed": 3}
    assert not marker.exists()


def test_bomb_config_costs_only_the_config(tmp_path):
    run = tmp_path / "exp_s1"
    run.mkdir()
    (run / "config.yaml").write_text(alias_bomb())
    (run / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    t0 = time.perf_counter()
    src = open_source(f"local:{tmp_path}")
    loaded = src.load_run(src.list_runs()[0])
    assert time.perf_counter() - t0 < 1.0
    assert loaded.config == {} and len(loaded.history(["loss"])) == 2 and loaded.seed == 1
    assert any(n.startswith("config.yaml: refused") for n in loaded.fidelity)


def test_bomb_in_a_journal_config_and_a_wandb_run_config(tmp_path, demo_runs, realdata):
    import shutil

    run_dir = demo_runs / "exp-baseline" / "seed-0"
    (run_dir / "config.yaml").write_text(alias_bomb())
    t0 = time.perf_counter()
    run = open_source(f"journal:{run_dir}").load_run(open_source(f"journal:{run_dir}").list_runs()[0])
    assert time.perf_counter() - t0 < 1.0
    assert run.config == {} and len(run.history()) > 0
    assert any("config.yaml: refused" in n for n in run.fidelity)
    src_run = next((realdata / "wandb-verysimpletransformer" / "wandb").glob("run-*"))
    copy = tmp_path / src_run.name
    shutil.copytree(src_run, copy)
    (copy / "files" / "config.yaml").write_text(alias_bomb())
    t0 = time.perf_counter()
    src = open_source(f"wandb:{copy}")
    loaded = src.load_run(src.list_runs()[0])
    assert time.perf_counter() - t0 < 2.0
    assert any("files/config.yaml: refused" in n for n in loaded.fidelity)
