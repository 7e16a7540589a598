"""Load YAML that may carry `!!python/...` tags (Lightning, argparse Namespaces) as plain data.

Nothing is executed or imported: a tagged mapping becomes a dict, a tagged sequence a list, a
tagged scalar its text. Objects serialised with `state:` keep that mapping.
"""

from __future__ import annotations

from typing import Any

import yaml

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10× faster


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
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_PlainLoader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_plain)
_PlainLoader.add_multi_constructor("!", _construct_plain)
_PlainLoader.add_multi_constructor("tag:", _construct_plain)


def load_yaml_plain(text: str | bytes) -> Any:
    """Parse YAML into plain Python values, ignoring (not executing) any language tags."""
    return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - the loader only builds plain data
