"""Proxy vs downstream: which metrics track convergence and which are what the project optimises.

A *proxy* metric is cheap and computed during training (loss, perplexity, kNN or online-probe
accuracy); a *downstream* metric is the target (linear probe, finetune, benchmark and `eval/` /
`test/` scores). A *diagnostic* (learning rate, grad norm, throughput, epoch counters) is neither
and is not compared unless asked for. Reports keep the groups apart and never declare a winner from
proxy metrics alone.

Where a metric's group comes from, first match wins:
1. `--proxy` / `--downstream` / `--diagnostic` patterns on the command line;
2. the `[groups]` table of the project file `rundiff.toml` (found from the working directory up
   to the repository root);
3. the documented heuristic `HEURISTIC` below (docs/compare.md shows it as a table).
Patterns are shell globs (`eval/*`) matched case-insensitively against the metric name and the
keys runs actually logged.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .directions import vocabulary
from .project import PROJECT_FILE, find_project_file, project_table

GROUPS = ("proxy", "downstream", "diagnostic")


@dataclass(frozen=True)
class Rule:
    """One heuristic rule: a regex on the metric name, the group it implies, and why."""

    group: str
    pattern: str
    why: str

    def matches(self, name: str) -> bool:
        return re.search(self.pattern, name, re.I) is not None


# Ordered: the first matching rule decides. kNN / online probes come before "probe", and loss-like
# names before the eval/ prefix, because a held-out loss still tracks the training objective.
HEURISTIC: tuple[Rule, ...] = (
    Rule("diagnostic",
         r"(^|[/._-])(lr\d*|learning[_-]?rate|grad(ient)?[_-]?norm|param[_-]?norm|weight[_-]?norm|"
         r"epoch|step|global[_-]?step|iter(ation)?|tokens?([_-]?seen)?|samples?([_-]?seen)?|"
         r"throughput|(samples|tokens|steps|it)[_-]?(per[_-]?sec(ond)?|/s)|mfu|memory|mem|gpu|"
         r"time|duration|wall[_-]?time|momentum|weight[_-]?decay|batch[_-]?size|scale)($|[/._-])",
         "optimiser state, counters and throughput are not quality metrics"),
    Rule("proxy", r"knn|k[_-]nn|online[_-]?(linear[_-]?)?probe|nearest[_-]?neighbou?r",
         "kNN and online probes are cheap proxies computed during training"),
    Rule("downstream",
         r"linear[_-]?(probe|eval)|lin[_-]?probe|fine[_-]?tun|(^|[/._-])ft([/._-]|$)|transfer|"
         r"downstream|benchmark|zero[_-]?shot|few[_-]?shot|mmlu|hellaswag|gsm8k|humaneval|"
         r"winogrande|piqa|boolq|lambada|arc[_-](easy|challenge)|(^|[/._-])glue([/._-]|$)|superglue",
         "linear probe, finetune and benchmark scores are the target"),
    Rule("proxy", r"loss|perplexity|nll|entropy|(^|[/._-])(ppl|bpb|bpc|bpd)($|[/._-])",
         "losses and perplexity track the training objective (even on held-out data)"),
    Rule("downstream", r"^(eval|evaluation|test|testing|downstream|benchmark|bench)[/._-]",
         "eval/, test/ and downstream/ prefixes name evaluation results"),
    Rule("downstream", r"(^|[/._-])(ep_?)?(rew(ard)?s?|ret(urn)?s?|success(_?rate)?)($|[/._-])"
         r"|EpRet|EpRew|(Average|Test|Max|Min)?EpRet",
         "an episode's return, reward or success rate is what reinforcement learning optimises "
         "and is judged on"),
    Rule("proxy", r".", "anything else is computed during training: treated as a proxy"),
)


@dataclass(frozen=True)
class GroupDecision:
    """A metric's group and where the decision came from ('--proxy', 'rundiff.toml', 'heuristic')."""

    group: str
    source: str
    reason: str


