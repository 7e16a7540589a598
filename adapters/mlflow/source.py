"""The MLflow RunSource: resolve a selector in a store, build Runs, load full histories.

Where the data lives decides the reader: a file store or a sqlite database is read directly
(read-only, no mlflow package, every point); a tracking server — or any store when
`RUNDIFF_MLFLOW_READER=client` — goes through the MLflow client's paged full-history call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rundiff_core import (
    Address,
    AddressError,
    BaseSource,
    HistoryColumns,
    Run,
    RunEvent,
    RunNotFoundError,
    RunRef,
    UsageError,
    seed_from_config,
)

from .address import Store, parse_locator
from .records import (
    GIT_TAG,
    PARENT_TAG,
    USER_TAG,
    ExperimentRecord,
    RunRecord,
    coerce_param,
    duplicate_step_note,
    rundiff_status,
)

READER_ENV = "RUNDIFF_MLFLOW_READER"
READER_MODES = ("auto", "direct", "client")


def open_reader(store: Store, mode: str = "auto") -> Any:
    """The reader for a store: direct for file/sqlite (unless mode is "client"), else the client."""
    if mode not in READER_MODES:
        raise UsageError(f"{READER_ENV}={mode!r} is not one of {', '.join(READER_MODES)}")
    if store.kind == "remote" or mode == "client":
        if store.kind == "remote" and mode == "direct":
            raise UsageError(f"{store.display} can only be read through the MLflow client",
                             hint=f"unset {READER_ENV} or set it to auto")
        from .client import ClientReader

        return ClientReader(store.uri)
    if store.kind == "file":
        from .filestore import FileStoreReader

        return FileStoreReader(store.location)
    from .sqlstore import SqliteReader

    return SqliteReader(store.location)


class MlflowSource(BaseSource):
    """Runs of an MLflow store: one run, a run name in an experiment, an experiment, or all."""

    def __init__(self, address: Address, reader: str | None = None) -> None:
        super().__init__(address)
        locator = parse_locator(address.locator)
        self.store = locator.store
        self.selector = locator.selector
        self.reader = open_reader(self.store, (reader or os.environ.get(READER_ENV) or "auto").lower())
        self._records: dict[str, RunRecord] = {}
        self._details: dict[str, Any] = {}
        self._runs_by_experiment: dict[str, list[RunRecord]] = {}
        self._experiments: dict[str, ExperimentRecord] | None = None

    def close(self) -> None:
        self.reader.close()

    # -- resolution -------------------------------------------------------------------------------
    def experiments(self) -> dict[str, ExperimentRecord]:
        if self._experiments is None:
            self._experiments = {e.experiment_id: e for e in self.reader.experiments()}
        return self._experiments

    def _experiment_runs(self, experiment_id: str) -> list[RunRecord]:
        if experiment_id not in self._runs_by_experiment:
            self._runs_by_experiment[experiment_id] = self.reader.runs([experiment_id])
        return self._runs_by_experiment[experiment_id]

    def _experiments_named(self, text: str) -> list[ExperimentRecord]:
        exps = self.experiments()
        found = [e for e in exps.values() if e.name == text]
        if text in exps and exps[text] not in found:
            found.append(exps[text])
        return found

    def resolve(self) -> list[RunRecord]:
        """The runs the selector names; every reading of it is tried and must agree."""
        sel = self.selector
        if not sel:
            return self.reader.runs(None)
        readings: list[tuple[str, list[RunRecord]]] = []
        rec = self.reader.run(sel)
        if rec is not None:
            readings.append((f"run id {rec.run_id}", [rec]))
        for exp in self._experiments_named(sel):
            readings.append((f"experiment '{exp.name}' (id {exp.experiment_id})",
                             self._experiment_runs(exp.experiment_id)))
        for i, ch in enumerate(sel):
            if ch != "/" or i == 0 or i == len(sel) - 1:
                continue
            exp_text, run_text = sel[:i], sel[i + 1:]
            for exp in self._experiments_named(exp_text):
                runs = [r for r in self._experiment_runs(exp.experiment_id)
                        if r.run_id == run_text or r.name == run_text]
                if runs:
                    readings.append((f"run '{run_text}' in experiment '{exp.name}'", runs))
        distinct = {frozenset(r.run_id for r in runs): (what, runs) for what, runs in readings}
        if len(distinct) > 1:
            listing = "; ".join(what for what, _ in distinct.values())
            raise AddressError(
                f"ambiguous MLflow selector '{sel}' in {self.store.display}: it names {listing}",
                hint="address the run by its id (mlflow:STORE#RUN_ID) or the experiment by its "
                "other name or id",
            )
        if not distinct:
            names = ", ".join(f"'{e.name}' (id {e.experiment_id})"
                              for e in list(self.experiments().values())[:8])
            raise RunNotFoundError(
                f"no MLflow run or experiment '{sel}' in {self.store.display}",
                hint=f"experiments there: {names or 'none'}; a selector is RUN_ID, EXPERIMENT or "
                "EXPERIMENT/RUN_NAME (see `rundiff ls mlflow:STORE`)",
            )
        return next(iter(distinct.values()))[1]

    def _ref(self, rec: RunRecord) -> RunRef:
        return RunRef(run_id=rec.run_id, address=f"mlflow:{self.store.display}#{rec.run_id}",
                      name=rec.name or rec.run_id)

    def list_runs(self) -> list[RunRef]:
        records = self.resolve()
        for rec in records:
            self._records[rec.run_id] = rec
        return [self._ref(r) for r in records]

    def _record(self, ref: RunRef) -> RunRecord:
        rec = self._records.get(ref.run_id)
        if rec is None:
            rec = self.reader.run(ref.run_id)
            if rec is None:
                raise RunNotFoundError(f"no MLflow run {ref.run_id} in {self.store.display}",
                                       hint=f"`rundiff ls mlflow:{self.store.display}` lists them")
            self._records[rec.run_id] = rec
        return rec

    # -- runs -------------------------------------------------------------------------------------
    def _run_details(self, rec: RunRecord) -> Any:
        """Params, tags and latest metrics of a run, read once per source."""
        hit = self._details.get(rec.run_id)
        if hit is None:
            hit = self._details[rec.run_id] = self.reader.details(rec)
        return hit

    def collection(self, ref: RunRef) -> str | None:
        """The run's experiment (`mlflow:STORE#EXPERIMENT_ID`), where rundiff looks for its seeds
        (runs whose params are equal but for seed and run-identity keys). A deleted run has none:
        it is never another run's seed."""
        rec = self._record(ref)
        if rec.lifecycle_stage == "deleted" or not rec.experiment_id:
            return None  # a damaged store's run whose row is lost has no known experiment
        return f"mlflow:{self.store.display}#{rec.experiment_id}"

    def load_run(self, ref: RunRef) -> Run:
        rec = self._record(ref)
        details = self._run_details(rec)
        exp = self.experiments().get(rec.experiment_id)
        config = {k: coerce_param(v) for k, v in details.params.items()}
        notes = list(rec.notes) + list(details.notes)
        if rec.lifecycle_stage == "deleted":
            notes.append("deleted in MLflow (lifecycle_stage=deleted) but still in the store; "
                         "MLflow's UI and default searches hide it")
        if exp is not None and exp.lifecycle_stage == "deleted":
            notes.append(f"its experiment '{exp.name}' is deleted in MLflow")
        start = rec.start_time / 1000.0 if rec.start_time is not None else None
        end = rec.end_time / 1000.0 if rec.end_time is not None else None
        events = []
        if rec.status in ("FAILED", "KILLED"):
            events.append(RunEvent("crashed" if rec.status == "FAILED" else "killed", time=end,
                                   payload={"mlflow_status": rec.status}))
        run = Run(
            address=self._ref(rec).address,
            name=rec.name or rec.run_id,
            run_id=rec.run_id,
            adapter="mlflow",
            config=config,
            summary=dict(details.latest),  # or read when first asked for (below)
            status=rundiff_status(rec.status),
            seed=seed_from_config(config),
            git_sha=details.tags.get(GIT_TAG) or None,
            events=events,
            fidelity=notes,
            meta={
                "experiment_id": rec.experiment_id,
                "experiment_name": exp.name if exp else None,
                "run_name": rec.name,
                "parent_run_id": details.tags.get(PARENT_TAG) or None,
                "mlflow_status": rec.status,
                "lifecycle_stage": rec.lifecycle_stage,
                "start_time": start,
                "end_time": end,
                "user": rec.user_id or details.tags.get(USER_TAG),
                "artifact_uri": rec.artifact_uri,
                "params_raw": dict(details.params),
                "tags": dict(details.tags),
                "store": self.store.display,
                "store_kind": self.store.kind,
                "reader": self.reader.kind,
            },
        )
        if details.latest_loader is not None:
            loader = details.latest_loader
            run.defer_summary(lambda: dict(loader()))
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> HistoryColumns:
        """The run's points as history columns (no DataFrame: `rundiff ls` never imports pandas
        for an MLflow store); the reader's notes and any duplicate steps as fidelity notes."""
        rec = self._record(ref)
        cols, notes = self.reader.history(rec, keys)
        note = duplicate_step_note(cols)
        if note:
            notes.append(note)
        cols.notes = list(cols.notes) + notes
        return cols


