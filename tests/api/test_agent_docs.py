"""docs/agents.md, the skill file and the README match the server they describe."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from rundiff.agents.schema import DESCRIPTIONS
from rundiff.agents.server import TOOL_NAMES
from rundiff_core.cli import build_parser
from rundiff_core.engines.diff import VERDICTS

REPO = Path(__file__).resolve().parents[2]
AGENTS = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
SKILL = (REPO / "docs" / "skills" / "rundiff" / "SKILL.md").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")


def _registrations(text: str) -> list[dict]:
    """Every `{"mcpServers": …}` JSON object in a document."""
    decoder = json.JSONDecoder()
    return [decoder.raw_decode(text, m.start())[0]
            for m in re.finditer(r'\{\s*"mcpServers"', text)]


def test_registration_snippets_start_the_real_command() -> None:
    snippets = _registrations(AGENTS) + _registrations(README)
    assert len(snippets) >= 2
    for snippet in snippets:
        entry = snippet["mcpServers"]["rundiff"]
        assert entry["command"] == "rundiff"
        args = build_parser().parse_args(entry["args"])
        assert args.command == "mcp" and args.root and args.func.__module__ == "rundiff.agents.command"


def test_agents_md_documents_every_tool_and_option() -> None:
    for name in TOOL_NAMES:
        assert f"| `{name}` |" in AGENTS, f"agents.md lacks the tool {name}"
    assert set(DESCRIPTIONS) == set(TOOL_NAMES)
    sub = build_parser()._subparsers._group_actions[0].choices["mcp"]
    flags = {s for a in sub._actions for s in a.option_strings if s.startswith("--") and s != "--help"}
    for flag in flags:
        assert f"`{flag}" in AGENTS, f"agents.md lacks {flag}"


def test_skill_file_front_matter_tools_and_verdicts() -> None:
    assert SKILL.startswith("---\n")
    front = yaml.safe_load(SKILL.split("---\n")[1])
    assert set(front) == {"name", "description"} and front["name"] == "rundiff"
    assert 50 < len(front["description"]) < 1024
    called = set(re.findall(r"`(\w+)\(", SKILL))
    assert called == set(TOOL_NAMES), called ^ set(TOOL_NAMES)
    for verdict in VERDICTS:
        assert f"`{verdict}`" in SKILL  # the verdict table quotes the engine's templates exactly
