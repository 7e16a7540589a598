"""`rundiff mcp` end to end, driven by the MCP SDK's own clients (stdio, streamable HTTP)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.testing import assert_same_report

pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

TOOLS = {"ls", "detect", "diff", "compare", "rank", "trajectories"}


#: The BLAS kernel the parent picked (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, …): a server that
#: drops them may pick another, and its least-squares fits then differ in the last bits.
BLAS_ENV = ("OPENBLAS_", "OMP_", "MKL_")


def _server_env() -> dict[str, str]:
    """The SDK starts servers with a minimal environment; keep what finds this checkout."""
    keep = ("PYTHONPATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "RUNDIFF_CACHE_DIR")
    return {k: v for k, v in os.environ.items() if k in keep or k.startswith(BLAS_ENV)}


def _rundiff() -> str:
    exe = shutil.which("rundiff") or str(Path(sys.executable).with_name("rundiff"))
    if not Path(exe).exists():
        pytest.skip("the rundiff console script is not installed")
    return exe


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _loss_cells(report: dict) -> dict[str, list[tuple[float, float]]]:
    """arm → [(step used, value)] for the loss row of a compare report."""
    (loss,) = [m for m in report["metrics"] if m["metric"] == "loss"]
    return {row["arm"]: [(c["step_used"], c["value"]) for c in row["cells"]] for row in loss["rows"]}


def test_stdio_client_lists_tools_compares_and_refuses(demo_runs: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = demo_runs.parent
    monkeypatch.chdir(root)  # run names are relative to the working directory: the server's
    outside = tmp_path.parent
    addresses = [f"journal:{demo_runs / 'exp-baseline'}", f"journal:{demo_runs / 'exp-student' / 'seed-0'}"]
    params = StdioServerParameters(command=_rundiff(), args=["mcp", "--root", str(root)],
                                   env=_server_env(), cwd=str(root))
    seen: dict[str, object] = {}

    async def session() -> None:
        with open(tmp_path / "server.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    listed = await s.list_tools()
                    seen["tools"] = {t.name: t for t in listed.tools}
                    seen["compare"] = await s.call_tool("compare", {"addresses": addresses,
                                                                    "metric": "loss"})
                    seen["outside"] = await s.call_tool("ls", {"addresses": [str(outside)]})
                    seen["diff"] = await s.call_tool("diff", {"a": f"{demo_runs}/exp-baseline/seed-0",
                                                              "b": f"{demo_runs}/exp-higher-lr/seed-0"})

    anyio.run(session)
    tools = seen["tools"]
    assert set(tools) == TOOLS
    assert tools["compare"].input_schema["properties"]["addresses"]["type"] == "array"
    assert tools["compare"].annotations.read_only_hint is True

    compare = seen["compare"]
    assert not compare.is_error
    cli = _cli_json(capsys, "compare", *addresses, "--metric", "loss")
    assert_same_report(compare.structured_content, cli)  # the same report, number for number
    cells = _loss_cells(compare.structured_content)
    student_step = compare.structured_content["current_x"]
    assert student_step == 160 and all(step == student_step for arm in cells.values() for step, _ in arm)
    text = compare.content[0].text
    # the wide table: one row per metric, a column per arm (the baseline's mean ± σ among them)
    baseline_row = next(line for line in text.splitlines() if line.startswith("| loss "))
    mean = cli["metrics"][0]["rows"][1]["value"]
    assert f"{mean:.4f}" in baseline_row  # the value printed is the CLI's, at the student's step

    outside_answer = seen["outside"]
    assert outside_answer.is_error and "outside the folders" in outside_answer.content[0].text
    assert outside_answer.structured_content["error"]["type"] == "OutsideRootsError"

    diff = seen["diff"]
    assert diff.structured_content["verdict"] == "B clearly better (Δ outside 2σ across N>=3 seeds)"
    verdict_section = diff.content[0].text.split("## Verdict", 1)[1]
    assert diff.structured_content["verdict"] in verdict_section
    log = (tmp_path / "server.log").read_text()
    assert "serving 6 read-only tools over stdio" in log  # logs go to stderr, not the protocol


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.server
def test_streamable_http_on_loopback(demo_runs: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client.streamable_http import streamable_http_client

    monkeypatch.chdir(demo_runs)
    port = _free_port()
    errlog = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([_rundiff(), "mcp", "--root", str(demo_runs), "--http", f"127.0.0.1:{port}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errlog,
                            env={**os.environ}, cwd=str(demo_runs))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "server.log").read_text()
                time.sleep(0.2)
        seen: dict[str, object] = {}
        run = str(demo_runs / "exp-student" / "seed-0")

        async def session() -> None:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    seen["tools"] = {t.name for t in (await s.list_tools()).tools}
                    seen["ls"] = await s.call_tool("ls", {"addresses": [run]})

        anyio.run(session)
        assert seen["tools"] == TOOLS
        assert_same_report(seen["ls"].structured_content, {"runs": _cli_json(capsys, "ls", run)})
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        errlog.close()
    assert proc.stdout.read() == b""  # HTTP mode prints nothing on stdout either
