"""rundiff_core.read_bounded: a whole file only when it is small enough, else why not."""

from __future__ import annotations

from rundiff_core import read_bounded


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    f = tmp_path / "state.json"
    f.write_bytes(b"x" * 100)
    assert read_bounded(str(f), 100) == (b"x" * 100, "")
    assert read_bounded(str(f), 99) == (None, "larger than 99 bytes")
    big = 3 << 20
    assert read_bounded(str(f), big)[0] == b"x" * 100
    f.write_bytes(b"x" * (big + 1))
    assert read_bounded(str(f), big) == (None, "larger than 3 MiB")


def test_a_missing_or_unreadable_path_says_why(tmp_path):
    raw, why = read_bounded(str(tmp_path / "gone.json"), 1 << 20)
    assert raw is None and why.startswith("unreadable (") and "No such file" in why
    raw, why = read_bounded(str(tmp_path), 1 << 20)  # a folder: the OS says what it is
    assert raw is None and why.startswith("unreadable (")
