"""Serialized objects in configs, each shown as ONE short opaque value — or read, when readable.

Configs are written by libraries that serialize whatever they are handed: Sacred's jsonpickle
(`{"py/object": …}`, `py/reduce`, `py/b64`, `py/tuple`, `py/id` …) and PyYAML's python tags
(`!!python/object:…`, `!!python/object/apply:…`, `!!python/name:…`, `!!binary`). The rule:

- an object whose state is a plain mapping stays a mapping: its fields are the config
  (`!!python/object:argparse.Namespace {lr: 0.1}` → `{lr: 0.1}`; a jsonpickled object's fields);
- readable small values are read: a tuple or set is a list, a jsonpickled numpy array its
  `values`, a numpy scalar its number (decoded from its bytes when PyYAML pickled it), a numpy
  array of at most 64 numbers its values;
- what only pickle can read becomes one short text in angle brackets: bytes (`py/b64`, `!!binary`
  → `<binary data>`), reduce calls of numpy/torch reconstructors or with bytes among their
  arguments (`<pickled torch.Tensor>`, `<numpy.ndarray float32 (512, 64)>`, `<pickled X>`),
  references to code (`<python function f>`, `<python type T>`, `<python name __main__.f>`),
  back-references (`<python reference>`), objects with no readable state (`<python object T>`)
  and base64 text longer than 200 characters (`<base64 text>`).

A placeholder names classes and functions only — never bytes, lengths, hashes or memory
addresses (torch storage pickles carry a per-process storage key), so seeds of one config stay
one arm. Nothing is unpickled, imported or executed. The rule is pure stdlib; `load_yaml_config`
reaches PyYAML (through parsing.yamlsafe's plain loader and bounds) only when called.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections import Counter
from typing import Any

MAX_BASE64 = 200  # longer base64-looking text is a blob, not a setting
MAX_ARRAY_VALUES = 64  # numpy arrays up to this many numbers are read as lists

_B64_TEXT = re.compile(r"[A-Za-z0-9+/\r\n]+={0,2}")

# reduce callables (jsonpickle `py/function`/`py/type`, PyYAML `object/apply:` names) → what
# they rebuild; everything they rebuild is binary
_TORCH = {"torch._utils._rebuild_parameter": "torch.nn.Parameter",
          "torch._utils._rebuild_parameter_with_state": "torch.nn.Parameter",
          "torch.storage._load_from_bytes": "torch storage",
          "torch._utils._rebuild_device_tensor_from_numpy": "torch.Tensor"}
_NUMPY_NS = ("numpy.core.multiarray.", "numpy._core.multiarray.")
_DICT_TYPES = {"collections.OrderedDict", "builtins.dict", "__builtin__.dict",
               "collections.defaultdict"}
_REDUCERS = {"copyreg._reconstructor", "copy_reg._reconstructor", "copyreg.__newobj__",
             "copy_reg.__newobj__", "copyreg.__newobj_ex__"}

_STRUCT = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q",
           "u1": "B", "u2": "H", "u4": "I", "u8": "Q", "b1": "?"}
_NAMED_DTYPES = {"float16": "f2", "float32": "f4", "float64": "f8", "int8": "i1", "int16": "i2",
                 "int32": "i4", "int64": "i8", "uint8": "u1", "uint16": "u2", "uint32": "u4",
                 "uint64": "u8", "bool": "b1"}


class NumpyDtype(str):
    """A numpy dtype read from a pickle: its code (`f8`) as text, with its byte order."""

    byteorder: str = "<"


def _dtype(code: Any, byteorder: Any = "<") -> NumpyDtype | None:
    if not isinstance(code, str):
        return None
    d = NumpyDtype(_NAMED_DTYPES.get(code, code))
    d.byteorder = byteorder if byteorder in ("<", ">") else "<"
    return d


def _unpack(dtype: NumpyDtype, raw: bytes, count: int) -> list[Any] | None:
    fmt = _STRUCT.get(str(dtype))
    if fmt is None or count < 0 or struct.calcsize(f"<{count}{fmt}") != len(raw):
        return None
    return list(struct.unpack(f"{dtype.byteorder}{count}{fmt}", raw))


def _nest(values: list[Any], shape: list[int]) -> list[Any]:
    for size in reversed(shape[1:]):
        values = [values[i:i + size] for i in range(0, len(values), size)]
    return values


class _Walk:
    """One pass over a loaded config; `counts` says what became what, for the note."""

    def __init__(self) -> None:
        self.opaque: Counter[str] = Counter()
        self.read: Counter[str] = Counter()

    def placeholder(self, text: str) -> str:
        self.opaque[text] += 1
        return text

    # -- plain data ---------------------------------------------------------------------------
    def value(self, v: Any) -> Any:
        if isinstance(v, dict):
            if any(isinstance(k, str) and k.startswith("py/") for k in v):
                return self.jsonpickle(v)
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [self.value(x) for x in v]
        if isinstance(v, set | frozenset):
            items = [self.value(x) for x in v]
            try:
                return sorted(items)
            except TypeError:
                return sorted(items, key=repr)
        if isinstance(v, bytes | bytearray):
            return self.placeholder("<binary data>")
        if isinstance(v, NumpyDtype):
            return str(v)
        if isinstance(v, str) and len(v) > MAX_BASE64 and _is_base64(v):
            return self.placeholder("<base64 text>")
        if isinstance(v, str) and is_opaque(v):
            self.opaque[v] += 1  # a YAML tag's placeholder, written while loading
        return v

    # -- jsonpickle -----------------------------------------------------------------------------
    def jsonpickle(self, d: dict[str, Any]) -> Any:
        if "py/b64" in d or "py/bytes" in d or "py/b85" in d:
            return self.placeholder("<binary data>")
        if "py/function" in d:
            return self.placeholder(f"<python function {_name(d['py/function'])}>")
        if "py/type" in d:
            return self.placeholder(f"<python type {_name(d['py/type'])}>")
        if "py/mod" in d or "py/module" in d:
            return self.placeholder(f"<python module {_name(d.get('py/mod', d.get('py/module')))}>")
        if "py/id" in d or "py/ref" in d:
            return self.placeholder("<python reference>")
        if "py/tuple" in d:
            items = d["py/tuple"]
            return [self.value(x) for x in items] if isinstance(items, list) else self.value(items)
        if "py/set" in d:
            return self.value(set(_hashable(x) for x in d["py/set"])) \
                if isinstance(d["py/set"], list) else self.value(d["py/set"])
        if "py/reduce" in d:
            return self.reduce(d["py/reduce"])
        cls = _name(d.get("py/object")) if "py/object" in d else ""
        if not cls:
            if "py/repr" in d:
                return self.placeholder(f"<python object {_name(str(d['py/repr']).split('/')[0])}>")
            return self.placeholder("<python object>")
        fields = {k: v for k, v in d.items() if not (isinstance(k, str) and k.startswith("py/"))}
        if cls.startswith("numpy."):
            got = self.numpy_jsonpickle(cls, d)
            if got is not _NOT:
                return got
        if "py/state" in d:
            state = d["py/state"]
            if isinstance(state, dict) and not any(str(k).startswith("py/") for k in state):
                self.read[f"{cls} as its fields"] += 1
                return {k: self.value(x) for k, x in state.items()}
            return self.placeholder(f"<python object {cls}>")
        if "py/seq" in d and not fields and isinstance(d["py/seq"], list):
            self.read[f"{cls} as a list"] += 1
            return [self.value(x) for x in d["py/seq"]]
        if fields and not any(k in d for k in ("py/newargs", "py/newargsex", "py/initargs")):
            self.read[f"{cls} as its fields"] += 1
            return {k: self.value(x) for k, x in fields.items()}
        return self.placeholder(f"<python object {cls}>")

    def numpy_jsonpickle(self, cls: str, d: dict[str, Any]) -> Any:
        """jsonpickle's numpy extension: `{"py/object": "numpy.float64", "value": 0.5}`, an
        array's `values` (a list, or base64 bytes for a large one)."""
        if cls.endswith(".ndarray"):
            values = d.get("values")
            if isinstance(values, list):
                self.read["numpy array(s) as lists"] += 1
                return self.value(values)
            shape = d.get("shape")
            desc = f" {d['dtype']}" if isinstance(d.get("dtype"), str) else ""
            if isinstance(shape, list) and all(isinstance(s, int) for s in shape):
                desc += f" ({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
            return self.placeholder(f"<numpy.ndarray{desc}>")
        if "value" in d and isinstance(d["value"], int | float | bool | str):
            self.read["numpy scalar(s) as numbers"] += 1
            return d["value"]
        return _NOT

    def reduce(self, r: Any) -> Any:
        """jsonpickle `py/reduce`: [callable, args, state, listitems, dictitems]."""
        parts = list(r) if isinstance(r, list) else [r]
        fn = parts[0] if parts else None
        name = _name(fn.get("py/function") or fn.get("py/type")) if isinstance(fn, dict) else ""
        args = _untuple(parts[1]) if len(parts) > 1 else []
        state = parts[2] if len(parts) > 2 else None
        if name == "numpy.dtype":
            st = _untuple(state)
            got = _dtype(args[0] if args else None, st[1] if len(st) > 1 else "<")
            if got is not None:
                return got
        if name.startswith(_NUMPY_NS):
            return self.numpy(name, [_b64_bytes(a) if isinstance(a, dict) else a for a in
                                     [self._dtype_arg(a) for a in args]],
                              self._numpy_state(state))
        if name.startswith("torch._utils._rebuild_") or name in _TORCH:
            return self.placeholder(f"<pickled {_TORCH.get(name, 'torch.Tensor')}>")
        if name in _REDUCERS and args:
            cls = args[0]
            cls_name = _name(cls.get("py/type")) if isinstance(cls, dict) else _name(cls)
            if isinstance(state, dict):
                self.read[f"{cls_name} as its fields"] += 1
                return self.value(state)
            return self.placeholder(f"<python object {cls_name}>")
        if name in _DICT_TYPES:
            items = parts[4] if len(parts) > 4 else None
            out = {}
            for pair in _untuple(items) if items is not None else []:
                pair = _untuple(pair)
                if len(pair) == 2 and isinstance(pair[0], str | int | float | bool):
                    out[pair[0]] = self.value(pair[1])
            if isinstance(state, dict):
                out.update({k: self.value(v) for k, v in state.items()})
            return out
        if isinstance(state, dict) and not any(str(k).startswith("py/") for k in state):
            self.read[f"{name} as its fields"] += 1
            return {k: self.value(v) for k, v in state.items()}
        if _has_binary(args) or _has_binary(state):
            return self.placeholder(f"<pickled {name or 'object'}>")
        if state is None and len(parts) <= 2:
            self.read[f"{name or 'object'} as its arguments"] += 1
            return [self.value(a) for a in args]
        return self.placeholder(f"<python object {name}>" if name else "<python object>")

    def _dtype_arg(self, a: Any) -> Any:
        if isinstance(a, dict) and "py/reduce" in a:
            got = self.reduce(a["py/reduce"])
            if isinstance(got, NumpyDtype):
                return got
        return a

    def _numpy_state(self, state: Any) -> Any:
        st = _untuple(state)
        return [self._dtype_arg(_untuple(s) if isinstance(s, dict) and "py/tuple" in s else s)
                if not (isinstance(s, dict) and "py/b64" in s) else _b64_bytes(s) for s in st] \
            if st else state

    # -- numpy reconstructors (PyYAML and jsonpickle alike) ------------------------------------
    def numpy(self, name: str, args: list[Any], state: Any) -> Any:
        """`numpy.core.multiarray.scalar(dtype, bytes)` → the number; `_reconstruct(cls, shape,
        b'b')` with state (version, shape, dtype, fortran, bytes) → a short list, else the
        placeholder with dtype and shape."""
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "scalar":
            dtype = args[0] if args and isinstance(args[0], NumpyDtype) else None
            raw = args[1] if len(args) > 1 and isinstance(args[1], bytes) else None
            got = _unpack(dtype, raw, 1) if dtype is not None and raw is not None else None
            if got:
                self.read["numpy scalar(s) as numbers"] += 1
                return got[0]
            return self.placeholder("<pickled numpy scalar>")
        if leaf == "_reconstruct":
            st = state if isinstance(state, list) else []
            shape = st[1] if len(st) > 1 and isinstance(st[1], list) else None
            dtype = st[2] if len(st) > 2 and isinstance(st[2], NumpyDtype) else None
            raw = st[4] if len(st) > 4 and isinstance(st[4], bytes) else None
            if shape is not None and all(isinstance(s, int) for s in shape):
                count = 1
                for s in shape:
                    count *= s
                fortran = len(st) > 3 and st[3] is True
                if dtype is not None and raw is not None and count <= MAX_ARRAY_VALUES \
                        and not (fortran and len(shape) > 1):
                    values = _unpack(dtype, raw, count)
                    if values is not None:
                        self.read["numpy array(s) as lists"] += 1
                        return _nest(values, shape) if shape else values[0]
                dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
                desc = f" {_dtype_name(dtype)}" if dtype is not None else ""
                return self.placeholder(f"<numpy.ndarray{desc} ({dims})>")
            return self.placeholder("<numpy.ndarray>")
        return self.placeholder(f"<pickled {name}>")


