"""Redact secrets from every value rundiff prints or writes.

A value is a secret when its (flattened) key name matches a secret pattern, or when it is a URL
carrying a password. Plugins add patterns through `rundiff_secret_patterns`.

Redaction happens once, where a Run leaves its source: `open_source` hands out every source
behind a `RedactedSource`, so no adapter can forget it (adapters never call `redact`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .errors import RundiffError

if TYPE_CHECKING:
    import pandas as pd

    from .address import Address
    from .model import Run, RunRef
    from .source import RunSource

REDACTED = "***REDACTED***"

SECRET_KEY_PATTERNS: tuple[str, ...] = (
    r"api[_-]?key",
    r"apikey",
    r"(?<![a-z])token$",  # hf_token, TRACKING_TOKEN — not max_tokens, tokenizer, token_list
    r"secret",
    r"passw(or)?d",
    r"passwd",
    r"credential",
    r"private[_-]?key",
    r"access[_-]?key",
    r"(?<![a-z])auth$",  # auth, http_auth — not author, auth_mode
    r"session[_-]?key",
    r"bearer",
    r"cookie",
)

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<pw>[^@/\s]+)@")
_INLINE_SECRET = re.compile(
    r"(?i)\b(?P<key>[A-Z0-9_]*(?:API_KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_]*)"
    r"(?P<sep>\s*[=:]\s*)(?P<val>[^\s,;'\"]+)"
)
# Key shapes that are secrets wherever they appear: OpenAI/Anthropic, GitHub, Slack, AWS, Google,
# Hugging Face keys, JWTs and Neptune API tokens (base64 JSON, `eyJ…`).
_TOKEN_SHAPES = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}|hf_[A-Za-z0-9]{20,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+"
    r"|eyJ[A-Za-z0-9+/=_\-]{36,}(?:\.[A-Za-z0-9+/=_\-]+)*)"
)
# "password": "x" and 'api_key'='x' inside JSON or code.
_QUOTED_SECRET = re.compile(
    r"""(?i)(["']?[\w.\-]*(?:api[_-]?key|apikey|token|secret|passw(?:or)?d|authorization|access[_-]?key"""
    r"""|private[_-]?key)[\w.\-]*["']?\s*[:=]\s*)(["'])(.*?)\2"""
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")


@lru_cache(maxsize=1)
def _plugin_patterns() -> tuple[str, ...]:
    try:
        from .plugins import get_plugins

        extra: list[str] = []
        for _name, result in get_plugins().call_each("rundiff_secret_patterns"):
            extra.extend(result)
        return tuple(extra)
    except Exception:  # redaction must never fail because a plugin did
        return ()


@lru_cache(maxsize=8)
def _compiled(extra: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in SECRET_KEY_PATTERNS + extra), re.I)


def is_secret_key(key: str, extra: Iterable[str] = ()) -> bool:
    """True when a key name (any nesting, e.g. `wandb.api_key`) names a secret."""
    return _is_secret(str(key), tuple(extra) + _plugin_patterns())


@lru_cache(maxsize=8192)  # runs of one fleet share their config keys: decide each name once
def _is_secret(key: str, patterns: tuple[str, ...]) -> bool:
    return bool(_compiled(patterns).search(key))


# Every pattern above needs one of these (lower-cased): a secret-ish key word, a key shape, or the
# `@` of credentials in a URL. Text without any — most values, every plain path or address — is
# returned as is after a few substring scans, far cheaper than running the patterns.
_HINTS = ("key", "token", "secret", "passw", "authoriz", "bearer", "sk-", "ghp_", "gho_", "ghu_",
          "ghs_", "ghr_", "xox", "akia", "aiza", "hf_", "eyj", "@")


_HINTS_RE = re.compile("|".join(map(re.escape, _HINTS)))  # one scan of the lower-cased text


def _may_hold_secret(text: str) -> bool:
    return _HINTS_RE.search(text.lower()) is not None


def redact_text(text: str) -> str:
    """Scrub secrets embedded in free text: URL passwords, quoted and bare KEY=value pairs, bearer
    tokens, and well-known key shapes (sk-…, ghp_…, AKIA…, hf_…, JWTs, Neptune tokens)."""
    return _scrub(text) if _may_hold_secret(text) else text


def _scrub(text: str) -> str:
    text = _QUOTED_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
    text = _INLINE_SECRET.sub(lambda m: f"{m['key']}{m['sep']}{REDACTED}", text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact(value: Any, key: str = "") -> Any:
    """A deep copy of `value` with secret-named entries and embedded secrets replaced.

    In a list of strings (a command line), the value after a secret-named flag is hidden too:
    `--api-key VALUE` (`--api-key=VALUE` is caught as text)."""
    kind = type(value)
    if key and is_secret_key(key) and value not in (None, "", {}, []):
        if isinstance(value, Mapping):
            return {k: redact(v, f"{key}.{k}") for k, v in value.items()}
        return REDACTED
    if kind in _PLAIN:  # numbers, flags, None: nothing to scrub (the key was checked above)
        return value
    if kind is str:
        return redact_text(value)
    if kind is dict or isinstance(value, Mapping):
        patterns = _plugin_patterns()
        out = {}
        for k, v in value.items():  # leaves inline: a fleet redacts ~20 values a run
            path = f"{key}.{k}" if key else str(k)
            leaf = type(v)
            if (leaf in _PLAIN or leaf is str) and not _is_secret(path, patterns):
                out[k] = v if leaf is not str else redact_text(v)
            else:
                out[k] = redact(v, path)
        return out
    if isinstance(value, list | tuple):
        out = [redact(v, key) for v in value]
        for i in range(1, len(out)):
            flag = value[i - 1]
            if isinstance(flag, str) and flag.startswith("-") and _SECRET_FLAG.match(flag):
                out[i] = REDACTED
        if type(value) is list:
            return out
        return type(value)(*out) if hasattr(value, "_fields") else type(value)(out)  # namedtuple
    if isinstance(value, str):
        return redact_text(value)
    return value


_PLAIN = frozenset({int, float, bool, type(None)})
_SECRET_FLAG = re.compile(r"(?i)^--?[\w.-]*(api[_-]?key|token|secret|passw(or)?d)[\w.-]*$")


# -- where a Run leaves its source ------------------------------------------------------------------
def redact_run(run: Run) -> Run:
    """Redact everything a Run carries besides its identity, in place, once.

    Config, summary (also one computed later), env, meta, event payloads and fidelity notes —
    including notes that arrive with the history — plus the message and hint of any RundiffError
    its history loader raises. Address, name and run id are identity: they are left as given.
    """
    if run.__dict__.get("_redacted"):
        return run
    run.__dict__["_redacted"] = True
    run.config = redact(run.config)
    run.env = redact(run.env)
    run.meta = redact(run.meta)
    run.fidelity = [redact_text(str(n)) for n in run.fidelity]
    run.events = [e if not e.payload else replace(e, payload=redact(dict(e.payload)))
                  for e in run.events]

    def summary(value: dict[str, Any]) -> dict[str, Any]:
        run.fidelity[:] = [redact_text(n) for n in run.fidelity]  # a fold may have added notes
        return redact(value)

    run.map_summary(summary)
    if run.loader is not None:
        run.loader = _redacting_loader(run.loader)
    return run


def _redacting_loader(loader: Callable[[Any], Any]) -> Callable[[Any], Any]:
    from .model import HistoryColumns

    def load(keys: Any) -> Any:
        with redacted_errors():
            frame = loader(keys)
        if isinstance(frame, HistoryColumns):
            frame.notes = [redact_text(str(n)) for n in frame.notes]
            return frame
        notes = frame.attrs.get("fidelity")
        if notes:
            frame.attrs["fidelity"] = [redact_text(str(n)) for n in notes]
        return frame

    return load


@contextlib.contextmanager
def redacted_errors() -> Iterator[None]:
    """Scrub the message and hint of a RundiffError raised inside (an address or a server's
    reply quoted in an error can carry a token), then let it propagate."""
    try:
        yield
    except RundiffError as exc:
        exc.message = redact_text(exc.message)
        exc.hint = None if exc.hint is None else redact_text(exc.hint)
        exc.args = (exc.message, *exc.args[1:])
        raise


class RedactedSource:
    """The RunSource every caller gets from `open_source`: the adapter's source, with each Run it
    lets out redacted (`redact_run`) and its errors scrubbed. Adapters never redact themselves.

    Everything else — `thread_safe`, `seed_siblings`, an adapter's own methods — is the
    wrapped source's, unchanged.
    """

    def __init__(self, source: RunSource) -> None:
        self.__dict__["inner"] = source

    @property
    def address(self) -> Address:
        return self.inner.address

    def list_runs(self) -> list[RunRef]:
        with redacted_errors():
            return self.inner.list_runs()

    def load_run(self, ref: RunRef) -> Run:
        try:
            run = self.inner.load_run(ref)
        except RundiffError:
            with redacted_errors():
                raise
        return redact_run(run)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        return _redacting_loader(lambda k: self.inner.load_history(ref, k))(keys)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.__dict__["inner"], name)
        if not callable(value) or isinstance(value, type) or name.startswith("_"):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:  # an adapter's own method: errors scrubbed too
            try:
                return value(*args, **kwargs)
            except RundiffError:
                with redacted_errors():
                    raise

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.inner, name, value)

    def __enter__(self) -> RedactedSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedactedSource({self.inner!r})"


def redacted_source(source: RunSource) -> RunSource:
    """`source` behind a RedactedSource (once: an already wrapped source is returned as is)."""
    return source if isinstance(source, RedactedSource) else RedactedSource(source)
