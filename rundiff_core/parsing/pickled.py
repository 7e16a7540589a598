"""Pickles written inside JSON, read without unpickling: a value only pickle could read shown as
one short value (parsing.opaque's rule for pickles it meets as bytes).

Libraries that write JSON fall back to pickle for what JSON cannot hold (Ray Tune's
`{"_type": "CLOUDPICKLE_FALLBACK", "value": <hex>}`, bare hex or base64 text of a pickle,
`__pickled__`/`_serialized` wrappers). Such a value is read from its opcodes by `pickletools`'
disassembler (which builds no object and imports nothing), first 4 KiB only: a pickled None is
None, a numpy scalar its number (its dtype and raw bytes), anything else `<pickled module.Class>`,
the first class or function the pickle names, else `<pickled object>`. Pure stdlib.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from typing import Any

from .opaque import _STRUCT, _dtype, _unpack

MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")  # pickle protocols 2–5 open so
_HEX = re.compile(r"^80(?:0[2-5])(?:[0-9a-fA-F]{2})*$")
_B64 = re.compile(r"^gA[I-X][A-Za-z0-9+/]*={0,2}$")  # base64 of b"\x80\x02".."\x80\x05"
_WRAPPERS = ("__pickled__", "_serialized", "__serialized__", "py/b64")
_INTERNAL = ("cloudpickle", "ray.cloudpickle", "copyreg", "copy_reg", "builtins", "__builtin__",
             "_codecs", "collections")  # what a pickle names on its way to the class it rebuilds
_NUMPY_SCALAR = ("numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar")
_STRING_OPS = ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING",
               "BINSTRING", "STRING")


def is_blob(value: Any) -> bool:
    """A value only pickle could read: a CLOUDPICKLE_FALLBACK wrapper, a `__pickled__` /
    `_serialized` wrapper, or the hex or base64 text of a whole pickle (protocol 2–5 opening,
    STOP closing: `8003` alone is a port, not a pickle)."""
    if isinstance(value, dict):
        return value.get("_type") == "CLOUDPICKLE_FALLBACK" or any(k in value for k in _WRAPPERS)
    if not isinstance(value, str) or len(value) < 8:
        return False
    if value[:2] == "80":
        return value[-2:].lower() == "2e" and bool(_HEX.match(value))
    if value[:2] == "gA" and len(value) >= 16 and len(value) % 4 == 0 and _B64.match(value):
        try:
            return base64.b64decode(value[-8:]).endswith(b".")
        except (ValueError, binascii.Error):
            return False
    return False


def _pickle_bytes(value: Any) -> bytes | None:
    """The first 4 KiB of a blob's pickle (decoded from hex or base64, never loaded)."""
    if isinstance(value, dict):
        value = next((value[k] for k in reversed(_WRAPPERS) if k in value), value.get("value"))
    if not isinstance(value, str):
        return None
    try:
        if value[:2] == "80":
            return bytes.fromhex(value[:8192])
        head = value[:5464]
        return base64.b64decode(head + "=" * (-len(head) % 4))
    except (ValueError, binascii.Error):
        return None


def placeholder(value: Any) -> Any:
    """What a blob is shown as: None for a pickled None (`80 05 4e 2e`); a numpy scalar's number
    (RLlib reports counters as `np.int64`); else `<pickled module.Class>` naming the first class
    or function the pickle refers to; else `<pickled object>`."""
    raw = _pickle_bytes(value)
    if not raw:
        return "<pickled object>"
    globals_, texts, blobs, ops = _scan(raw)
    if [o for o in ops if o not in ("PROTO", "FRAME")] in (["NONE", "STOP"], ["NONE"]):
        return None
    if globals_ and globals_[0] in _NUMPY_SCALAR:
        if not blobs and "_codecs.encode" in globals_:  # protocol 2: bytes as latin-1 text
            i = next((i for i, t in enumerate(texts) if t in ("latin1", "latin-1")), 0)
            if i > 0:
                try:
                    blobs = [texts[i - 1].encode("latin-1")]
                except UnicodeEncodeError:
                    pass
        code = next((t for t in texts if t in _STRUCT), None)
        order = next((t for t in texts if t in ("<", ">", "|", "=")), "<")
        number = _unpack(_dtype(code, order), blobs[0], 1) if code and len(blobs) == 1 else None
        if number:
            return number[0]
    for g in globals_:
        module, _, name = g.rpartition(".")
        if module and name and not module.startswith(_INTERNAL):
            return f"<pickled {g[:120]}>"
    return "<pickled object>"


def _scan(raw: bytes) -> tuple[list[str], list[str], list[bytes], list[str]]:
    """The globals (`module.name`, in order), texts and byte strings a pickle's opcodes name,
    and the opcodes: a string push, or a memo fetch of one, is tracked so STACK_GLOBAL's module
    and name are known."""
    import pickletools

    stack: list[str | None] = []
    memo: dict[int, str | None] = {}
    globals_: list[str] = []
    texts: list[str] = []
    blobs: list[bytes] = []
    ops: list[str] = []
    try:
        for op, arg, _pos in pickletools.genops(raw):
            ops.append(op.name)
            pushed: str | None = None
            if len(ops) > 4000:
                break
            if op.name == "GLOBAL" and isinstance(arg, str):
                globals_.append(arg.replace(" ", "."))
            elif op.name in _STRING_OPS and isinstance(arg, str):
                texts.append(arg)
                pushed = arg
            elif op.name in ("SHORT_BINBYTES", "BINBYTES", "BINBYTES8") and isinstance(arg, bytes):
                blobs.append(arg)
            elif op.name == "MEMOIZE":
                memo[len(memo)] = stack[-1] if stack else None
            elif op.name in ("BINPUT", "LONG_BINPUT", "PUT") and isinstance(arg, int):
                memo[arg] = stack[-1] if stack else None
            elif op.name in ("BINGET", "LONG_BINGET", "GET") and isinstance(arg, int):
                pushed = memo.get(arg)
            elif op.name == "STACK_GLOBAL" and len(stack) >= 2 and stack[-2] and stack[-1]:
                globals_.append(f"{stack[-2]}.{stack[-1]}")
            if op.name not in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"):
                stack.append(pushed)
    except Exception:  # noqa: BLE001 - a cut or hostile pickle: the disassembler stops there
        pass
    return globals_, texts, blobs, ops


def clean(value: Any, counts: Counter[str], depth: int = 0) -> Any:
    """`value` with every blob replaced by its placeholder (counted in `counts`)."""
    if depth > 64:
        return value
    if is_blob(value):
        shown = placeholder(value)
        counts["numpy scalar read as its number" if isinstance(shown, int | float)
               else str(shown)] += 1
        return shown
    if isinstance(value, dict):
        return {k: clean(v, counts, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if not any(isinstance(v, dict | list | str) for v in value):
            return value  # numbers (hist_stats' per-episode lists): nothing to look into
        return [clean(v, counts, depth + 1) for v in value]
    return value


def note(what: str, counts: Counter[str]) -> str | None:
    """The one note for the blobs `clean` counted (None when there were none)."""
    if not counts:
        return None
    shown = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(counts.items()))
    return (f"{what}: {sum(counts.values())} pickled value(s), never unpickled: read from their "
            f"bytes or shown as placeholders ({shown})")


__all__ = ["MAGIC", "clean", "is_blob", "note", "placeholder"]