_NOT = object()


def _dtype_name(d: NumpyDtype) -> str:
    inv = {v: k for k, v in _NAMED_DTYPES.items()}
    return inv.get(str(d), str(d))


def _name(v: Any) -> str:
    return str(v) if isinstance(v, str | int) else ""


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _untuple(v: Any) -> list[Any]:
    if isinstance(v, dict) and "py/tuple" in v:
        v = v["py/tuple"]
    if isinstance(v, list | tuple):
        return list(v)
    return [] if v is None else [v]


def _b64_bytes(v: Any) -> Any:
    if isinstance(v, dict) and isinstance(v.get("py/b64"), str):
        try:
            return base64.b64decode(v["py/b64"], validate=False)
        except (binascii.Error, ValueError):
            return v
    return v


def _has_binary(v: Any, depth: int = 0) -> bool:
    if depth > 64:
        return False
    if isinstance(v, bytes | bytearray):
        return True
    if isinstance(v, dict):
        if "py/b64" in v or "py/bytes" in v or "py/b85" in v:
            return True
        return any(_has_binary(x, depth + 1) for x in v.values())
    if isinstance(v, list | tuple):
        return any(_has_binary(x, depth + 1) for x in v)
    return isinstance(v, str) and (v == "<binary data>" or v.startswith("<pickled "))


