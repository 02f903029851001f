"""``mcp_servers=``: the real bridge connected to real MCP servers — the reference server from npm
(server-everything, over stdio) and a server written with the official ``mcp`` package
(test/fixtures/mcp_probe_server.py, over stdio and over streamable HTTP on 127.0.0.1) — driven
by the scripted model calling ``mcp__…`` tools, through both harnesses."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, HarnessOptions, InvalidParamsError, McpServerStatus

from conftest import REPO_ROOT, real_bridge_or_skip, run_async

EVERYTHING = REPO_ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
PROBE = REPO_ROOT / "test" / "fixtures" / "mcp_probe_server.py"


def node() -> str:
    found = subprocess.run(["bash", "-c", "command -v node"], capture_output=True, text=True).stdout.strip()
    if not found or not EVERYTHING.is_file():
        pytest.fail(f"node and {EVERYTHING} are needed (npm ci at the repository root)")
    return found


def call(call_id: str, name: str, **arguments: Any) -> Dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def one_turn(*steps: Dict[str, Any]) -> Dict[str, Any]:
    return {"turns": [{"steps": list(steps)}]}


def tool_results(result: Any) -> Dict[str, Dict[str, Any]]:
    return {e.data["callId"]: e.data for e in result.events if e.type == "tool/result"}


def text(data: Dict[str, Any]) -> str:
    return "".join(block["text"] for block in data["content"])


def wait_for(predicate: Any, what: str, seconds: float = 15) -> None:
    """A hang guard, not a timing assertion."""
    until = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > until:
            pytest.fail(f"{what} did not happen within {seconds} s")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.fixture
def bridge() -> Path:
    return real_bridge_or_skip()


@pytest.fixture
def http_probe(tmp_path: Path) -> Iterator[Dict[str, Any]]:
    """The probe over streamable HTTP on 127.0.0.1, with its log file. A port found free can be
    taken by another process before the probe binds it, so the probe's own "running on" line
    decides, and a refused bind is retried on another port."""
    log = tmp_path / "http-probe.log"
    for _ in range(5):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([sys.executable, str(PROBE), "--http", str(port)], env={**os.environ, "PROBE_LOG": str(log)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        running = f"running on http://127.0.0.1:{port}"
        up = threading.Event()

        def drain(stderr: Any = proc.stderr, running: str = running, up: threading.Event = up) -> None:
            # To the line (a refused bind exits first), then on, so the probe never blocks on a full pipe.
            for row in stderr:
                if running in row:
                    up.set()

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        deadline = time.monotonic() + 30
        while not up.is_set() and reader.is_alive() and time.monotonic() < deadline:
            up.wait(0.05)
        if up.is_set():
            break
        proc.kill()
        proc.wait()
    else:
        raise AssertionError("the HTTP probe could not bind a port in 5 tries")
    try:
        yield {"url": f"http://127.0.0.1:{port}/mcp", "log": log}
    finally:
        proc.kill()
        proc.wait()


def harness_kwargs(bridge: Path, tmp_path: Path, script: Dict[str, Any]) -> Dict[str, Any]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    model = tmp_path / "script.json"
    model.write_text(__import__("json").dumps(script))
    return dict(provider="scripted", model=str(model), cwd=workspace, bridge_bin=bridge, session_root=tmp_path / "sessions",
                shutdown_timeout_seconds=5.0)


def test_mcp_servers_reach_initialize_and_their_tools_run(bridge: Path, tmp_path: Path, http_probe: Dict[str, Any]) -> None:
    script = one_turn({"toolCalls": [call("e", "mcp__everything__echo", message="from python"),
                                     call("w", "mcp__web__whoami"), call("f", "mcp__web__fail", why="sdk")]},
                      {"text": "done"})
    servers = {
        "everything": {"command": node(), "args": [str(EVERYTHING)]},
        "web": {"url": http_probe["url"]},
        "silent": {"command": "sleep", "args": ["1000"], "startupTimeoutMs": 500},
    }
    with DeepSeekHarness(mcp_servers=servers, **harness_kwargs(bridge, tmp_path, script)) as h:
        statuses = h.initialize_response.mcp_servers
        assert statuses is not None and all(isinstance(s, McpServerStatus) for s in statuses)
        by_name = {s.name: s for s in statuses}
        assert [s.name for s in statuses] == ["everything", "web", "silent"]
        assert by_name["everything"].status == "connected" and "mcp__everything__echo" in by_name["everything"].tools
        assert by_name["web"].status == "connected" and "mcp__web__hang" in by_name["web"].tools
        assert (by_name["silent"].status, by_name["silent"].tools) == ("failed", [])
        assert "startupTimeoutMs" in (by_name["silent"].error or "")
        result = h.run("go")
    assert result.status == "ok"
    results = tool_results(result)
    assert (text(results["e"]), results["e"]["isError"]) == ("Echo: from python", False)
    assert re.match(r"pid \d+ pgid \d+", text(results["w"]))
    assert results["f"]["isError"] is True and "failing on purpose: sdk" in text(results["f"])


def test_options_carry_mcp_servers_and_a_bad_entry_is_invalid_params(bridge: Path, tmp_path: Path) -> None:
    base = HarnessOptions(mcp_servers={"bad_name": {"command": "x"}})
    assert base.mcp_servers == {"bad_name": {"command": "x"}}
    with pytest.raises(InvalidParamsError, match="params.mcpServers"):
        DeepSeekHarness(options=base, **harness_kwargs(bridge, tmp_path, one_turn({"text": "hi"}))).start()
    with pytest.raises(TypeError, match="mapping"):
        HarnessOptions(mcp_servers=[("a", {"command": "x"})])  # type: ignore[arg-type]


def test_async_cancel_reaches_the_server_and_closing_ends_its_process_group(bridge: Path, tmp_path: Path) -> None:
    log = tmp_path / "probe.log"
    script = one_turn({"toolCalls": [call("w", "mcp__probe__whoami"), call("k", "mcp__probe__helper")]},
                      {"toolCalls": [call("h", "mcp__probe__hang")]}, {"text": "never"})
    servers = {"probe": {"command": sys.executable, "args": [str(PROBE)], "env": {"PROBE_LOG": str(log)}}}
    lines: List[str] = []

    async def main() -> Any:
        async with AsyncDeepSeekHarness(mcp_servers=servers, **harness_kwargs(bridge, tmp_path, script)) as h:
            task = asyncio.ensure_future(h.run("go", session_id="s1"))
            await asyncio.to_thread(wait_for, lambda: log.is_file() and "hang started" in log.read_text(), "the hanging call")
            assert await h.cancel("s1") is True
            result = await task
            await asyncio.to_thread(wait_for, lambda: "hang cancelled" in log.read_text(), "the server's cancellation")
            lines.extend(log.read_text().splitlines())
            return result

    result = run_async(main())
    assert result.status == "aborted"
    results = tool_results(result)
    server = int(re.match(r"pid (\d+)", text(results["w"])).group(1))  # type: ignore[union-attr]
    helper = int(re.match(r"helper (\d+)", text(results["k"])).group(1))  # type: ignore[union-attr]
    assert any(line.startswith("hang cancelled") for line in lines)
    # The harness is closed: the server and the helper it started are gone with the bridge.
    wait_for(lambda: not alive(server) and not alive(helper), "the end of the server's process group")


def test_read_only_mode_a_killed_server_and_list_changed(bridge: Path, tmp_path: Path) -> None:
    """read-only offers only readOnlyHint tools; a server killed mid-call is an error, the next
    call restarts it; a tool added by tools/list_changed is offered from the next turn."""
    log = tmp_path / "probe.log"
    script = {"turns": [
        {"steps": [{"toolCalls": [call("w1", "mcp__probe__whoami"), call("n", "mcp__probe__note", text="x")]},
                   {"toolCalls": [call("h", "mcp__probe__hang")]},
                   {"toolCalls": [call("w2", "mcp__probe__whoami"), call("g", "mcp__probe__grow")]}, {"text": "one"}]},
        {"steps": [{"toolCalls": [call("x", "mcp__probe__extra")]}, {"text": "two"}]},
    ]}
    servers = {"probe": {"command": sys.executable, "args": [str(PROBE)], "env": {"PROBE_LOG": str(log)}}}
    with DeepSeekHarness(mcp_servers=servers, permission_mode="read-only", **harness_kwargs(bridge, tmp_path, script)) as h:
        seen: List[int] = []

        def on_notification(n: Any) -> None:
            data = n.payload.get("event", {}).get("data", {}) if n.method == "session.event" else {}
            if data.get("callId") == "w1" and not seen:
                seen.append(int(re.match(r"pid (\d+)", text(data)).group(1)))  # type: ignore[union-attr]

        def kill_when_hanging() -> None:
            # The server's log can say "hang started" before this thread's caller has handled
            # w1's result (the notification that names the pid): wait for both.
            wait_for(lambda: bool(seen) and log.is_file() and "hang started" in log.read_text(), "the hanging call", 60)
            os.kill(seen[0], 9)

        killer = threading.Thread(target=kill_when_hanging, daemon=True)
        killer.start()
        first = h.run("go", session_id="s1", on_notification=on_notification)
        killer.join(15)
        second = h.run("again", session_id="s1")
    assert (first.status, second.status) == ("ok", "ok")
    results = {**tool_results(first), **tool_results(second)}
    assert results["n"]["isError"] is True and "unknown tool 'mcp__probe__note'" in text(results["n"])
    assert results["h"]["isError"] is True and "killed by SIGKILL during this call" in text(results["h"])
    assert results["w2"]["isError"] is False and int(text(results["w2"]).split()[1]) != seen[0]
    assert text(results["x"]) == "extra here"
