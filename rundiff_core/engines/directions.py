"""Which way is better for a metric: named by the user, declared by the run, read from the
documented vocabulary, or unknown — never guessed.

Where a metric's direction comes from, first match wins:

1. `--goal METRIC=min|max` on the command line (a bare `--goal min|max` applies to every metric);
2. the `[goals]` table of `rundiff.toml` (`"val/ngram_*" = "max"`);
3. what the runs declare (`declared_goals`): a config that holds HF Trainer's
   `metric_for_best_model` with `greater_is_better`, a checkpoint or early-stopping callback's
   `monitor` with `mode` (Keras, Lightning), Ray Tune's `metric` with `mode`, a W&B sweep's
   `metric: {name, goal}`; or an adapter's own `Run.meta["goals"]` (lm-eval's `higher_is_better`).
   Runs that declare opposite directions declare nothing;
4. the vocabulary below, matched on the tokens of the name;
5. else unknown: no best, better, worse, verdict or winner is printed for the metric, only
   `direction unknown for M: pass --goal M=max or min`.

Tokens are the pieces of a name between `/ . _ - ( ) , : @` and spaces, each also split at
camelCase and letter/digit boundaries (`metrics/mAP50-95(B)` → `metrics`, `map50`, `95`, `b`;
`AverageEpRet` → `average`, `ep`, `ret`). Stdlib only: the CLI imports it for every command.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import Run

GOALS = ("min", "max")

# The vocabulary: (token pattern, what it names). Patterns fully match one token (lower-cased);
# a pattern with a space matches consecutive tokens.
HIGHER: tuple[tuple[str, str], ...] = (
    (r"acc(uracy)?\d*|accs", "accuracy"),
    (r"m?ap(\d+|s|m|l|r)?", "average precision (AP, mAP50, bbox/APs)"),
    (r"precision|prec", "precision"),
    (r"recall", "recall"),
    (r"f1|fscore|f1score|f1_score", "F1"),
    (r"auc|auroc|auprc|roc_auc", "area under a curve"),
    (r"m?iou\d*", "intersection over union"),
    (r"dice", "Dice"),
    (r"bleu\d*|sacrebleu", "BLEU"),
    (r"rouge\w*", "ROUGE (rouge1, rougeL…)"),
    (r"chrf\+*", "chrF"),
    (r"exact match|exact|em", "exact match"),
    (r"pass@\w+|pass at \d+|pass\d+", "pass@k"),
    (r"win rate|winrate|wins?", "win rate"),
    (r"rewards?|rew|eprew", "reward"),
    (r"returns?|ret|epret", "return"),
    (r"scores?", "score"),
    (r"success(es)?|solved|resolved", "success"),
    (r"ndcg(@\w+)?", "NDCG"),
    (r"mrr(@\w+)?", "MRR"),
    (r"hits?@\w+|hit at \d+|hit rate|hitrate", "hit@k"),
    (r"top\d+|top \d+", "top-k accuracy"),
    (r"r2", "R²"),
    (r"correct", "correct"),
)
LOWER: tuple[tuple[str, str], ...] = (
    (r"loss(es)?\d*", "loss"),
    (r"errors?|err\d*", "error"),
    (r"wer", "word error rate"),
    (r"cer", "character error rate"),
    (r"perplexity|ppl", "perplexity"),
    (r"nll", "negative log-likelihood"),
    (r"mse|rmse|mae|rmsle|msle", "squared or absolute error"),
    (r"fid", "FID"),
    (r"kl|kld", "KL divergence"),
    (r"ece", "calibration error"),
    (r"latency", "latency"),
    (r"bpb|bpc|bpd", "bits per byte, character or dimension"),
    (r"regret", "regret"),
)
NO_DIRECTION: tuple[tuple[str, str], ...] = (
    (r"epochs?|steps?|global step|iters?|iterations?|timesteps?|updates?|episodes?|"
     r"samples?|examples?|tokens?", "a counter or axis"),
    (r"lr\d*|learning rate", "the learning rate"),
    (r"time|times|runtime|duration|elapsed|wall|fps|sps|throughput|speed", "time or throughput"),
    (r"std|stderr|sem|var|variance|ci|scale|delta", "a spread, scale or change, not a quality"),
)
"""Names with these tokens and no vocabulary word have no direction; a spread (`acc_stderr`,
`reward_std`), scale (`loss_scale`) or change (Spinning Up's `DeltaLossPi`) has none even beside a
vocabulary word."""
_SPREAD = re.compile(r"std|stderr|sem|var|variance|ci|scale|delta")
_NEG = "neg"  # scikit-learn's `neg_mean_squared_error`: a negated error, higher is better

_SPLIT = re.compile(r"[/._\-(),:\s\[\]]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokens(name: str) -> list[str]:
    """The lower-cased tokens of a metric name (see the module docstring): each piece whole, then
    its camelCase parts (`AverageEpRet` → `averageepret`, `average`, `ep`, `ret`; `APs` → `aps`,
    …), digits staying with the word before them (`acc1`, `top5`); `mAP50`, `mIoU` stay whole."""
    out: list[str] = []
    for part in _SPLIT.split(name):
        if not part:
            continue
        low = part.lower()
        out.append(low)
        if "@" in part:  # pass@1, ndcg@10: one token, and the word before it (`recall@1`)
            out.append(low.split("@", 1)[0])
            continue
        pieces = _CAMEL.findall(part)
        if len(pieces) < 2 or (part[0].islower() and part[1:2].isupper()):
            continue
        merged: list[str] = []
        for p in pieces:
            if p.isdigit() and merged:
                merged[-1] += p
            else:
                merged.append(p.lower())
        out += [m for m in merged if m != low] if len(merged) > 1 else []
    return out


def _compile(table: tuple[tuple[str, str], ...]) -> list[tuple[list[re.Pattern[str]], str]]:
    out = []
    for pattern, what in table:
        singles = [p for p in pattern.split("|") if " " not in p]
        phrases = [p for p in pattern.split("|") if " " in p]
        compiled = [re.compile(f"(?:{'|'.join(singles)})")] if singles else []
        compiled += [re.compile(p.replace(" ", r"\s")) for p in phrases]
        out.append((compiled, what))
    return out


_HIGHER, _LOWER, _NONE = _compile(HIGHER), _compile(LOWER), _compile(NO_DIRECTION)


def _hit(table: list[tuple[list[re.Pattern[str]], str]], toks: list[str]) -> tuple[str, str] | None:
    """(the token or phrase that matched, what it names), else None."""
    joined = " ".join(toks)
    for compiled, what in table:
        for pat in compiled:
            if r"\s" in pat.pattern:
                m = re.search(rf"(?:^|\s)({pat.pattern})(?:\s|$)", joined)
                if m:
                    return m.group(1), what
            else:
                for t in toks:
                    if pat.fullmatch(t):
                        return t, what
    return None


@dataclass(frozen=True)
class Direction:
    """A metric's direction and where it came from.

    `goal` is "min", "max" or None (unknown, or no direction at all); `source` is one of
    "--goal", "rundiff.toml", "declared", "vocabulary", "no direction", "unknown"; `reason` says
    what decided it, in words a reader can check."""

    metric: str
    goal: str | None
    source: str
    reason: str

    @property
    def known(self) -> bool:
        return self.goal is not None

    def unknown_text(self) -> str:
        """The one line printed instead of any better/worse claim."""
        what = "has no direction" if self.source == "no direction" else "direction unknown"
        if self.source == "no direction":
            return f"{self.metric} {what} ({self.reason}): pass --goal {self.metric}=max or min"
        return f"direction unknown for {self.metric}: pass --goal {self.metric}=max or min"

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "source": self.source, "reason": self.reason}


def vocabulary(metric: str) -> Direction:
    """The direction the documented vocabulary gives `metric`, else no direction or unknown."""
    toks = tokens(metric)
    low, high = _hit(_LOWER, toks), _hit(_HIGHER, toks)
    spread = next((t for t in toks if _SPREAD.fullmatch(t)), None)
    if spread is not None and (low or high):
        return Direction(metric, None, "no direction",
                         f"'{spread}' names a spread, scale or change, not a quality")
    if low is not None:
        if _NEG in toks:
            return Direction(metric, "max", "vocabulary",
                             f"'{_NEG}' + '{low[0]}' ({low[1]}, negated): higher is better")
        return Direction(metric, "min", "vocabulary", f"'{low[0]}' ({low[1]}): lower is better")
    if high is not None:
        return Direction(metric, "max", "vocabulary", f"'{high[0]}' ({high[1]}): higher is better")
    none = _hit(_NONE, toks)
    if none is not None:
        return Direction(metric, None, "no direction", f"'{none[0]}' is {none[1]}")
    return Direction(metric, None, "unknown", "no word of the vocabulary in the name")


# -- what runs declare ----------------------------------------------------------------------------
_GOAL_WORDS = {"min": "min", "max": "max", "minimize": "min", "maximize": "max",
               "minimise": "min", "maximise": "max", "lower": "min", "higher": "max"}


def _as_goal(value: Any) -> str | None:
    return _GOAL_WORDS.get(value.strip().lower()) if isinstance(value, str) else None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


@dataclass(frozen=True)
class Declared:
    """A direction (and maybe a headline metric) a run's own config or tracker declares."""

    metric: str
    goal: str | None
    source: str  # e.g. "HF Trainer metric_for_best_model with greater_is_better=False"
    headline: bool = False  # the framework names it as the metric that picks the best model


def _walk(node: Any, depth: int = 0) -> Iterable[Mapping[str, Any]]:
    if depth > 12:
        return
    if isinstance(node, Mapping):
        yield node
        for v in node.values():
            yield from _walk(v, depth + 1)
    elif isinstance(node, list | tuple):
        for v in node[:200]:
            yield from _walk(v, depth + 1)


def declared_in_config(config: Mapping[str, Any]) -> list[Declared]:
    """Directions a config declares (HF Trainer, Keras/Lightning callbacks, Ray Tune, W&B
    sweeps), in the order found."""
    out: list[Declared] = []
    for node in _walk(config):
        mfbm = node.get("metric_for_best_model")
        if isinstance(mfbm, str) and mfbm:
            gib = _as_bool(node.get("greater_is_better"))
            if gib is None:  # the Trainer's own default: loss-like names are minimised
                goal = "min" if mfbm.endswith("loss") else "max"
                how = f"HF Trainer metric_for_best_model={mfbm!r} (greater_is_better unset: " \
                      f"the Trainer {'minimises' if goal == 'min' else 'maximises'} it)"
            else:
                goal = "max" if gib else "min"
                how = f"HF Trainer metric_for_best_model={mfbm!r} with greater_is_better={gib}"
            out.append(Declared(mfbm, goal, how, headline=True))
        monitor, mode = node.get("monitor"), _as_goal(node.get("mode"))
        if isinstance(monitor, str) and monitor and mode:
            out.append(Declared(monitor, mode, f"a checkpoint/early-stopping callback: "
                                f"monitor={monitor!r}, mode={node.get('mode')!r}", headline=True))
        metric = node.get("metric")
        if isinstance(metric, str) and metric and mode:
            out.append(Declared(metric, mode, f"a tuner config: metric={metric!r}, "
                                f"mode={node.get('mode')!r}", headline=True))
        if isinstance(metric, Mapping) and isinstance(metric.get("name"), str):
            goal = _as_goal(metric.get("goal"))
            if goal:
                out.append(Declared(metric["name"], goal, f"a W&B sweep: metric.name="
                                    f"{metric['name']!r}, goal={metric.get('goal')!r}",
                                    headline=True))
    return out


def declared_goals(run: Run) -> list[Declared]:
    """What one run declares: its adapter's `meta["goals"]` ({key: {"goal", "source",
    "headline"}}) first, then its config (cached on the run)."""
    hit = run.__dict__.get("_declared")
    if hit is not None:
        return hit
    out: list[Declared] = []
    goals = run.meta.get("goals") if isinstance(run.meta, Mapping) else None
    if isinstance(goals, Mapping):
        for key, spec in goals.items():
            if isinstance(spec, Mapping) and spec.get("goal") in GOALS:
                out.append(Declared(str(key), spec["goal"], str(spec.get("source") or "the run"),
                                    headline=bool(spec.get("headline"))))
    if isinstance(run.config, Mapping):
        out += declared_in_config(run.config)
    run.__dict__["_declared"] = out
    return out


def _spellings(declared: str) -> set[str]:
    """The logged keys a declared name can stand for: HF's `eval_` prefix (`loss` → `eval_loss`,
    W&B's `eval/loss`), case kept."""
    base = declared[5:] if declared.startswith(("eval_", "eval/")) else declared
    return {declared, f"eval_{base}", f"eval/{base}"}


def _runs_declare(metric: str, runs: Sequence[Run]) -> Direction | None:
    found: dict[str, str] = {}
    for run in runs:
        for d in declared_goals(run):
            if d.goal and metric in _spellings(d.metric):
                found.setdefault(d.goal, d.source)
    if len(found) == 1:
        goal, source = next(iter(found.items()))
        return Direction(metric, goal, "declared", source)
    if len(found) > 1:
        return Direction(metric, None, "unknown", "the runs declare opposite directions ("
                         + "; ".join(found.values()) + ")")
    return None


def declared_headline(runs: Sequence[Run], logged: Iterable[str]) -> tuple[str, str] | None:
    """(metric, what declared it) when the runs' framework names the metric that picks the best
    model (`metric_for_best_model`, `monitor`, a tuner's or sweep's metric) and it is logged."""
    keys = set(logged)
    for run in runs:
        for d in declared_goals(run):
            if d.headline:
                hits = sorted(_spellings(d.metric) & keys)
                if hits:
                    return hits[0], d.source
    return None


# -- the rules, in order --------------------------------------------------------------------------
@dataclass(frozen=True)
class GoalRules:
    """The user's directions (command line, then rundiff.toml) ahead of what runs declare and the
    vocabulary."""

    cli: Mapping[str, str] = field(default_factory=dict)  # metric or glob → goal
    default: str | None = None  # a bare --goal min|max: every metric
    project: Mapping[str, str] = field(default_factory=dict)
    project_file: str | None = None

    def direction(self, metric: str, runs: Sequence[Run] = (), aliases: Iterable[str] = ()
                  ) -> Direction:
        names = [metric, *[a for a in aliases if a != metric]]
        for table, source in ((self.cli, "--goal"), (self.project, "rundiff.toml")):
            for pattern, goal in table.items():
                if any(fnmatch.fnmatchcase(n, pattern) for n in names):
                    flag = f"--goal {pattern}={goal}" if source == "--goal" else \
                        f"[goals] {pattern!r} = {goal!r} in {self.project_file or 'rundiff.toml'}"
                    return Direction(metric, goal, source, flag)
        if self.default:
            return Direction(metric, self.default, "--goal", f"--goal {self.default}")
        for name in names:
            got = _runs_declare(name, runs)
            if got is not None:
                return Direction(metric, got.goal, got.source, got.reason)
        return vocabulary(metric)

    def goal(self, metric: str, runs: Sequence[Run] = ()) -> str | None:
        return self.direction(metric, runs).goal


def parse_goals(items: str | Sequence[str] | Mapping[str, str] | None) -> tuple[dict[str, str], str | None]:
    """`--goal` values: `METRIC=min|max` (repeatable) and/or a bare `min|max` for every metric."""
    from ..errors import UsageError

    if items is None:
        return {}, None
    if isinstance(items, Mapping):
        pairs = dict(items)
        bad = [f"{k}={v}" for k, v in pairs.items() if v not in GOALS]
        if bad:
            raise UsageError(f"--goal {bad[0]!r} is not METRIC=min or METRIC=max")
        return pairs, None
    if isinstance(items, str):
        items = [items]
    per: dict[str, str] = {}
    default = None
    for item in items:
        if item in GOALS:
            default = item
            continue
        metric, sep, goal = item.rpartition("=")
        if not sep or goal not in GOALS or not metric:
            raise UsageError(f"--goal {item!r} is not METRIC=min or METRIC=max",
                             hint="e.g. --goal 'metrics/mAP50-95(B)=max'")
        per[metric] = goal
    return per, default


def load_project_goals(path: str | None) -> dict[str, str]:
    """The `[goals]` table of a project file: {metric or glob: min|max}."""
    from ..errors import InputError
    from .project import project_table

    if not path:
        return {}
    table = project_table(path, "goals")
    if not isinstance(table, dict) or not all(v in GOALS for v in table.values()):
        raise InputError(f"{path}: [goals] maps metric names or globs to \"min\" or \"max\"",
                         hint='e.g. [goals]\n"val/ngram_*" = "max"')
    return {str(k): str(v) for k, v in table.items()}


def goal_rules(goal: str | Sequence[str] | Mapping[str, str] | GoalRules | None = None,
               project_file: str | None = None, *, search: bool = True) -> GoalRules:
    """GoalRules from what a command or the API was given plus the nearest rundiff.toml."""
    if isinstance(goal, GoalRules):
        return goal
    from .project import find_project_file

    per, default = parse_goals(goal)
    path = project_file or (find_project_file() if search else None)
    return GoalRules(cli=per, default=default, project=load_project_goals(path), project_file=path)


def vocabulary_markdown() -> str:
    """The vocabulary as the Markdown table docs/directions.md holds (a test keeps them equal)."""
    def words(pattern: str) -> str:
        return ", ".join(f"`{w}`" for w in pattern.split("|"))

    rows = ["| direction | tokens (regular expressions, whole tokens) | names |",
            "|---|---|---|"]
    rows += [f"| higher is better | {words(p)} | {what} |" for p, what in HIGHER]
    rows += [f"| lower is better | {words(p)} | {what} |" for p, what in LOWER]
    rows += [f"| no direction | {words(p)} | {what} |" for p, what in NO_DIRECTION]
    return "\n".join(rows) + "\n"


def better(first: float, second: float, goal: str | None) -> bool | None:
    """Whether `first` beats `second` under `goal` ("min" or "max"); None when no direction is
    known, either value is not finite, or they are equal (nothing to claim)."""
    if goal is None or not (math.isfinite(first) and math.isfinite(second)) or first == second:
        return None
    return first < second if goal == "min" else first > second


__all__ = ["Declared", "Direction", "GOALS", "GoalRules", "HIGHER", "LOWER", "NO_DIRECTION",
           "better", "declared_goals", "declared_headline", "declared_in_config", "goal_rules",
           "load_project_goals", "parse_goals", "tokens", "vocabulary", "vocabulary_markdown"]