def _is_base64(text: str) -> bool:
    if " " in text or not _B64_TEXT.fullmatch(text):
        return False
    return any(c.isupper() for c in text) and any(c.islower() for c in text) \
        and any(c.isdigit() or c in "+/" for c in text)


def is_opaque(value: Any) -> bool:
    """True for a placeholder this module wrote (`<pickled …>`, `<binary data>`, …)."""
    return isinstance(value, str) and value.startswith(
        ("<pickled ", "<binary data>", "<base64 text>", "<python ", "<numpy.ndarray")) \
        and value.endswith(">")


def _note(name: str, w: _Walk) -> str | None:
    if not w.opaque and not w.read:
        return None
    parts = []
    if w.opaque:
        shown = ", ".join(f"{t} ×{n}" if n > 1 else t for t, n in sorted(w.opaque.items()))
        parts.append(f"{sum(w.opaque.values())} serialized value(s) shown as one opaque value "
                     f"each ({shown})")
    if w.read:
        parts.append("read as plain values: " + ", ".join(
            f"{n} {what}" for what, n in sorted(w.read.items())))
    return f"{name}: " + "; ".join(parts)


def opaque_config(value: Any, notes: list[str] | None = None, name: str = "config") -> Any:
    """`value` (a loaded config) with every serialized object replaced by the module's rule;
    appends one note to `notes` saying what became what (none when nothing did)."""
    w = _Walk()
    try:
        out = w.value(value)
    except RecursionError:
        if notes is not None:
            notes.append(f"{name}: nested too deeply to look for serialized objects; kept as read")
        return value
    note = _note(name, w)
    if note and notes is not None:
        notes.append(note)
    return out


