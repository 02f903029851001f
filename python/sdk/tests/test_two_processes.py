"""An SDK process and a raw bridge process on one session root and workspace (two terminals on
one project), against the real binary: one writer per session (docs/guarantees.md, "Two
processes on one session root"). While one writes a session, the other's prompt and delete are
-32001 ``session-locked`` (the SDK raises SessionBusyError with that kind) and its list works;
after the turn the other takes the session over with the first one's turns in it."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, SessionBusyError, UserMessageEvent, tool

from conftest import call_within, real_bridge_or_skip

GUARD = 30.0  # a hang guard only


class RawBridge:
    """The bridge spoken to line by line, as a client in another language would."""

    def __init__(self, binary: Path, root: Path) -> None:
        self.proc = subprocess.Popen([str(binary), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.frames: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._n = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.frames.put(json.loads(line))

    def send(self, method: str, params: Dict[str, Any]) -> str:
        self._n += 1
        rid = f"raw{self._n}"
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        return rid

    def wait(self, match: Any) -> Dict[str, Any]:
        for frame in self.seen:
            if match(frame):
                return frame
        while True:
            frame = self.frames.get(timeout=GUARD)
            self.seen.append(frame)
            if match(frame):
                return frame

    def call(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        rid = self.send(method, params)
        return self.wait(lambda f: f.get("id") == rid)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


STUCK_WIRE = {"name": "stuck", "description": "Waits.", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}
SCRIPT = {"turns": [
    {"steps": [{"text": "calling", "toolCalls": [{"id": "c1", "name": "stuck", "arguments": {"word": "w"}}]}, {"text": "first done"}]},
    {"steps": [{"text": "second done"}]},
    {"steps": [{"text": "third done"}]},
]}


@pytest.fixture
def setup(tmp_path: Path):
    binary = real_bridge_or_skip()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    started, release = threading.Event(), threading.Event()

    @tool
    def stuck(word: str) -> str:
        """Waits."""
        started.set()
        release.wait(GUARD)
        return "released"

    h = DeepSeekHarness(provider="scripted", model=str(script), cwd=tmp_path, bridge_bin=binary,
                        session_root=tmp_path / "sessions", tools=[stuck], shutdown_timeout_seconds=5.0)
    raw = RawBridge(binary, tmp_path / "sessions")
    init = raw.call("initialize", {"cwd": str(tmp_path), "provider": "scripted", "model": str(script), "clientTools": [STUCK_WIRE]})
    assert "result" in init, init
    try:
        yield h, raw, started, release
    finally:
        release.set()
        raw.close()
        h.close()


def locked(frame: Dict[str, Any], session_id: str) -> None:
    assert frame.get("error", {}).get("code") == -32001, frame
    assert frame["error"]["data"] == {"kind": "session-locked", "sessionId": session_id}


def test_sdk_turn_running_locks_the_raw_process_out_then_it_takes_over(setup) -> None:
    h, raw, started, release = setup
    session = h.start_session("s")
    box: Dict[str, Any] = {}
    runner = threading.Thread(target=lambda: box.update(first=session.run("from the SDK")), daemon=True)
    runner.start()
    assert started.wait(GUARD)

    locked(raw.call("session/prompt", {"sessionId": "s", "contentBlocks": [{"type": "text", "text": "from raw"}]}), "s")
    locked(raw.call("session/delete", {"sessionId": "s"}), "s")
    assert [e["sessionId"] for e in raw.call("session/list", {})["result"]["sessions"]] == ["s"]

    release.set()
    runner.join(GUARD)
    assert box["first"].status == "ok"
    answer = raw.call("session/prompt", {"sessionId": "s", "contentBlocks": [{"type": "text", "text": "from raw"}]})
    assert answer.get("result", {}).get("status") == "ok", answer
    # The SDK's bridge reloads the session another process wrote: all three turns, one log.
    assert call_within(GUARD, session.run, "the SDK again").status == "ok"
    assert [e.text for e in session.history() if isinstance(e, UserMessageEvent)] == ["from the SDK", "from raw", "the SDK again"]
    lines = session.log_path.read_text().splitlines()
    assert all(json.loads(line) for line in lines)


def test_raw_turn_running_makes_the_sdk_raise_session_busy_with_kind_session_locked(setup) -> None:
    h, raw, _started, _release = setup
    rid = raw.send("session/prompt", {"sessionId": "r", "contentBlocks": [{"type": "text", "text": "from raw"}]})
    request = raw.wait(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "tool/request")
    with pytest.raises(SessionBusyError) as caught:
        call_within(GUARD, h.start_session("r").run, "from the SDK")
    assert caught.value.kind == "session-locked" and caught.value.is_busy
    assert [s.session_id for s in h.list_sessions()] == ["r"]

    raw.send("session/tool_result", {"sessionId": "r", "callId": request["params"]["event"]["data"]["callId"],
                                     "content": [{"type": "text", "text": "answered"}]})
    assert raw.wait(lambda f: f.get("id") == rid)["result"]["status"] == "ok"
    assert call_within(GUARD, h.start_session("r").run, "from the SDK").status == "ok"


def test_async_clients_of_two_processes_hand_a_session_back_and_forth_every_turn_ok(tmp_path: Path) -> None:
    """Two SDK processes (the async client) on one session, each prompting it the moment the
    other's turn came back: the other bridge waits out the lock the last one keeps a moment after
    its turn (docs/guarantees.md), so no prompt is refused, and the log holds every turn in order."""
    binary = real_bridge_or_skip()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"steps": [{"text": f"done {i}"}]} for i in range(20)]}))

    async def main() -> List[str]:
        def harness() -> AsyncDeepSeekHarness:
            return AsyncDeepSeekHarness(provider="scripted", model=str(script), cwd=tmp_path, bridge_bin=binary,
                                        session_root=tmp_path / "sessions", shutdown_timeout_seconds=5.0)
        async with harness() as a, harness() as b:
            sessions = [a.start_session("s"), b.start_session("s")]
            for i in range(10):
                result = await asyncio.wait_for(sessions[i % 2].run(f"turn {i}"), GUARD)
                assert result.status == "ok", result
            return [e.text async for e in sessions[0].history() if isinstance(e, UserMessageEvent)]

    assert asyncio.run(main()) == [f"turn {i}" for i in range(10)]
