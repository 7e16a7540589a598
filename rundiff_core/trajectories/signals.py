"""Per-trajectory signals: tool calls, error results, recoveries, finish buckets.

Everything here reads one trajectory's messages in the OpenAI chat shape (role + content +
`tool_calls`, tool results as role "tool"); importers convert other shapes first. The rules are
documented in docs/trajectories.md — keep the two in step.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..redact import redact_text
from .model import ERROR_KINDS, Call, Features

SNIPPET = 240
ARGS_KEY_MAX = 240

_decode = json.JSONDecoder().decode
_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode

# -- finish reasons -------------------------------------------------------------------------------

FINISH_MAP: dict[str, str] = {}
for _bucket, _names in {
    "completed": (
        "stop", "end_turn", "completed", "complete", "done", "success", "succeeded", "finished",
        "stop_sequence", "eos", "end", "submitted", "submit", "answer", "answered", "user_stop",
    ),
    "max_steps": (
        "max_steps", "max_turns", "max_iterations", "max_iters", "step_limit", "turn_limit",
        "message_limit", "token_limit", "length", "max_tokens", "model_length", "context_window",
        "context_length", "time_limit", "timeout", "timed_out", "working_limit", "cost_limit",
        "budget", "budget_exhausted", "limit", "tool_calls",
    ),
    "gave_up": (
        "gave_up", "give_up", "gaveup", "abandoned", "abandon", "refused", "refusal", "quit",
        "handoff", "transfer", "transferred", "transfer_to_human", "escalated", "no_answer",
    ),
    "error": (
        "error", "errored", "exception", "crash", "crashed", "failed", "failure", "api_error",
        "tool_error", "content_filter", "cancelled", "canceled", "aborted", "killed", "operator",
    ),
}.items():
    for _n in _names:
        FINISH_MAP[_n] = _bucket

TIMEOUT_RAW = frozenset({"timeout", "timed_out", "time_limit", "working_limit", "limit:time",
                         "limit:working"})


def normalize_reason(raw: Any) -> str | None:
    """Lower-case, underscore-joined reason text; None for empty values."""
    if raw is None or isinstance(raw, bool):
        return None
    text = str(raw).strip().lower()
    if not text:
        return None
    return re.sub(r"[\s\-]+", "_", text)


def bucket_finish(raw: Any) -> str:
    """Map a raw finish reason to completed / max_steps / gave_up / error / unknown.

    `limit:<type>` (Inspect sample limits) is a budget (max_steps) except `operator` and `custom`
    (stopped from outside: error). Anything not in the table is `unknown`, never guessed.
    """
    norm = normalize_reason(raw)
    if norm is None:
        return "unknown"
    if norm.startswith("limit:"):
        return "error" if norm in ("limit:operator", "limit:custom") else "max_steps"
    return FINISH_MAP.get(norm, "unknown")


def pick_finish(candidates: Iterable[Any]) -> tuple[str | None, str]:
    """The first candidate that maps to a known bucket, else the first raw value as unknown."""
    first: str | None = None
    for c in candidates:
        norm = normalize_reason(c)
        if norm is None:
            continue
        first = first or str(c)
        bucket = bucket_finish(norm)
        if bucket != "unknown":
            return str(c), bucket
    return first, "unknown"


# -- tool results -----------------------------------------------------------------------------------

_INVALID_ARGS = re.compile(
    r"(?i)invalid\s+(?:tool\s+)?(?:arguments?|args|parameters?|input|json)|validation\s+error|"
    r"missing\s+(?:\d+\s+)?required\s+(?:positional\s+|keyword\s+)?(?:arguments?|parameters?|fields?|propert)|"
    r"unexpected\s+keyword\s+argument|not\s+valid\s+json|could\s+not\s+(?:parse|decode)\s+"
    r"(?:the\s+)?(?:tool\s+)?(?:call\s+)?arguments|jsondecodeerror|schema\s+validation|"
    r"does\s+not\s+match\s+(?:the\s+)?schema"
)
_HTTP = re.compile(
    r"(?i)HTTP/\d(?:\.\d)?\s+([45]\d\d)\b|\bstatus(?:[_ ]?code)?[\"']?\s*[:=]\s*[\"']?([45]\d\d)\b|"
    r"\berror\s+code:?\s*([45]\d\d)\b|"
    r"\b([45]\d\d)\s*[-:]?\s*(?:Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|"
    r"Method Not Allowed|Not Acceptable|Request Timeout|Conflict|Gone|Unprocessable|Too Many "
    r"Requests|Internal Server Error|Not Implemented|Bad Gateway|Service Unavailable|Gateway Timeout)"
)
_EXCEPTION = re.compile(r"(?i)\W{0,3}(?:error|exception|traceback|fatal|failed)\b")
_EMPTY = frozenset({"", "[]", "{}", "null", "none", '""', "''"})
_HTTP_HINT = re.compile(r"[45]\d\d")


def _has_invalid_hint(low: str) -> bool:
    """Literal pre-check on lower-cased text: case-insensitive regex alternations are slow."""
    return ("valid" in low or "missing" in low or "unexpected" in low or "json" in low
            or "could not" in low or "schema" in low)


def _has_any_hint(low: str) -> bool:
    """True unless the text cannot be any error kind (most tool results stop here)."""
    return (_has_invalid_hint(low) or "error" in low or "exception" in low or "traceback" in low
            or "fatal" in low or "failed" in low or '"status' in low or bool(_HTTP_HINT.search(low)))


def content_text(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list of content blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping):
                text = part.get("text") if part.get("text") is not None else part.get("content")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    if isinstance(content, Mapping):
        return json.dumps(content, sort_keys=True, default=str)
    return str(content)


def _http_kind(text: str) -> str | None:
    if not _HTTP_HINT.search(text):  # cheap pre-check: most results carry no 4xx/5xx digits
        return None
    m = _HTTP.search(text)
    if not m:
        return None
    code = next(g for g in m.groups() if g)
    return "http_5xx" if code.startswith("5") else "http_4xx"


def _invalid_args(text: str, low: str | None = None) -> bool:
    return _has_invalid_hint(text.lower() if low is None else low) and bool(_INVALID_ARGS.search(text))


def classify_result(message: Mapping[str, Any]) -> str:
    """`ok` or the error kind of a tool result (4xx/5xx, empty, exception, invalid_args)."""
    err = message.get("error")
    if err:
        etype = err.get("type") if isinstance(err, Mapping) else None
        emsg = err.get("message") if isinstance(err, Mapping) else str(err)
        if etype == "parsing" or _invalid_args(str(emsg or "")):
            return "invalid_args"
        return _http_kind(str(emsg or "")[:500]) or "exception"
    content = message.get("content")
    text = (content if isinstance(content, str) else content_text(content)).strip()
    if len(text) <= 6 and text.lower() in _EMPTY:
        return "empty"
    head = text[:500]
    low = head.lower()
    if not _has_any_hint(low) and message.get("is_error") is not True:
        return "ok"
    if _invalid_args(head, low):
        return "invalid_args"
    http = _http_kind(head)
    if http:
        return http
    if message.get("is_error") is True or _EXCEPTION.match(head) or "Traceback (most recent" in head:
        return "exception"
    if head.startswith("{") and ('"error' in head or '"status' in head) and len(text) < 100_000:
        try:
            obj = _decode(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            if obj.get("error") or obj.get("errors"):
                return "exception"
            code = obj.get("status_code", obj.get("status"))
            if isinstance(code, int) and 400 <= code < 600:
                return "http_5xx" if code >= 500 else "http_4xx"
    return "ok"


# -- tool calls -------------------------------------------------------------------------------------

_URL_KEYS = ("url", "endpoint", "path", "route", "uri", "api", "href", "resource")
_URL_KEYSET = frozenset(_URL_KEYS)
_METHOD_KEYS = ("method", "http_method", "verb")
_ID_SEGMENT = re.compile(
    r"^(?:\d+|[0-9a-f]{8,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I
)


def endpoint_of(args: Any) -> str | None:
    """`METHOD /path/{id}` for arguments that carry a URL or path; None otherwise.

    Host and query string are dropped; numeric, hex and UUID path segments become `{id}`, so two
    calls to the same route with different ids count as one endpoint.
    """
    if not isinstance(args, dict) or _URL_KEYSET.isdisjoint(args):
        return None
    raw = next((args[k] for k in _URL_KEYS if isinstance(args.get(k), str) and args[k].strip()), None)
    if raw is None:
        return None
    path = raw.strip()
    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", path, flags=re.I)
    path = path.split("?", 1)[0].split("#", 1)[0] or "/"
    segments = [("{id}" if _ID_SEGMENT.match(s) else s) for s in path.split("/")]
    path = "/".join(segments)
    if len(path) > 1:
        path = path.rstrip("/")
    method = next((str(args[k]).upper() for k in _METHOD_KEYS if isinstance(args.get(k), str)), "")
    return f"{method} {path}".strip()


def _args_key(args: Any) -> str:
    text = _encode(args)
    if len(text) > ARGS_KEY_MAX:
        digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:12]
        text = f"{text[: ARGS_KEY_MAX - 20]}…#{digest}"
    return text


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _type_ok(value: Any, expected: Any) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    for name in names:
        if name == "null" and value is None:
            return True
        types = _JSON_TYPES.get(name)
        if types is None:
            return True  # a type we do not check
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, types):
            return True
    return False


def schema_problem(args: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The first way `args` breaks a tool's JSON schema (required, types, enums, extras), or None.

    A deliberately small check — top-level object properties only — so rundiff needs no
    jsonschema dependency; nested schemas are not descended into.
    """
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    for key in schema.get("required") or []:
        if key not in args:
            return f"missing required argument '{key}'"
    if schema.get("additionalProperties") is False:
        extra = sorted(k for k in args if k not in props)
        if extra:
            return f"unknown argument '{extra[0]}'"
    for key, value in args.items():
        spec = props.get(key)
        if not isinstance(spec, dict):
            continue
        if "type" in spec and not _type_ok(value, spec["type"]):
            return f"argument '{key}' should be {spec['type']}"
        if isinstance(spec.get("enum"), list) and value not in spec["enum"]:
            return f"argument '{key}' not one of the allowed values"
    return None


