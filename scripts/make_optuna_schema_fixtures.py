"""Write an Optuna study store with the Optuna this interpreter has, and what Optuna itself reads
back from it (tests/adapters/test_sqlite_store.py compares rundiff's reading to that).

tests/fixtures/optuna-schemas/optuna-<version>/ was written once per version, each from a
throwaway venv under /tmp (old Optuna needs SQLAlchemy 1.3 and `setuptools<70` to build):

    python3 -m venv /tmp/opt23 && /tmp/opt23/bin/pip install "setuptools<70" wheel
    /tmp/opt23/bin/pip install --no-build-isolation optuna==2.3.0 sqlalchemy==1.3.24 \\
        alembic==1.4.3 "numpy<2" "cliff<4" cmaes==0.7.0 scipy
    /tmp/opt23/bin/python scripts/make_optuna_schema_fixtures.py tests/fixtures/optuna-schemas/optuna-2.3.0

The versions cover the schemas rundiff reads: < 1.3 (no `trials.number`: the number is a
`_number` system attribute), < 2.4 (`studies.direction`, `trials.value`, intermediate values in
`trial_values(step, value)`), 2.4–2.x (study_directions, trial_intermediate_values, no value
types). Each study: floats, ints and a categorical; intermediate values; one failed trial, two
pruned, one returning +inf; a second study maximising without intermediate values.
"""

from __future__ import annotations

import json
import math
import os
import sys

import optuna


def _num(v: float | None) -> float | str | None:
    if v is None or math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _suggest_float(trial, name: str, low: float, high: float) -> float:
    if hasattr(trial, "suggest_float"):
        return trial.suggest_float(name, low, high)
    return trial.suggest_uniform(name, low, high)


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, "study.db")
    if os.path.exists(db):
        os.remove(db)
    storage = f"sqlite:///{db}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruned = optuna.exceptions.TrialPruned

    def objective(trial) -> float:
        x = _suggest_float(trial, "x", -4.0, 4.0)
        n = trial.suggest_int("n", 1, 5)
        opt = trial.suggest_categorical("opt", ["adam", "sgd", "rmsprop"])
        trial.set_user_attr("tag", f"t{trial.number}")
        trial.set_user_attr("curve", [1, 2])
        if trial.number == 3:
            raise ValueError("diverged")
        v = math.nan
        for step in range(6):
            v = (x - 1.0) ** 2 + 0.1 * n + (0.5 if opt == "sgd" else 0.0) + 1.0 / (step + 1)
            trial.report(v, step)
            if trial.number in (2, 5) and step == 2:
                raise pruned()
        if trial.number == 4:
            return math.inf
        return v

    study = optuna.create_study(study_name="schema-test", storage=storage, direction="minimize",
                                sampler=optuna.samplers.RandomSampler(seed=7))
    study.optimize(objective, n_trials=7, catch=(ValueError,))
    second = optuna.create_study(study_name="second-max", storage=storage, direction="maximize",
                                 sampler=optuna.samplers.RandomSampler(seed=3))
    second.optimize(lambda t: _suggest_float(t, "lr", 0.0, 1.0) * 2.0, n_trials=2)

    expected = {"optuna_version": optuna.__version__, "file": "study.db", "studies": {}}
    for s in (study, second):
        loaded = optuna.load_study(study_name=s.study_name, storage=storage)
        expected["studies"][s.study_name] = {
            "direction": loaded.direction.name,
            "trials": [{
                "number": t.number,
                "state": t.state.name,
                "value": _num(t.value),
                "params": t.params,
                "intermediate": [[step, _num(v)] for step, v in sorted(t.intermediate_values.items())],
                "user_attrs": t.user_attrs,
            } for t in loaded.trials],
        }
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as fh:
        json.dump(expected, fh, indent=1, sort_keys=True)
        fh.write("\n")
    with open(os.path.join(out, "VERSION"), "w", encoding="utf-8") as fh:
        fh.write(f"optuna {optuna.__version__}\n")


if __name__ == "__main__":
    main(sys.argv[1])
