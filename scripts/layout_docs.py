"""Rewrite docs/local.md's detection-order table from the layout registry (a test keeps them
equal): `python scripts/layout_docs.py`."""

from __future__ import annotations

import re
from pathlib import Path

from rundiff_core import layouts_in_order
from rundiff_core.layouts import layout_table_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "local.md"


def main() -> None:
    text = DOC.read_text()
    table = layout_table_markdown(layouts_in_order().ordered())
    new = re.sub(r"\| order \|(?: priority \|)? layout \| claims \| one run is \|\n(?:\|.*\|\n)+", table, text, count=1)
    DOC.write_text(new)
    print(f"{DOC}: {len(layouts_in_order())} layouts")


if __name__ == "__main__":
    main()