def parse_tool_schemas(tools: Any) -> dict[str, Mapping[str, Any]] | None:
    """Tool name → parameters schema from OpenAI-style tool specs (`{type, function: {...}}`)."""
    if not isinstance(tools, list):
        return None
    out: dict[str, Mapping[str, Any]] = {}
    for spec in tools:
        if not isinstance(spec, Mapping):
            continue
        fn = spec.get("function") if isinstance(spec.get("function"), Mapping) else spec
        name = fn.get("name")
        if isinstance(name, str):
            params = fn.get("parameters") or fn.get("input_schema") or {}
            out[name] = params if isinstance(params, Mapping) else {}
    return out or None


def parse_call(tc: Any, schemas: Mapping[str, Mapping[str, Any]] | None,
               endpoint: Callable[[Any], str | None] | None = None) -> tuple[Call, str | None] | None:
    """A Call (and its id) from an OpenAI or Inspect shaped tool call; None if it has no name.

    `endpoint` (args → endpoint) replaces the URL rule for harnesses whose one tool is a shell.
    """
    if not isinstance(tc, dict):
        return None
    fn = tc.get("function")
    if isinstance(fn, dict):  # OpenAI: {"function": {"name", "arguments": "<json>"}}
        name = fn.get("name")
        raw_args = fn.get("arguments")
    else:  # Inspect: {"function": "name", "arguments": {...}}; flat: {"name", "arguments"|"input"}
        name = fn if isinstance(fn, str) else tc.get("name")
        raw_args = tc.get("arguments", tc.get("args", tc.get("input")))
    if not isinstance(name, str) or not name:
        return None
    call_id = tc.get("id") if isinstance(tc.get("id"), str) else None
    invalid: str | None = None
    args: Any = raw_args
    if isinstance(raw_args, str):
        text = raw_args.strip()
        if not text:
            args = {}
        else:
            try:
                args = _decode(text)
            except ValueError:
                invalid = "arguments are not valid JSON"
                args = None
    elif raw_args is None:
        args = {}
    if invalid is None and not isinstance(args, dict):
        invalid = "arguments are not a JSON object"
    if tc.get("parse_error"):
        invalid = f"parse error: {str(tc['parse_error'])[:120]}"
    if invalid is None and schemas:
        if name not in schemas:
            invalid = "unknown tool (not in the export's tool schemas)"
        else:
            invalid = schema_problem(args, schemas[name])
            if invalid:
                invalid = f"schema: {invalid}"
    key = raw_args.strip()[:ARGS_KEY_MAX] if args is None else _args_key(args)
    call = Call(name=name, args_key=key, valid=invalid is None, invalid_reason=invalid,
                endpoint=(endpoint or endpoint_of)(args))
    return call, call_id


