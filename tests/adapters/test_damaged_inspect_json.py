"""A damaged Inspect `.json` log is one line in the user's words (issue 33, item 3): what the file
is, what was found where — never the JSON parser's message — and a hint that fits (the log's
.eval form, or another copy). Damaged copies, fixed seed, of a real Inspect log."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.testing import hash_tree

LOG = next((Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "inspect").rglob("test_logs/*.json"))


def _damaged(how: str) -> bytes:
    data = bytearray(LOG.read_bytes())
    rng = random.Random(f"33:{how}")
    if how == "flip2":  # two bits flipped, one of them in a quote (a flip inside a string's
        # text leaves valid JSON, and the log reads)
        quotes = [i for i, b in enumerate(data) if b == ord('"')]
        data[rng.choice(quotes[len(quotes) // 4:])] ^= 1
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    elif how == "zero512":
        at = rng.randrange(1, len(data) // 512) * 512  # the head intact: the log names itself
        data[at:at + 512] = bytes(512)
    elif how == "cut":
        data = data[:rng.randrange(len(data) // 2, len(data) - 1)]
    return bytes(data)


@pytest.mark.parametrize(("how", "found"), [("flip2", "damaged at line"), ("zero512", "zeroed bytes from byte"),
                                             ("cut", "cut short")])
def test_a_damaged_inspect_json_log_is_one_line_with_a_fitting_hint(how, found, tmp_path, capsys):
    path = tmp_path / LOG.name
    path.write_bytes(_damaged(how))
    before = hash_tree(str(tmp_path))
    for address in (f"traj:{path}", str(path)):
        assert main(["ls", address]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and err[1].startswith("  hint: "), err
        assert err[0].startswith(f"rundiff: error: Inspect log {path} is not valid JSON") and found in err[0], err
        assert "Expecting" not in err[0] and "JSONDecodeError" not in err[0] and "Traceback" not in err[0]
        assert ".eval" in err[1]
    assert hash_tree(str(tmp_path)) == before
