"""Per-trajectory signals: error results, finish buckets, endpoints, call validity, recovery."""

from __future__ import annotations

import json

import pytest

from rundiff_core.trajectories.signals import (
    analyze_messages,
    bucket_finish,
    classify_result,
    endpoint_of,
    parse_call,
    parse_tool_schemas,
    pick_finish,
    redact_snippet,
)


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("HTTP/1.1 404 Not Found", "http_4xx"),
        ('{"status": 503, "detail": "down"}', "http_5xx"),
        ("500 Internal Server Error", "http_5xx"),
        ("", "empty"),
        ("[]", "empty"),
        ("Error: payment method not found", "exception"),
        ("Traceback (most recent call last):\n  File x", "exception"),
        ('{"error": "no such user"}', "exception"),
        ("Invalid arguments: missing required field 'q'", "invalid_args"),
        ("450.0", "ok"),  # a calculator result, not a status code
        ('{"flight": "HAT404", "status": "available"}', "ok"),
        ("Transfer successful", "ok"),
    ],
)
def test_classify_result(content: str, kind: str) -> None:
    assert classify_result({"role": "tool", "content": content}) == kind


def test_inspect_tool_error_field() -> None:
    assert classify_result({"role": "tool", "content": "", "error": {"type": "parsing", "message": "x"}}) == "invalid_args"
    assert classify_result({"role": "tool", "content": "ok", "error": {"type": "timeout", "message": "slow"}}) == "exception"


@pytest.mark.parametrize(
    ("raw", "bucket"),
    [("stop", "completed"), ("END_TURN", "completed"), ("max_tokens", "max_steps"), ("length", "max_steps"),
     ("limit:message", "max_steps"), ("limit:operator", "error"), ("gave up", "gave_up"),
     ("transfer_to_human", "gave_up"), ("content_filter", "error"), ("crashed", "error"),
     ("tool_calls", "max_steps"), ("weird_reason", "unknown"), (None, "unknown")],
)
def test_bucket_finish(raw: str | None, bucket: str) -> None:
    assert bucket_finish(raw) == bucket


def test_pick_finish_prefers_first_known() -> None:
    assert pick_finish(["db_hash_123", "stop"]) == ("stop", "completed")
    assert pick_finish(["mystery"]) == ("mystery", "unknown")


def test_endpoint_normalisation() -> None:
    assert endpoint_of({"url": "https://api.x.com/v1/users/123/orders?page=2", "method": "get"}) == "GET /v1/users/{id}/orders"
    assert endpoint_of({"url": "/v1/users/9f8e7d6c5b4a/"}) == "/v1/users/{id}"
    assert endpoint_of({"q": "x"}) is None


def test_parse_call_validity() -> None:
    schemas = parse_tool_schemas([{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False}}}])
    ok, _ = parse_call({"id": "1", "function": {"name": "search", "arguments": '{"q": "a"}'}}, schemas)
    assert ok.valid and ok.args_key == '{"q":"a"}'
    bad_json, _ = parse_call({"function": {"name": "search", "arguments": '{"q": '}}, schemas)
    assert not bad_json.valid and "not valid JSON" in bad_json.invalid_reason
    missing, _ = parse_call({"function": {"name": "search", "arguments": "{}"}}, schemas)
    assert not missing.valid and "required" in missing.invalid_reason
    extra, _ = parse_call({"function": {"name": "search", "arguments": '{"q": "a", "z": 1}'}}, schemas)
    assert not extra.valid and "unknown argument" in extra.invalid_reason
    wrong_type, _ = parse_call({"function": {"name": "search", "arguments": '{"q": 3}'}}, schemas)
    assert not wrong_type.valid
    unknown_tool, _ = parse_call({"function": {"name": "nope", "arguments": "{}"}}, schemas)
    assert not unknown_tool.valid
    inspect_shape, cid = parse_call({"id": "c1", "function": "search", "arguments": {"q": "a"}, "parse_error": None}, None)
    assert inspect_shape.valid and cid == "c1" and inspect_shape.signature == ("search", '{"q":"a"}')
    inspect_bad, _ = parse_call({"function": "search", "arguments": {}, "parse_error": "bad json"}, None)
    assert not inspect_bad.valid
    assert parse_call({"function": {"arguments": "{}"}}, None) is None  # no name: malformed


def _turn(cid: str, tool: str, args: dict, result: str) -> list[dict]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]},
        {"role": "tool", "tool_call_id": cid, "content": result}]


def test_recovery_quit_and_thrash() -> None:
    msgs = [{"role": "user", "content": "go"},
            *_turn("1", "get", {"id": 1}, "404 Not Found"),
            *_turn("2", "get", {"id": 2}, "500 Internal Server Error"),
            *_turn("3", "get", {"id": 3}, '{"ok": true}'),
            *_turn("4", "post", {"x": 1}, "Error: denied"),
            {"role": "assistant", "content": "I give up. api_key=sk-abcdefghijklmnopqrstuv"}]
    f = analyze_messages(msgs)
    assert [c.result for c in f.calls] == ["http_4xx", "http_5xx", "ok", "exception"]
    assert (f.errors, f.retried, f.quit, f.recovered, f.thrash) == (3, 2, 1, 2, 2)
    assert f.assistant_turns == 5
    assert f.first_error_raw == "404 Not Found"
    shown = redact_snippet(f.final_text_raw)
    assert "sk-abc" not in shown and "REDACTED" in shown


def test_malformed_messages_are_counted_not_fatal() -> None:
    msgs = ["not a dict", {"content": "no role"}, {"role": "assistant", "tool_calls": "nope"},
            {"role": "assistant", "tool_calls": [{"function": {}}]}, {"role": "tool", "content": "orphan"}]
    f = analyze_messages(msgs)
    assert f.malformed_messages == 5 and f.calls == []
    assert analyze_messages("not a list").malformed_messages == 1
    assert analyze_messages(None).malformed_messages == 0


def test_redact_snippet() -> None:
    text = 'call with {"password": "hunter2", "token": "abc"} Bearer abcdefghijkl ghp_' + "a" * 30
    out = redact_snippet(text, 500)
    for secret in ("hunter2", '"abc"', "abcdefghijkl", "ghp_aaaa"):
        assert secret not in out
    assert len(redact_snippet("x" * 1000, 50)) == 50