@dataclass
class GroupRules:
    """Explicit patterns (command line first, then the project file) ahead of the heuristic."""

    cli: dict[str, list[str]] = field(default_factory=dict)
    project: dict[str, list[str]] = field(default_factory=dict)
    project_file: str | None = None

    def classify(self, metric: str, aliases: Iterable[str] = (),
                 runs: Iterable[Any] = ()) -> GroupDecision:
        """The group of `metric` (also matching the keys runs logged it under, `aliases`); after
        the command line and the project file, what the runs' own format declares
        (`Run.meta["groups"]`: an lm-eval score is a benchmark result)."""
        names = [metric, *[a for a in aliases if a != metric]]
        for source, table in (("command line", self.cli), (self.project_file or PROJECT_FILE,
                                                            self.project)):
            for group in GROUPS:
                for pattern in table.get(group, ()):
                    if any(fnmatch.fnmatchcase(n.lower(), pattern.lower()) for n in names):
                        flag = f"--{group}" if source == "command line" else f"[groups] {group}"
                        return GroupDecision(group, source, f"{flag} {pattern!r}")
        for run in runs:
            declared = run.meta.get("groups") if isinstance(getattr(run, "meta", None), dict) else None
            if isinstance(declared, dict):
                hit = next((declared[n] for n in names if declared.get(n) in GROUPS), None)
                if hit is not None:
                    return GroupDecision(hit, "declared", f"declared {hit} by the run's format "
                                         f"({run.meta.get('layout') or run.adapter})")
        quality = vocabulary(metric).known  # `train_loss_step` is a loss, not a step counter
        for rule in HEURISTIC:
            if rule.group == "diagnostic" and quality:
                continue
            if rule.matches(metric):
                return GroupDecision(rule.group, "heuristic", rule.why)
        return GroupDecision("proxy", "heuristic", HEURISTIC[-1].why)  # pragma: no cover

    def explicit_names(self) -> list[str]:
        """Command-line patterns that are plain names (no glob): metrics the user asked to see."""
        return [p for g in GROUPS for p in self.cli.get(g, ()) if not any(c in p for c in "*?[")]


def classify(metric: str, rules: GroupRules | None = None, runs: Iterable[Any] = ()) -> GroupDecision:
    """The group of one metric name under `rules` (default: heuristic only) and what `runs`
    declare."""
    return (rules or GroupRules()).classify(metric, runs=runs)


def load_project_groups(path: str) -> dict[str, list[str]]:
    """The `[groups]` table of a project file: {group: [patterns]}; bad content is an InputError."""
    table = project_table(path, "groups", hint="see docs/compare.md for the [groups] table")
    if not isinstance(table, dict):
        raise InputError(f"{path}: [groups] must be a table", hint='e.g. downstream = ["eval/*"]')
    out: dict[str, list[str]] = {}
    for group, patterns in table.items():
        if group not in GROUPS:
            raise InputError(f"{path}: unknown group {group!r} in [groups]",
                             hint=f"groups are {', '.join(GROUPS)}")
        if isinstance(patterns, str):
            patterns = [patterns]
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise InputError(f"{path}: [groups] {group} must be a list of name patterns")
        out[group] = list(patterns)
    return out


def build_rules(
    proxy: Sequence[str] = (),
    downstream: Sequence[str] = (),
    diagnostic: Sequence[str] = (),
    project_file: str | None = None,
    *,
    search: bool = True,
) -> GroupRules:
    """Rules from command-line patterns and the project file (searched for when not given)."""
    path = project_file or (find_project_file() if search else None)
    if project_file and not os.path.isfile(project_file):
        raise InputError(f"project file not found: {project_file}")
    cli = {g: list(p) for g, p in (("proxy", proxy), ("downstream", downstream),
                                   ("diagnostic", diagnostic)) if p}
    return GroupRules(cli=cli, project=load_project_groups(path) if path else {}, project_file=path)