# -- redaction --------------------------------------------------------------------------------------

def redact_snippet(text: str | None, limit: int = SNIPPET) -> str | None:
    """Redacted, single-line, truncated text for reports (secrets never reach an output file)."""
    if text is None:
        return None
    text = " ".join(text[: limit * 4].split())  # a window: what is shown is redacted whole
    text = redact_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- one trajectory ---------------------------------------------------------------------------------


def analyze_messages(messages: Any, schemas: Mapping[str, Mapping[str, Any]] | None = None,
                     endpoint: Callable[[Any], str | None] | None = None) -> Features:
    """Walk a trajectory once: calls with their results, errors, retries, recoveries, thrash.

    After an error result the agent either makes another tool call (retried) or none (quit); an
    error is recovered when a later call to the same tool and endpoint returns without error;
    thrash counts errors immediately followed by another call to the same tool.
    """
    f = Features()
    if messages is None:
        return f
    if not isinstance(messages, list):
        f.malformed_messages += 1
        return f
    by_id: dict[str, Call] = {}
    unresolved = 0  # index of the first call still waiting for a result (id-less harnesses)
    final_text: str | None = None
    first_error: str | None = None
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if not isinstance(role, str):
            f.malformed_messages += 1
            continue
        if role == "assistant":
            f.assistant_turns += 1
            tcs = m.get("tool_calls")
            if tcs is None:
                tcs = []
            elif not isinstance(tcs, list):
                f.malformed_messages += 1
                tcs = []
            if isinstance(m.get("function_call"), dict):  # legacy single function call
                tcs = [*tcs, {"function": m["function_call"]}]
            for tc in tcs:
                parsed = parse_call(tc, schemas, endpoint)
                if parsed is None:
                    f.malformed_messages += 1
                    continue
                call, call_id = parsed
                f.calls.append(call)
                if call_id:
                    by_id[call_id] = call
            content = m.get("content")
            if content:
                text = content if isinstance(content, str) else content_text(content)
                if text.strip():
                    final_text = text
        elif role in ("tool", "function", "ipython"):
            tcid = m.get("tool_call_id")
            call = by_id.pop(tcid, None) if isinstance(tcid, str) else None
            if call is None:
                while unresolved < len(f.calls) and f.calls[unresolved].result is not None:
                    unresolved += 1
                if unresolved < len(f.calls):
                    call = f.calls[unresolved]
            if call is None:
                f.malformed_messages += 1  # a tool result nobody asked for
                continue
            kind = classify_result(m)
            call.result = kind
            if kind != "ok" and first_error is None:
                err = m.get("error")
                first_error = (err.get("message") if isinstance(err, dict) else None) or (
                    content_text(m.get("content")) or f"({kind})")
            if kind == "invalid_args" and call.valid:
                call.valid = False
                call.invalid_reason = "harness reported invalid arguments"
    _error_events(f)
    for c in f.calls:
        if not c.valid:
            f.invalid_calls += 1
            if len(f.invalid_reasons) < 5:
                f.invalid_reasons.append(f"{c.name}: {c.invalid_reason}")
    # Redaction is deferred to output time (only --samples snippets are ever shown); keep a window.
    f.first_error_raw = None if first_error is None else first_error[: SNIPPET * 4]
    f.final_text_raw = None if final_text is None else final_text[: SNIPPET * 4]
    return f


def _error_events(f: Features) -> None:
    calls = f.calls
    ok_later: set[tuple[str, str | None]] = set()
    recovered_at = [False] * len(calls)
    for i in range(len(calls) - 1, -1, -1):  # walk back so "a later call succeeded" is one lookup
        c = calls[i]
        recovered_at[i] = (c.name, c.endpoint) in ok_later
        if c.result == "ok":
            ok_later.add((c.name, c.endpoint))
    for i, c in enumerate(calls):
        if c.result not in ERROR_KINDS:
            continue
        f.errors += 1
        if i + 1 < len(calls):
            f.retried += 1
            if calls[i + 1].name == c.name:
                f.thrash += 1
        else:
            f.quit += 1
        if recovered_at[i]:
            f.recovered += 1
