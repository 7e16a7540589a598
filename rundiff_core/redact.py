"""Redact secrets from every value rundiff prints or writes.

A value is a secret when its (flattened) key name matches a secret pattern, or when it is a URL
carrying a password. Plugins add patterns through `rundiff_secret_patterns`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

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
# Hugging Face keys and JWTs.
_TOKEN_SHAPES = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}|hf_[A-Za-z0-9]{20,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+)"
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


# Every pattern above needs one of these; text without any (most config values) is returned as is.
_MAYBE_SECRET = re.compile(r"[=:]|sk-|gh[pousr]_|xox[abprs]-|AKIA|AIza|hf_|eyJ|(?i:bearer)")


def redact_text(text: str) -> str:
    """Scrub secrets embedded in free text: URL passwords, quoted and bare KEY=value pairs, bearer
    tokens, and well-known key shapes (sk-…, ghp_…, AKIA…, hf_…, JWTs)."""
    return _scrub(text) if _MAYBE_SECRET.search(text) else text


def _scrub(text: str) -> str:
    text = _QUOTED_SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}{m.group(2)}", text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
    text = _INLINE_SECRET.sub(lambda m: f"{m['key']}{m['sep']}{REDACTED}", text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact(value: Any, key: str = "") -> Any:
    """A deep copy of `value` with secret-named entries and embedded secrets replaced."""
    if key and is_secret_key(key) and value not in (None, "", {}, []):
        if isinstance(value, Mapping):
            return {k: redact(v, f"{key}.{k}") for k, v in value.items()}
        return REDACTED
    if isinstance(value, Mapping):
        return {k: redact(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact(v, key) for v in value)
    if isinstance(value, str):
        return redact_text(value)
    return value
