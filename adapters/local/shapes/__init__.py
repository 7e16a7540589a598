"""The shape readers of `local:`: the layouts that name no framework. Each reads what a file's
content says it is (adapters/local/shape.py decides the shape): sniffed tables and documents
(`files`), text logs (`text`), column lists, Markdown results, SQLite stores by their schema, and
what they share (runs a folder's file names group, a text log's events folder). They register
here (SHAPE_READERS), after the named layouts (adapters/local/layouts/), which run before them; a
named layout adds only what a shape cannot tell."""

from __future__ import annotations

from rundiff_core import LayoutSpec

_SHAPES = "rundiff_adapters.local.shapes"

SHAPE_READERS = (
    LayoutSpec("column-lists", f"{_SHAPES}.column_lists",
               "JSON objects of per-epoch lists (`{\"loss\": [...], \"val_loss\": [...]}`, Keras "
               "`history.history`, any other keys beside them), found by the `files` sniff",
               priority=84, one_run="each file", signature=("*.json",)),
    LayoutSpec("markdown", f"{_SHAPES}.markdown",
               "Markdown results (`.md`): pipe tables, code blocks holding logs, `key: value` "
               "lines, by heading; found by the `files` sniff",
               priority=86, one_run="the file, or each of its alike sections "
               "(`local:FILE.md#HEADING`)", signature=("*.md", "*.markdown")),
    LayoutSpec("sqlite-store", f"{_SHAPES}.sqlite_store",
               "a SQLite file recognised by its schema (header + `sqlite_master`, not its name): an "
               "Optuna study store, or a table of key/step/value rows (with a run id column or "
               "not); the logs beside it are sniffed as by `files`",
               priority=895, one_run="each Optuna trial (`local:STUDY.db#STUDY_NAME/NUMBER`), or "
               "each run id of a key/step/value table (the file when it has none)",
               signature=("*.db", "*.sqlite", "*.sqlite3", "*.db3", "*.sdb", "*.s3db", "*.sl3",
                          "*.sqlitedb")),
    LayoutSpec("files", f"{_SHAPES}.files",
               "sniffed tabular logs, Keras `CSVLogger` files, `*results*.json`, `*meta*.json`, "
               "`eval*.csv`, `metrics.csv`",
               priority=900, one_run="the folder's tables together"),
    LayoutSpec("text", f"{_SHAPES}.text",
               "text logs with `key:value` / `key=value` / `key value` fields and a step (found "
               "by the `files` sniff)",
               priority=910, one_run="**each file** (a folder of repeat runs lists one run per log)"),

)
