"""Shell-agent trajectories (mini-swe-agent, SWE-agent, OpenHands) → OpenAI-shaped messages.

These harnesses give the model one tool, a shell, so "which tool" says nothing; the program a
command runs (`$ pytest`, `$ sed`) is what tells two trajectories apart. Each command becomes a
`bash` tool call whose endpoint is that program; an observation with a non-zero return code, an
exception or a timeout is an error result; a turn the harness rejected as badly formatted is an
invalid call. The rules are documented in docs/trajectories.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from rundiff_core import bucket_finish, content_text, normalize_reason

# mini-swe-agent's action regexes (1.x ```bash, 2.x text-based ```mswea_bash_command); fixed, never read from data
_BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_SEGMENT = re.compile(r"&&|\|\||;|\||\n")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SKIP_WORDS = frozenset({"cd", "export", "set", "source", ".", "true", "sudo", "env", "time", "nohup"})
_FORMAT_ERROR = re.compile(r"EXACTLY ONE action|format error|Your last output did not use any tool|"
                           r"did not (?:include|contain) (?:a|any) (?:tool call|bash)", re.I)
_TIMEOUT = re.compile(r"timed out and has been killed|command timed out|TimeoutExpired", re.I)


def shell_program(command: Any) -> str | None:
    """The program a shell command runs: `cd /x && python -m pytest a.py` → `pytest`."""
    if not isinstance(command, str):
        return None
    for seg in _SEGMENT.split(command):
        words = [w for w in seg.strip().split() if not _ENV_ASSIGN.match(w)]
        while words and words[0] in _SKIP_WORDS:
            words = words[2:] if words[0] == "cd" else words[1:]
        if not words or words[0].startswith("#"):
            continue
        prog = os.path.basename(words[0].strip("'\"()"))
        if prog.startswith("python") and len(words) > 2 and words[1] == "-m":
            prog = words[2]
        return prog[:40] or None
    return None


def shell_endpoint(args: Any) -> str | None:
    """Endpoint of a shell tool call: `$ <program>`."""
    if isinstance(args, Mapping):
        prog = shell_program(args.get("command", args.get("cmd")))
        return f"$ {prog}" if prog else None
    return None


def exit_bucket(raw: Any) -> str:
    """Finish bucket of a harness exit status (mini-swe-agent, SWE-agent, OpenHands).

    Submitted → completed; budget exits (LimitsExceeded, TimeExceeded, TimeoutExpired, SWE-agent
    `exit_cost`/`exit_context`/…, an autosubmission after one) → max_steps; `exit_forfeit` →
    gave_up; format errors, API/environment errors and any `…Error`/`…Exception` name → error.
    """
    norm = normalize_reason(raw)
    if norm is None:
        return "unknown"
    norm = norm.replace("(", "").replace(")", "")
    if norm.startswith("submitted"):
        return "max_steps" if "exit_" in norm else "completed"
    if norm in ("limitsexceeded", "timeexceeded", "timeoutexpired", "costlimitexceeded", "exit_cost",
                "exit_context", "exit_total_execution_time", "exit_command_timeout", "max_iterations",
                "stepsexceeded"):
        return "max_steps"
    if norm in ("exit_forfeit", "forfeit"):
        return "gave_up"
    if norm in ("formaterror", "repeatedformaterror", "exit_format", "exit_error", "exit_api",
                "exit_environment_error", "early_exit") or norm.endswith(("error", "exception")):
        return "error"
    return bucket_finish(norm)


def _tool_call(cid: str, command: str) -> dict[str, Any]:
    return {"id": cid, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _invalid_call(cid: str, why: str) -> dict[str, Any]:
    return {"id": cid, "function": "bash", "arguments": {}, "parse_error": why[:200]}


def _observation(cid: str, text: str, returncode: int | None, exception: bool = False) -> dict[str, Any]:
    m = _RETURNCODE.search(text[:400]) if returncode is None else None
    code = returncode if returncode is not None else (int(m.group(1)) if m else None)
    failed = exception or (code is not None and code != 0) or "<exception>" in text[:200] \
        or bool(_TIMEOUT.search(text[:300]))
    if not failed and not text.strip():
        text = "(no output)"  # a silent shell command (`sed -i`, `submit`) succeeded; it is not an empty result
    return {"role": "tool", "tool_call_id": cid, "content": text, "is_error": failed}


def _is_format_error(m: Mapping[str, Any]) -> bool:
    extra = m.get("extra") if isinstance(m.get("extra"), Mapping) else {}
    if extra.get("interrupt_type") == "FormatError":
        return True
    return m.get("role") == "user" and bool(_FORMAT_ERROR.search(content_text(m.get("content"))[:300]))


def _is_observation(m: Mapping[str, Any]) -> bool:
    if m.get("role") == "tool":
        return True
    extra = m.get("extra") if isinstance(m.get("extra"), Mapping) else {}
    if "returncode" in extra:
        return True
    head = content_text(m.get("content"))[:300].lstrip()
    return head.startswith(("<returncode>", "<exception>", "<output>")) or bool(_TIMEOUT.search(head))


def minisweagent_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """mini-swe-agent `messages` (formats mini-swe-agent-1 and -1.1) → OpenAI-shaped messages.

    1.x puts one ```bash block in the assistant text and the observation in a user message
    (`<returncode>…`); 2.x adds `extra.actions`, OpenAI `tool_calls` and role `tool`, and ends with
    an `exit` message. A user message rejecting the previous turn's format makes that turn one
    invalid call.
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # call ids still waiting for an observation
    n = 0
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            out.append(m)  # let analyze_messages count it as malformed
            continue
        role = m["role"]
        if _is_format_error(m):
            # the turn before was rejected: 1.x kept that assistant message, 2.x keeps only this one
            n += 1
            first = content_text(m.get("content")).strip().splitlines()
            bad = _invalid_call(f"msa{n}", "format error: " + (first[0] if first else ""))
            last = out[-1] if out else None
            if isinstance(last, dict) and last.get("role") == "assistant" and not last.get("tool_calls"):
                last["tool_calls"] = [bad]
            else:
                extra = m.get("extra") if isinstance(m.get("extra"), Mapping) else {}
                out.append({"role": "assistant", "content": content_text(extra.get("model_response")),
                            "tool_calls": [bad]})
            continue
        if role == "assistant":
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            text = content_text(m.get("content"))
            msg: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": []}
            if isinstance(nxt, Mapping) and _is_format_error(nxt):
                out.append(msg)  # its blocks were never run; the format error makes it one invalid call
                continue
            extra = m.get("extra") if isinstance(m.get("extra"), Mapping) else {}
            actions = extra.get("actions")
            commands: list[tuple[str | None, str]] = []
            if isinstance(actions, list) and actions:
                commands = [(a.get("tool_call_id"), str(a.get("command", ""))) for a in actions if isinstance(a, Mapping)]
            elif isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
                for tc in m["tool_calls"]:
                    fn = tc.get("function") if isinstance(tc, Mapping) else None
                    if isinstance(fn, Mapping):
                        try:
                            args = json.loads(fn.get("arguments") or "{}")
                        except (TypeError, ValueError):
                            args = {}
                        cmd = args.get("command", "") if isinstance(args, Mapping) else ""
                        commands.append((tc.get("id"), str(cmd)))
            else:
                commands = [(None, c) for c in _BASH_BLOCK.findall(text)]
            for cid, cmd in commands:
                n += 1
                cid = cid or f"msa{n}"
                msg["tool_calls"].append(_tool_call(cid, cmd))
                pending.append(cid)
            out.append(msg)
        elif role in ("user", "tool") and _is_observation(m) and (pending or role == "tool"):
            extra = m.get("extra") if isinstance(m.get("extra"), Mapping) else {}
            cid = m.get("tool_call_id") if isinstance(m.get("tool_call_id"), str) else (pending[0] if pending else "")
            if cid in pending:
                pending.remove(cid)
            rc = extra.get("returncode")
            out.append(_observation(cid, content_text(m.get("content")), rc if isinstance(rc, int) else None,
                                    bool(extra.get("exception_info"))))
        elif role in ("system", "user"):
            out.append({"role": role, "content": content_text(m.get("content"))})
        # role "exit" (2.x) carries the exit status, read from info
    return out


def sweagent_messages(steps: list[Any]) -> list[dict[str, Any]]:
    """SWE-agent `trajectory[]` steps (`action`, `observation`, `thought`) → OpenAI-shaped messages."""
    out: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping):
            out.append(step)
            continue
        action = step.get("action")
        thought = step.get("thought") if isinstance(step.get("thought"), str) else ""
        cid = f"swe{i}"
        if not isinstance(action, str) or not action.strip():
            out.append({"role": "assistant", "content": thought or content_text(step.get("response"))})
            continue
        out.append({"role": "assistant", "content": thought, "tool_calls": [_tool_call(cid, action.strip())]})
        obs = step.get("observation")
        text = obs if isinstance(obs, str) else content_text(obs)
        out.append(_observation(cid, text, None))
    return out


def openhands_messages(history: list[Any]) -> tuple[list[dict[str, Any]], str | None]:
    """OpenHands `history` events → OpenAI-shaped messages, plus the last agent action type.

    Actions become tool calls named by their `action` (`run` commands get a `$ program`
    endpoint through their `command` argument); observations answer the action their `cause`
    names; an `error` observation or a non-zero `exit_code` is an error result. Old histories
    of `[action, observation]` pairs are flattened first.
    """
    events: list[Any] = []
    for ev in history:
        if isinstance(ev, list):
            events.extend(ev)
        else:
            events.append(ev)
    out: list[dict[str, Any]] = []
    by_id: dict[Any, str] = {}
    pending: list[str] = []
    last_action: str | None = None
    for i, ev in enumerate(events):
        if not isinstance(ev, Mapping):
            out.append(ev)
            continue
        if ev.get("action") and ev.get("source") != "user":
            act = str(ev["action"])
            if act in ("system", "message", "recall", "think", "change_agent_state", "condensation"):
                if act == "message":
                    out.append({"role": "assistant", "content": content_text((ev.get("args") or {}).get("content")
                                                                             or ev.get("message"))})
                continue
            last_action = act
            args = ev.get("args") if isinstance(ev.get("args"), Mapping) else {}
            call_args = {k: v for k, v in args.items() if k in ("command", "path", "code", "url", "task_list")}
            cid = f"oh{ev.get('id', i)}"
            by_id[ev.get("id")] = cid
            pending.append(cid)
            out.append({"role": "assistant", "content": content_text(args.get("thought")),
                        "tool_calls": [{"id": cid, "type": "function", "function": {
                            "name": act, "arguments": json.dumps(call_args, sort_keys=True, default=str)}}]})
        elif ev.get("observation"):
            obs = str(ev["observation"])
            if obs in ("agent_state_changed", "recall", "null", "condensation"):
                continue
            cid = by_id.get(ev.get("cause")) or (pending[0] if pending else None)
            if cid is None:
                continue
            if cid in pending:
                pending.remove(cid)
            extras = ev.get("extras") if isinstance(ev.get("extras"), Mapping) else {}
            meta = extras.get("metadata") if isinstance(extras.get("metadata"), Mapping) else {}
            code = meta.get("exit_code", extras.get("exit_code"))
            out.append(_observation(cid, content_text(ev.get("content")), code if isinstance(code, int) else None,
                                    obs == "error"))
        elif ev.get("source") == "user" and ev.get("action") == "message":
            out.append({"role": "user", "content": content_text((ev.get("args") or {}).get("content"))})
    return out, last_action
