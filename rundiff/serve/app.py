"""The Starlette app of `rundiff serve`: the page, its assets, and JSON endpoints that answer what
`--format json` answers (the MCP tools' schema), built by the same engines.

- `GET /` the page (sets the token cookie); `/assets/…` its script, stylesheet and plotly.js;
- `GET /api/runs[?complete=1]` the listing (catalog.py): `ls --no-points` rows of the runs read
  so far, the run table's columns, failed sources, `loading` (`complete=1` waits for every run);
- `GET /api/compare?a=ADDR&a=ADDR[&metric=M][&student=ADDR][&step=N][&smooth=W][&width=PX]
  [&arms=runs]`: the selected runs grouped into arms by the default arm rule (seeds of one arm
  are one band), or with `arms=runs` each its own arm (`compare --no-seeds`);
  `{"compare": compare --format json, "text": what the CLI prints, "html": it as HTML,
  "figures": the plots' traces thinned to the width}`;
- `GET /api/rank?a=…[&metric=M][&step=N]` `{"rank": rank --format json, "text": …}`;
- `GET /api/report?a=…[&metric=M][&step=N]` the HTML `rundiff report -o report.html` writes,
  as a download (the server writes nothing);
- `GET /api/events` server-sent events: `{"version", "changed": [addresses]}` when runs grow.

Every address is checked against the roots first (`rundiff mcp`'s confinement and its error
answers, `agents.tools`); errors are answers (`{"error": {...}}`, HTTP 400), never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from rundiff_core.errors import UsageError

from .. import _bridge
from ..agents.confine import Confinement
from ..agents.tools import Tools
from ..results import notebook_html
from .catalog import Catalog
from .runcache import DEFAULT_CAP_POINTS, Loaded, RunCache
from .security import COOKIE, Gate
from .thin import thin_indices

MAX_CHARS = 50_000_000  # the page asks for whole reports: the MCP size cap does not apply
DEFAULT_WIDTH = 1200
FIRST_ROWS_WAIT = 5.0  # s the page's first listing waits for runs to be read
ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


def _asset(name: str) -> str:
    return resources.files("rundiff.serve").joinpath("assets", name).read_text("utf-8")


@dataclass
class Settings:
    sources: list[str]
    confinement: Confinement
    token: str
    hosts: frozenset[str]
    stale_after: float = 1800.0
    poll_every: float = 1.0
    cap_points: int = DEFAULT_CAP_POINTS  # points the compare view keeps loaded (runcache.py)


def _float(request: Request, name: str, lo: float = -math.inf, hi: float = math.inf
           ) -> float | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a number") from None
    if not lo <= value <= hi:
        raise UsageError(f"{name}={raw!r} is outside [{lo:g}, {hi:g}]")
    return value


def _thinned(figures: list[Any], width: int) -> list[dict[str, Any]]:
    out = []
    for fig in figures:
        for t in fig.traces:
            if t.kind == "points" or len(t.x) <= 4 * width:
                continue
            keep = thin_indices(np.asarray(t.x), np.asarray(t.y), width)
            t.x, t.y = np.asarray(t.x)[keep], np.asarray(t.y)[keep]
            if t.hover:
                t.hover = [t.hover[i] for i in keep]
        out.append(_bridge.figure_json(fig))
    return out


def build_app(settings: Settings) -> Starlette:
    """The app, gated (security.Gate) and with its catalog polled while it runs."""
    catalog = Catalog(settings.sources, settings.confinement, settings.stale_after)
    runs = RunCache(lambda address: Loaded(*_bridge.loaded_run(address)), settings.cap_points)
    catalog.on_change.append(runs.drop)  # a run that grew is read again, its answers rebuilt
    compute = threading.Lock()
    tools = Tools(settings.confinement, MAX_CHARS)
    page = _asset("index.html")

    def answer(request: Request, tool: str, build: Callable[[list[str]], tuple[str, dict]],
               at_least: int = 1) -> JSONResponse:
        addresses = request.query_params.getlist("a")
        if len(addresses) < at_least:
            data = {"error": {"type": "UsageError", "message": f"{tool} needs at least "
                              f"{at_least} runs (a=ADDR, repeated)", "hint": None}}
            return JSONResponse(data, status_code=400)
        got = tools._answer(tool, addresses, "ask for fewer runs", lambda: build(addresses))
        if got.error:
            return JSONResponse(got.data, status_code=400)
        # the report's text, redacted once by the tools' plumbing, and the same text as HTML
        return JSONResponse({**got.data, "text": got.text, "html": notebook_html(got.text)})

    async def index(request: Request) -> Response:
        response = Response(page, media_type="text/html; charset=utf-8",
                            headers={"Cache-Control": "no-store",
                                     "Content-Security-Policy": "default-src 'self'; "
                                     "style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                                     "script-src 'self' 'unsafe-eval'"})
        response.set_cookie(COOKIE, settings.token, httponly=True, samesite="strict")
        return response

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "plotly.min.js":
            return Response(_plotly_js(), media_type="text/javascript; charset=utf-8",
                            headers={"Cache-Control": "private, max-age=86400"})
        if name not in ASSETS:
            return Response("not found\n", status_code=404)
        return Response(_asset(name), media_type=ASSETS[name], headers={"Cache-Control": "no-store"})

    def listing(request: Request) -> dict[str, Any]:
        if request.query_params.get("complete"):  # scripts: every run read
            catalog.load()
        else:  # the page: the first rows as soon as they are read, the rest as events
            catalog.first_rows(FIRST_ROWS_WAIT)
        return catalog.listing()

    async def runs_view(request: Request) -> Response:
        return JSONResponse(await asyncio.to_thread(listing, request))

    def compare_build(request: Request) -> Callable[[list[str]], tuple[str, dict]]:
        from ..results import CompareResult

        metric = request.query_params.get("metric") or None
        student = request.query_params.get("student") or None

        def build(addresses: list[str]) -> tuple[str, dict]:
            width = int(_float(request, "width", 100, 4000) or DEFAULT_WIDTH)
            step = _float(request, "step")
            smooth = _float(request, "smooth", 0.0, 0.999) or 0.0
            if student is not None:
                settings.confinement.check_address(student)
            # ticked seeds of one arm are one band; `arms=runs`: every run its own arm, as
            # `rundiff compare --no-seeds ADDR…`
            seeds = request.query_params.get("arms", "seeds") == "seeds"
            raw = _bridge.run_compare_runs(addresses, student=student, seeds=seeds,
                                           metrics=[metric] if metric else None, at=step,
                                           load=loaded)
            r = CompareResult(raw, smooth=smooth)
            text = r.to_markdown()
            figures = _thinned(_bridge.compare_figures(r.raw, smooth), width)
            runs.trim(keep=addresses)
            return text, {"compare": r.to_dict(), "figures": figures}

        return build

    def loaded(address: str) -> tuple[Any, frozenset[str], str]:
        got = runs.get(address)
        return got.run, got.members, got.how

    def compare_answer(request: Request) -> Response:
        addresses = request.query_params.getlist("a")
        params = tuple(sorted((k, v) for k, v in request.query_params.multi_items() if k != "a"))
        key = (tuple(addresses), params, runs.generations(addresses))
        with compute:  # one comparison at a time: they share the loaded runs
            got = runs.answer(key, lambda: answer(request, "compare", compare_build(request), 2),
                              keep=lambda response: response.status_code == 200)
        return got

    async def compare_view(request: Request) -> Response:
        return await asyncio.to_thread(compare_answer, request)

    async def rank_view(request: Request) -> Response:
        from ..api import rank

        def build(addresses: list[str]) -> tuple[str, dict]:
            r = rank(*addresses, metric=request.query_params.get("metric") or None,
                     step=_float(request, "step"))
            return r.to_markdown(), {"rank": r.to_dict()}

        return await asyncio.to_thread(answer, request, "rank", build)

    async def report_view(request: Request) -> Response:
        holder: dict[str, str] = {}

        def build(addresses: list[str]) -> tuple[str, dict]:
            metric = request.query_params.get("metric") or None
            holder["html"] = _bridge.report_page(addresses, metrics=[metric] if metric else None,
                                                 step=_float(request, "step"))
            return "", {}

        got = await asyncio.to_thread(answer, request, "report", build)
        if got.status_code != 200:
            return got
        return Response(holder["html"], media_type="text/html; charset=utf-8", headers={
            "Content-Disposition": 'attachment; filename="rundiff-report.html"'})

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            seen = catalog.version
            yield b": rundiff serve events\nretry: 2000\n\n"
            ticks = 0
            while not await request.is_disconnected():
                version, changed = catalog.since(seen)
                if version != seen:
                    seen = version
                    data = json.dumps(_bridge_redact({"version": version, "changed": changed}))
                    yield f"event: changed\ndata: {data}\n\n".encode()
                ticks += 1
                if ticks % 60 == 0:
                    yield b": keep-alive\n\n"
                await asyncio.sleep(0.25)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(settings.poll_every):
                try:
                    catalog.poll()
                except Exception:  # noqa: BLE001 - a poll that fails is tried again next time
                    import logging

                    logging.getLogger("rundiff.serve").exception("poll failed")

        catalog.start()  # read the sources now, not at the first visit
        thread = threading.Thread(target=poll, name="rundiff-serve-poll", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()

    app = Starlette(routes=[
        Route("/", index), Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/assets/{name}", asset), Route("/api/runs", runs_view),
        Route("/api/compare", compare_view), Route("/api/rank", rank_view),
        Route("/api/report", report_view), Route("/api/events", events),
    ], lifespan=lifespan)
    app.state.catalog = catalog
    app.state.runs = runs
    gate = Gate(settings.token, settings.hosts)
    app.add_middleware(_GateMiddleware, gate=gate)
    return app


def _bridge_redact(value: Any) -> Any:
    from ..agents.tools import _redact

    return _redact(value)


class _GateMiddleware:
    def __init__(self, app: Any, gate: Gate) -> None:
        self._app = gate.wrap(app)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)


_PLOTLY: list[str] = []


def _plotly_js() -> str:
    """plotly.js as the installed plotly bundles it (no CDN): the `[serve]` extra installs it."""
    if not _PLOTLY:
        plotly = _bridge.require("plotly.offline")
        _PLOTLY.append(plotly.get_plotlyjs())
    return _PLOTLY[0]
