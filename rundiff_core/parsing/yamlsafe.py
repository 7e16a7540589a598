"""Load YAML that may carry `!!python/...` tags (Lightning, argparse Namespaces) as plain data.

Nothing is executed or imported: a tagged mapping becomes a dict, a tagged sequence a list, a
tagged scalar its text. Objects serialised with `state:` keep that mapping, and a pickled
`OrderedDict` (rl-baselines3-zoo's `config.yml`) becomes a dict.

Hostile input is refused before anything is built: a first pass over the parser's event stream
(iterative, in libyaml when available) measures the nesting depth and the size the document
would have with every alias expanded, so an alias bomb (`a: &a [x, x, …]`, `b: &b [*a, *a, …]`,
…) or a 100 000-deep `[[[[…` is a one-line `YamlRefused` within milliseconds, not minutes of CPU
in whatever walks the loaded config next.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10× faster
_Parser = getattr(yaml, "CParser", None)

#: Limits far above any real config (Lightning's largest hparams.yaml here: ~30 000 nodes).
MAX_EXPANDED_NODES = 2_000_000
MAX_DEPTH = 256


_DEEP_FLOW = re.compile(rb"[\[{](?:[ \t\r\n]*[\[{]){%d}" % MAX_DEPTH)


class YamlRefused(yaml.YAMLError):
    """A YAML document refused before loading (alias bomb, excessive nesting); one line."""


class _PlainLoader(_Base):  # type: ignore[misc, valid-type]
    pass


def _construct_plain(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
        state = value.get("state") if isinstance(value, dict) else None
        if isinstance(state, dict) and set(value) <= {"state", "args", "kwds", "listitems", "dictitems"}:
            return state
        if isinstance(value, dict) and set(value) <= {"args", "kwds", "listitems", "dictitems"}:
            if value.get("dictitems"):
                return dict(value["dictitems"])
            if value.get("listitems"):
                return list(value["listitems"])
            return value.get("args", value)
        return value
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        if tag_suffix.endswith("OrderedDict") and len(items) == 1 and isinstance(items[0], list) \
                and all(isinstance(p, list) and len(p) == 2 for p in items[0]):
            try:
                return {k: v for k, v in items[0]}
            except TypeError:  # an unhashable key: keep the pairs
                return items
        return items
    return loader.construct_scalar(node)


_PlainLoader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_plain)
_PlainLoader.add_multi_constructor("!", _construct_plain)
_PlainLoader.add_multi_constructor("tag:", _construct_plain)


def check_bounds(text: str | bytes, name: str = "YAML") -> None:
    """Raise YamlRefused when `text` nests deeper than MAX_DEPTH or expands (aliases resolved)
    to more than MAX_EXPANDED_NODES nodes. One pass over the events; memory ∝ anchors."""
    raw = text.encode("utf-8", "replace") if isinstance(text, str) else text
    if _DEEP_FLOW.search(raw):  # libyaml scans a long run of openers slowly before any event
        raise YamlRefused(f"{name}: refused — nested deeper than {MAX_DEPTH} levels")
    events = yaml.parse(text, Loader=_Parser) if _Parser is not None else yaml.parse(text)
    sizes: dict[str, int] = {}
    stack: list[list] = []  # [anchor, size]
    total = 0
    for ev in events:
        if isinstance(ev, yaml.CollectionStartEvent):
            stack.append([ev.anchor, 1])
            if len(stack) > MAX_DEPTH:
                raise YamlRefused(f"{name}: refused — nested deeper than {MAX_DEPTH} levels")
            continue
        if isinstance(ev, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
        elif isinstance(ev, yaml.ScalarEvent):
            anchor, size = ev.anchor, 1
        elif isinstance(ev, yaml.AliasEvent):
            anchor, size = None, sizes.get(ev.anchor, 1)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = size
        if stack:
            stack[-1][1] += size
            if stack[-1][1] > MAX_EXPANDED_NODES:
                raise YamlRefused(
                    f"{name}: refused — its aliases expand to more than {MAX_EXPANDED_NODES:,} "
                    "nodes (an alias bomb?); the rest of the run is read without it")
        else:
            total += size
            if total > MAX_EXPANDED_NODES:
                raise YamlRefused(f"{name}: refused — more than {MAX_EXPANDED_NODES:,} nodes")


def load_yaml_plain(text: str | bytes, name: str = "YAML") -> Any:
    """Parse YAML into plain Python values, ignoring (not executing) any language tags.

    Raises YamlRefused (a yaml.YAMLError) for alias bombs and excessive nesting, naming `name`.
    """
    check_bounds(text, name)
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - the loader only builds plain data
    except RecursionError:
        raise YamlRefused(f"{name}: refused — nested too deeply to load") from None


def load_yaml_file(path: str) -> Any:
    """A YAML file's plain data; YamlRefused names the file."""
    import os

    with open(path, "rb") as fh:
        return load_yaml_plain(fh.read(), os.path.basename(path))