# -- YAML python tags -----------------------------------------------------------------------------
def yaml_tagged(suffix: str, raw: Any, read: Counter[str] | None = None) -> Any:
    """The rule for one `!!python/<suffix>` node PyYAML built as `raw` (a dict, list or text);
    `NotImplemented` when the plain reading of parsing.yamlsafe applies. `read` counts what was
    read as plain values."""
    kind, _, name = suffix.partition(":")
    read = read if read is not None else Counter()
    if kind == "name":
        return f"<python name {name}>"
    if kind == "module":
        return f"<python module {name}>"
    if kind == "bytes":
        return "<binary data>"
    if kind == "none":
        return None
    if kind == "bool" and isinstance(raw, str):
        return raw.strip().lower() in ("true", "yes", "on", "1")
    if kind in ("int", "long", "float") and isinstance(raw, str):
        try:
            return int(raw) if kind != "float" else float(raw)
        except ValueError:
            return raw
    if kind in ("object/apply", "object/new"):
        if isinstance(raw, dict) and set(raw) <= {"args", "kwds", "state", "listitems", "dictitems"}:
            args, state = raw.get("args") or [], raw.get("state")
        else:
            args, state = (raw if isinstance(raw, list) else [raw]), None
        args = list(args) if isinstance(args, list | tuple) else [args]
        if name == "numpy.dtype":
            st = list(state) if isinstance(state, list | tuple) else []
            got = _dtype(args[0] if args else None, st[1] if len(st) > 1 else "<")
            return got if got is not None else NotImplemented
        if name.startswith(_NUMPY_NS):
            w = _Walk()
            got = w.numpy(name, args, list(state) if isinstance(state, list | tuple) else state)
            read.update(w.read)
            return got
        if name.startswith("torch._utils._rebuild_") or name in _TORCH:
            return f"<pickled {_TORCH.get(name, 'torch.Tensor')}>"
        if name in _DICT_TYPES or name in ("builtins.set", "__builtin__.set"):
            return NotImplemented  # a container: only its binary leaves are opaque
        if isinstance(state, dict):
            read[f"{name} as its fields"] += 1
            return NotImplemented
        if _has_binary(args) or _has_binary(state):
            return f"<pickled {name}>"
        read[f"{name} as its arguments"] += 1
        return NotImplemented
    if kind == "object":
        if isinstance(raw, dict):
            read[f"{name} as its fields"] += 1
            return NotImplemented
        return f"<python object {name}>" if not isinstance(raw, list) else NotImplemented
    return NotImplemented


