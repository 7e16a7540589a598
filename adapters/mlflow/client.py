"""Read through the MLflow client: tracking servers over HTTP and any store not read directly.

Only full-history calls are used: `MlflowClient.get_metric_history`, which pages through the
REST endpoint `metrics/get-history` (`max_results` + `page_token`, 25,000 points a page) until no
token is left. Never the sampled endpoints (`get-history-bulk-interval`, 320 points per key) nor
the capped bulk one (`get-history-bulk`, 25,000 rows). Needs the `mlflow` package.
"""

from __future__ import annotations

import base64
import math
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from rundiff_core import (
    HistoryColumns,
    InputError,
    MissingDependencyError,
    RundiffError,
)

from .records import (
    RUN_NAME_TAG,
    ExperimentRecord,
    RunDetails,
    RunRecord,
    inf_note,
    restore_inf,
    status_name,
)

PAGE = 1000  # runs or experiments per search page (both endpoints accept this size)
PROBE_PATH = "/api/2.0/mlflow/experiments/search?max_results=1"
CREDENTIALS_HINT = ("credentials come from MLFLOW_TRACKING_USERNAME/PASSWORD or "
                    "MLFLOW_TRACKING_TOKEN")
#: MLflow's own retry loop (7 retries, backoff factor 2: minutes) is cut to a few seconds unless
#: the user set it: the probe has already told a dead server from a live one.
CLIENT_ENV_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                       "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}


def _auth_headers() -> dict[str, str]:
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        raw = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"Authorization": f"Basic {raw}"}
    return {}


def installed(package: str) -> bool:
    """Whether `package` can be imported, without importing it (a missing extra is said first)."""
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ValueError, ImportError):  # sys.modules[package] is None: blocked
        return False


def probe_server(uri: str) -> None:
    """Fail within seconds, naming the cause, when `uri` is an http(s) URL with no MLflow server
    behind it (see rundiff_core.netprobe); a no-op for other URIs."""
    from rundiff_core import server_probe

    answer = server_probe.probe(uri, path=PROBE_PATH, headers=_auth_headers(),
                                what="MLflow tracking server")
    if answer is None:
        return
    for key, value in CLIENT_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    err = server_probe.status_error(uri, answer, what="MLflow tracking server",
                                    key_hint=CREDENTIALS_HINT)
    if err is not None:
        raise err
    server_probe.tracker_json(  # a 200, or MLflow's own error object (e.g. a 400)
        uri, answer, path=PROBE_PATH.split("?")[0],
        is_tracker=lambda body: answer.status == 200 or "error_code" in body,
        not_tracker="not an MLflow tracking server",
        hint="give the tracking server's base URL, e.g. http://host:5000")


def import_client() -> Any:
    """The `MlflowClient` class, or the install hint when the extra is missing."""
    try:
        from mlflow.tracking import MlflowClient
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "mlflow":
            raise MissingDependencyError(
                "reading an MLflow tracking server (or a store through the MLflow client) needs "
                "the 'mlflow' package: install rundiff[mlflow]",
                hint="pip install 'rundiff[mlflow]' (file stores and sqlite databases are read "
                "without it)",
            ) from exc
        raise
    return MlflowClient


