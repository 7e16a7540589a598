"""The shape readers of `local:`: the layouts that name no framework. Each reads what a file's
content says it is (adapters/local/shape.py decides the shape): sniffed tables and documents
(`files`), text logs (`text`), column lists, Markdown results, SQLite stores by their schema, and
what they share (runs a folder's file names group, a text log's events folder). They register
in adapters/local/layouts/__init__.py with the named layouts, which run before them; a named
layout adds only what a shape cannot tell."""