_LOADER: Any = None


def _loader_class() -> Any:
    """parsing.yamlsafe's plain loader with `yaml_tagged` in front of its python-tag reading."""
    global _LOADER
    if _LOADER is None:
        import yaml

        from .yamlsafe import _construct_plain, _PlainLoader

        class _OpaqueLoader(_PlainLoader):  # type: ignore[misc, valid-type]
            read: Counter[str]

        def construct(loader: Any, suffix: str, node: Any) -> Any:
            if isinstance(node, yaml.MappingNode):
                raw: Any = loader.construct_mapping(node, deep=True)
            elif isinstance(node, yaml.SequenceNode):
                raw = loader.construct_sequence(node, deep=True)
            else:
                raw = loader.construct_scalar(node)
            got = yaml_tagged(suffix, raw, loader.read)
            return _construct_plain(loader, suffix, node) if got is NotImplemented else got

        _OpaqueLoader.add_multi_constructor("tag:yaml.org,2002:python/", construct)
        _LOADER = _OpaqueLoader
    return _LOADER


def load_yaml_config(data: str | bytes, name: str = "YAML", notes: list[str] | None = None
                     ) -> Any:
    """A YAML config as plain data, this module's rule applied to its python tags and blobs
    (after parsing.yamlsafe's hostile-input bounds); one note in `notes` says what became what.
    Raises YamlRefused (a yaml.YAMLError) like `load_yaml_plain`, or yaml.YAMLError."""
    from .yamlsafe import YamlRefused, check_bounds

    check_bounds(data, name)
    loader = _loader_class()(data)
    loader.read = Counter()
    try:
        doc = loader.get_single_data()
    except RecursionError:
        raise YamlRefused(f"{name}: refused — nested too deeply to load") from None
    finally:
        loader.dispose()
    w = _Walk()
    w.read.update(loader.read)
    try:
        out = w.value(doc)
    except RecursionError:
        out = doc
    note = _note(name, w)
    if note and notes is not None:
        notes.append(note)
    return out


__all__ = ["MAX_ARRAY_VALUES", "MAX_BASE64", "NumpyDtype", "is_opaque", "load_yaml_config",
           "opaque_config", "yaml_tagged"]