class ClientReader:
    """Experiments, runs and full histories through `MlflowClient(tracking_uri)`."""

    kind = "client"

    def __init__(self, uri: str) -> None:
        self.uri = uri
        if installed("mlflow"):
            probe_server(uri)  # before importing mlflow (seconds): a dead server is said at once
        client_cls = import_client()
        from mlflow.entities import ViewType

        self._all = ViewType.ALL
        with self._errors():
            self.client = client_cls(tracking_uri=uri)
        self._experiment_cache: list[ExperimentRecord] | None = None

    def close(self) -> None:
        pass

    @contextmanager
    def _errors(self, what: str = "") -> Iterator[None]:
        try:
            yield
        except RundiffError:
            raise
        except Exception as exc:  # the client raises MlflowException, requests errors, OSError…
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            auth = re.search(r"\b40[13]\b|unauthori[sz]ed|forbidden|permission", text, re.I)
            raise InputError(
                f"MLflow client error{' ' + what if what else ''} on {self.uri}: {text}",
                hint=CREDENTIALS_HINT if auth else "check the tracking URI and that the server is up",
            ) from exc

    @staticmethod
    def _not_found(exc: Exception) -> bool:
        code = getattr(exc, "error_code", "")
        return code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE")

    # -- experiments and runs ---------------------------------------------------------------
    def experiments(self) -> list[ExperimentRecord]:
        if self._experiment_cache is None:
            out, token = [], None
            with self._errors("listing experiments"):
                while True:
                    page = self.client.search_experiments(view_type=self._all, max_results=PAGE,
                                                          page_token=token)
                    out.extend(ExperimentRecord(str(e.experiment_id), e.name, e.lifecycle_stage,
                                                e.artifact_location) for e in page)
                    token = page.token
                    if not token:
                        break
            self._experiment_cache = out
        return self._experiment_cache

    def _record(self, run: Any) -> RunRecord:
        info = run.info
        return RunRecord(
            run_id=info.run_id, experiment_id=str(info.experiment_id),
            name=info.run_name or run.data.tags.get(RUN_NAME_TAG),
            status=status_name(info.status), start_time=info.start_time, end_time=info.end_time,
            lifecycle_stage=info.lifecycle_stage, artifact_uri=info.artifact_uri,
            user_id=info.user_id, handle=run,
        )

    def runs(self, experiment_ids: Sequence[str] | None = None) -> list[RunRecord]:
        ids = [e.experiment_id for e in self.experiments()] if experiment_ids is None \
            else list(experiment_ids)
        if not ids:
            return []
        out, token = [], None
        with self._errors("listing runs"):
            while True:
                page = self.client.search_runs(ids, run_view_type=self._all, max_results=PAGE,
                                               order_by=["attributes.start_time ASC"],
                                               page_token=token)
                out.extend(self._record(r) for r in page)
                token = page.token
                if not token:
                    break
        out.sort(key=lambda r: (r.start_time if r.start_time is not None else math.inf, r.run_id))
        return out

    def run(self, run_id: str) -> RunRecord | None:
        try:
            run = self.client.get_run(run_id)
        except Exception as exc:
            if self._not_found(exc):
                return None
            with self._errors(f"reading run {run_id}"):
                raise
        return self._record(run)

    def details(self, rec: RunRecord) -> RunDetails:
        data = rec.handle.data
        latest = {}
        for key, value in data.metrics.items():
            v = float(value)
            latest[key] = math.copysign(math.inf, v) if abs(v) == np.finfo("float64").max else v
        return RunDetails(dict(data.params), dict(data.tags), latest)

    # -- history --------------------------------------------------------------------------------
    def history(self, rec: RunRecord, keys: Sequence[str] | None
                ) -> tuple[HistoryColumns, list[str]]:
        names = sorted(rec.handle.data.metrics) if keys is None else sorted(set(keys))
        steps, values, stamps, counts, used = [], [], [], [], []
        with self._errors(f"reading the history of run {rec.run_id}"):
            for key in names:
                points = self.client.get_metric_history(rec.run_id, key)  # pages until done
                if not points:
                    continue
                steps.append(np.fromiter((m.step for m in points), "float64", len(points)))
                values.append(np.fromiter((m.value for m in points), "float64", len(points)))
                stamps.append(np.fromiter((m.timestamp for m in points), "float64", len(points)))
                counts.append(len(points))
                used.append(key)
        if not used:
            return HistoryColumns.empty(), []
        value = np.concatenate(values)
        notes = []
        restored = restore_inf(value)
        if restored:
            notes.append(inf_note(restored, "tracking store behind the client"))
        codes = np.repeat(np.arange(len(used), dtype=np.int32), counts)
        return HistoryColumns(np.concatenate(steps), codes, used, value,
                              np.concatenate(stamps) / 1000.0), notes
