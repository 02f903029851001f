"""Fuzzing the SDK's reader (hypothesis): what a broken or hostile bridge may write to stdout.

A *replay bridge* stands in for harness-bridge: it logs every request line it receives (so the
test learns the ids the client chose) and copies to its stdout whatever the test writes into a
FIFO, chunk by chunk. The test starts one to three ``session_prompt`` calls on threads, then
writes a generated stream: well-formed notifications of those sessions (on the SDK's fast path
and off it), subagent notifications, responses (ok, error results, JSON-RPC errors, malformed
results), interleaved with garbage — random bytes, non-objects, frames shaped like server
requests that reuse a prompt's id, responses for ids nobody sent, torn lines, invalid UTF-8,
blank lines — cut into random chunks, then EOF.

Properties, for every stream:

* no call hangs (each settles within a generous bound after EOF);
* each prompt whose response is in the stream returns exactly that response (a result, a
  :class:`JsonRpcError` with its code, or a :class:`ProtocolError` for a malformed result);
  every other prompt raises :class:`TransportClosedError` at EOF;
* each prompt's callback receives exactly the well-formed notifications of its session (and of
  the children ``subagent.started`` announced) that precede its response, in stream order —
  no garbage, nothing of another session, nothing spoofed.

Some inputs once broke these properties and have their own tests at the end: a corrupt
``session.event`` line that the fast path routes to a live prompt (now dropped with a warning,
or a ``TransportClosedError`` when it is the torn last line), and a notification whose
``sessionId`` is a JSON array or object (now dropped; it used to kill the reader thread), and
frames nested past the decoder's recursion limit, in a payload, an id, a result or an error
(``RecursionError``, not ``ValueError``: now dropped; they used to kill the reader or reach the
caller). The stream model includes both those and frames nested deep but within the limit.

``HB_FUZZ_EXAMPLES`` raises the number of examples (default 40).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepseek_harness import HarnessClient
from deepseek_harness.errors import JsonRpcError, ProtocolError, TransportClosedError

EXAMPLES = int(os.environ.get("HB_FUZZ_EXAMPLES", "40"))
SETTLE_SECONDS = 15.0

REPLAY_SOURCE = r'''
import os, sys, threading

def pump():
    with open(os.environ["REPLAY_LOG"], "ab", buffering=0) as log:
        for line in sys.stdin.buffer:
            log.write(line)

threading.Thread(target=pump, daemon=True).start()
with open(os.environ["REPLAY_FIFO"], "rb", buffering=0) as fifo:
    while True:
        data = fifo.read(65536)
        if not data:
            break
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
os._exit(0)
'''


@pytest.fixture(scope="module")
def replay_bridge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("replay")
    script = d / "replay_bridge.py"
    script.write_text(f"#!{sys.executable} -S\n{REPLAY_SOURCE}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


class Replay:
    """One client on one replay bridge, with prompts running on threads."""

    def __init__(self, bridge: Path, sessions: List[str]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hb-replay-"))
        self.fifo = self.dir / "stream"
        self.log = self.dir / "requests.jsonl"
        os.mkfifo(self.fifo)
        self.client = HarnessClient(
            bridge, env={"REPLAY_FIFO": str(self.fifo), "REPLAY_LOG": str(self.log)}, shutdown_timeout_seconds=1.0
        ).start()
        self.sessions = sessions
        self.delivered: Dict[str, List[Tuple[str, Any]]] = {s: [] for s in sessions}
        self.outcome: Dict[str, Any] = {}
        self.threads = [threading.Thread(target=self._prompt, args=(s,), daemon=True) for s in sessions]
        for t in self.threads:
            t.start()
        self.writer = self._open_writer()

    def _open_writer(self) -> int:
        # Non-blocking until the replay bridge has opened its end: a bridge that failed to start
        # must fail the test, not hang it.
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
                return fd
            except OSError:
                if time.monotonic() > deadline or self.client.process.poll() is not None:
                    raise AssertionError(f"the replay bridge did not open its FIFO; stderr: {self.client.stderr_tail}")
                time.sleep(0.005)

    def _prompt(self, session: str) -> None:
        out = self.delivered[session]
        try:
            self.outcome[session] = self.client.session_prompt(session, "hi", lambda n: out.append((n.method, n.payload)))
        except BaseException as exc:  # noqa: BLE001 - inspected by the test
            self.outcome[session] = exc

    def request_ids(self) -> Dict[str, int]:
        """The id of each session's prompt, read from the replay bridge's log."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            lines = self.log.read_bytes().splitlines() if self.log.exists() else []
            frames = [json.loads(line) for line in lines if line.strip()]
            ids = {f["params"]["sessionId"]: f["id"] for f in frames if f.get("method") == "session/prompt"}
            if len(ids) == len(self.sessions):
                return ids
            if time.monotonic() > deadline:
                raise AssertionError(f"the prompts did not reach the replay bridge: {frames}")
            time.sleep(0.005)

    def write(self, chunks: List[bytes]) -> None:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(self.writer, view):]

    def end(self) -> None:
        if self.writer >= 0:
            os.close(self.writer)
            self.writer = -1

    def settle(self, seconds: float = SETTLE_SECONDS, give_up: Callable[[], Optional[str]] = lambda: None) -> None:
        """Waits for every prompt to settle; fails on a hang, or at once when `give_up` says why."""
        deadline = time.monotonic() + seconds
        while any(t.is_alive() for t in self.threads) and time.monotonic() < deadline:
            why = give_up()
            if why:
                pytest.fail(why)
            for t in self.threads:
                t.join(0.05)
        hung = [s for s, t in zip(self.sessions, self.threads) if t.is_alive()]
        if hung:
            pytest.fail(f"session_prompt did not settle within {seconds} s of EOF (hang): {hung}")

    def close(self) -> None:
        self.end()
        self.client.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------------------
# The stream model
# ---------------------------------------------------------------------------

FAST = dict(separators=(",", ":"), ensure_ascii=False)


def frame_bytes(frame: Any, compact: bool) -> bytes:
    """Compact with the bridge's key order is what the SDK's fast path recognises."""
    if compact:
        return json.dumps(frame, **FAST).encode("utf-8")
    return json.dumps(frame).encode("utf-8")


def event_frame(session: str, seq: int, text: str) -> Dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session.event",
        "params": {"sessionId": session, "event": {"type": "assistant/chunk", "seq": seq, "time": 0,
                                                   "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": text}}}},
    }


RESPONSES = {
    "ok": ("result", {"status": "ok", "reason": {"kind": "completed"}}),
    "error-result": ("result", {"status": "error", "reason": {"kind": "model-error", "message": "boom"}}),
    "rpc-error": ("error", {"code": -32603, "message": "internal error: fuzz", "data": {"kind": "internal-error"}}),
    "malformed": ("result", {"status": "bogus"}),
    "rpc-error-malformed": ("error", "not an error object"),
}

# Text the bridge can write as UTF-8 (JSON.stringify escapes lone surrogates; ensure_ascii=False would not).
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), texts)
# Keys that cannot name a routing field (sessionId, parentSessionId, childSessionId, method, id, ...).
safe_keys = st.text(alphabet="abcxyz_", max_size=4)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_keys, inner, max_size=3), max_leaves=6)

DEEP_PLACES = ["payload-fast", "payload-slow", "child", "id", "result", "error"]

item = st.one_of(
    st.tuples(st.just("event"), st.integers(0, 2), st.booleans(), texts),
    st.tuples(st.just("child"), st.integers(0, 2)),
    st.tuples(st.just("child-event"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("foreign"), st.booleans()),
    st.tuples(st.just("response"), st.integers(0, 2), st.sampled_from(sorted(RESPONSES))),
    st.tuples(st.just("spoof"), st.integers(0, 2), st.sampled_from(["request", "fast-with-id", "method-and-result"])),
    st.tuples(st.just("unknown-response"), st.sampled_from([987654, "1", 1.0, None, True, [1]])),
    st.tuples(st.just("bytes"), st.binary(min_size=1, max_size=60)),
    st.tuples(st.just("json"), json_values),
    st.tuples(st.just("odd-notification"), st.sampled_from(["params-list", "params-null", "method-int", "sid-int", "sid-null", "sid-list", "sid-dict", "child-list", "no-params"])),
    st.tuples(st.just("torn"), st.integers(0, 2), st.integers(1, 200)),
    st.tuples(st.just("bad-utf8"), st.integers(0, 2)),
    st.tuples(st.just("blank"), st.sampled_from([b"", b" ", b"\t", b"\r"])),
    st.tuples(st.just("deep"), st.integers(0, 2), st.sampled_from(DEEP_PLACES), st.sampled_from([5000, 50000])),
    st.tuples(st.just("nested"), st.integers(0, 2), st.booleans()),
)


def nested(depth: int, inner: bytes = b"null") -> bytes:
    """``depth`` levels of arrays and objects around ``inner``, by hand (json.dumps would recurse)."""
    opening = b"".join(b'[{"a":' if i % 2 else b"[" for i in range(depth))
    closing = b"".join(b"}]" if i % 2 else b"]" for i in reversed(range(depth)))
    return opening + inner + closing


def deep_frame(session: str, prompt_id: int, where: str, depth: int, seq: int) -> bytes:
    """A frame nested past the decoder's recursion limit: the SDK drops it like any corrupt line."""
    deep = nested(depth)
    sid = json.dumps(session).encode()
    return {
        # Shaped like the bridge's own lines (the fast path) and not.
        "payload-fast": b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":' + sid
        + b',"event":{"type":"tool/call","seq":' + str(seq).encode() + b',"time":0,"data":{"arguments":' + deep + b"}}}}",
        "payload-slow": b'{"method": "session.event", "params": {"event": ' + deep + b', "sessionId": ' + sid + b"}}",
        "child": b'{"jsonrpc":"2.0","method":"subagent.started","params":{"parentSessionId":' + sid
        + b',"childSessionId":"deep","description":' + deep + b"}}",
        "id": b'{"jsonrpc":"2.0","id":' + nested(depth, str(prompt_id).encode()) + b',"result":{"status":"ok","reason":{"kind":"completed"}}}',
        "result": b'{"jsonrpc":"2.0","id":' + str(prompt_id).encode() + b',"result":{"status":"ok","reason":' + deep + b"}}",
        "error": b'{"jsonrpc":"2.0","id":' + str(prompt_id).encode() + b',"error":{"code":-32603,"message":' + deep + b"}}",
    }[where]


def build(plan: List[Tuple], sessions: List[str], ids: Dict[str, int], final_torn: int) -> Tuple[bytes, Dict[str, List], Dict[str, Optional[str]]]:
    """The stream's bytes, and what each session's prompt must see: notifications and response kind."""
    lines: List[bytes] = []
    expected: Dict[str, List] = {s: [] for s in sessions}
    response: Dict[str, Optional[str]] = {s: None for s in sessions}
    owner: Dict[str, str] = {s: s for s in sessions}  # live routes: session id -> prompt's session
    children: Dict[str, List[str]] = {s: [] for s in sessions}
    seq = 0
    k = len(sessions)

    def deliver(sid: str, frame: Dict[str, Any]) -> None:
        who = owner.get(sid)
        if who is not None:
            expected[who].append((frame["method"], frame["params"]))

    for entry in plan:
        kind = entry[0]
        if kind == "event":
            _, i, compact, text = entry
            seq += 1
            frame = event_frame(sessions[i % k], seq, text)
            lines.append(frame_bytes(frame, compact))
            deliver(sessions[i % k], frame)
        elif kind == "child":
            parent = sessions[entry[1] % k]
            child = f"{parent}.task-{len(children[parent])}"
            children[parent].append(child)
            frame = {"jsonrpc": "2.0", "method": "subagent.started", "params": {"parentSessionId": parent, "childSessionId": child}}
            lines.append(frame_bytes(frame, True))
            who = owner.get(parent)
            if who is not None:
                expected[who].append((frame["method"], frame["params"]))
                owner[child] = who
        elif kind == "child-event":
            parent = sessions[entry[1] % k]
            if not children[parent]:
                continue
            seq += 1
            frame = event_frame(children[parent][-1], seq, "child")
            lines.append(frame_bytes(frame, entry[2]))
            deliver(children[parent][-1], frame)
        elif kind == "foreign":
            seq += 1
            lines.append(frame_bytes(event_frame("nobody-listens", seq, "x"), entry[1]))
        elif kind == "response":
            _, i, what = entry
            sid = sessions[i % k]
            field, value = RESPONSES[what]
            lines.append(frame_bytes({"jsonrpc": "2.0", "id": ids[sid], field: value}, True))
            if response[sid] is None:
                response[sid] = what
                for s in [s for s, w in owner.items() if w == sid]:
                    del owner[s]
        elif kind == "spoof":
            _, i, how = entry
            sid = sessions[i % k]
            if how == "request":
                frame = {"jsonrpc": "2.0", "id": ids[sid], "method": "permission/request", "params": {"sessionId": sid}}
                lines.append(frame_bytes(frame, True))
            elif how == "fast-with-id":
                frame = event_frame(sid, 999999, "spoofed")
                frame["id"] = ids[sid]
                lines.append(frame_bytes(frame, True))
            else:
                lines.append(frame_bytes({"jsonrpc": "2.0", "id": ids[sid], "method": "session/prompt", "result": RESPONSES["ok"][1]}, True))
        elif kind == "unknown-response":
            lines.append(frame_bytes({"jsonrpc": "2.0", "id": entry[1], "result": {"status": "ok", "reason": {"kind": "completed"}}}, True))
        elif kind == "bytes":
            lines.append(entry[1].replace(b"\n", b" "))
        elif kind == "json":
            lines.append(json.dumps(entry[1]).encode("utf-8"))
        elif kind == "odd-notification":
            sid = sessions[0]
            odd = {
                "params-list": {"jsonrpc": "2.0", "method": "session.event", "params": [sid]},
                "params-null": {"jsonrpc": "2.0", "method": "session.event", "params": None},
                "method-int": {"jsonrpc": "2.0", "method": 7, "params": {"sessionId": sid}},
                "sid-int": {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": 5}},
                "sid-null": {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": None}},
                "sid-list": {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": [sid], "event": {}}},
                "sid-dict": {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": {"id": sid}, "event": {}}},
                "child-list": {"jsonrpc": "2.0", "method": "subagent.started", "params": {"parentSessionId": [sid], "childSessionId": {"x": 1}}},
                "no-params": {"jsonrpc": "2.0", "method": "session.event"},
            }[entry[1]]
            lines.append(frame_bytes(odd, False))
        elif kind == "torn":
            # A cut-off line, on the SDK's fast path or off it (spaces after the colons).
            seq += 1
            whole = frame_bytes(event_frame(sessions[entry[1] % k], seq, "torn"), seq % 2 == 0)
            lines.append(whole[: min(entry[2], len(whole) - 1)])
        elif kind == "bad-utf8":
            seq += 1
            # Off the fast path (spaces after the colons), with raw UTF-8 to corrupt.
            whole = json.dumps(event_frame(sessions[entry[1] % k], seq, "\u00e9t\u00e9"), ensure_ascii=False).encode("utf-8")
            at = whole.index("\u00e9".encode("utf-8"))
            lines.append(whole[:at] + b"\xc3\x28" + whole[at + 2 :])
        elif kind == "blank":
            lines.append(entry[1])
        elif kind == "deep":
            seq += 1
            _, i, where, depth = entry
            lines.append(deep_frame(sessions[i % k], ids[sessions[i % k]], where, depth, seq))
        elif kind == "nested":
            # Nested well within the limit: delivered intact, on the fast path or off it.
            seq += 1
            sid = sessions[entry[1] % k]
            frame = event_frame(sid, seq, "nested")
            lines.append(frame_bytes(frame, entry[2]).replace(b'"text":"nested"', b'"text":"nested","tree":' + nested(300))
                         .replace(b'"text": "nested"', b'"text": "nested", "tree": ' + nested(300)))
            frame["params"]["event"]["data"]["chunk"]["tree"] = json.loads(nested(300))
            deliver(sid, frame)
    data = b"\n".join(lines) + (b"\n" if lines else b"")
    if final_torn:
        seq += 1
        whole = frame_bytes(event_frame(sessions[0], seq, "last words"), seq % 2 == 0)
        data += whole[: min(final_torn, len(whole) - 1)]
    return data, expected, response


def chunked(data: bytes, cuts: List[int]) -> List[bytes]:
    if not data:
        return []
    points = sorted({c % len(data) for c in cuts} - {0})
    out, start = [], 0
    for p in points:
        out.append(data[start:p])
        start = p
    out.append(data[start:])
    return out


def check_outcome(session: str, what: Optional[str], outcome: Any) -> None:
    if what is None:
        assert isinstance(outcome, TransportClosedError), f"{session}: expected TransportClosedError at EOF, got {outcome!r}"
    elif what == "ok":
        assert getattr(outcome, "status", None) == "ok", f"{session}: {outcome!r}"
    elif what == "error-result":
        assert getattr(outcome, "status", None) == "error", f"{session}: {outcome!r}"
    elif what == "rpc-error":
        assert isinstance(outcome, JsonRpcError) and outcome.code == -32603, f"{session}: {outcome!r}"
    elif what == "rpc-error-malformed":
        assert isinstance(outcome, JsonRpcError) and "malformed error object" in outcome.message, f"{session}: {outcome!r}"
    elif what == "malformed":
        assert isinstance(outcome, ProtocolError), f"{session}: {outcome!r}"
    else:  # pragma: no cover
        raise AssertionError(what)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(1, 3),
    plan=st.lists(item, max_size=40),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=12),
    final_torn=st.one_of(st.just(0), st.integers(1, 120)),
)
def test_reader_fuzz(replay_bridge: Path, count: int, plan: List[Tuple], cuts: List[int], final_torn: int) -> None:
    sessions = [f"s{i}" for i in range(count)]
    replay = Replay(replay_bridge, sessions)
    try:
        ids = replay.request_ids()
        data, expected, response = build(plan, sessions, ids, final_torn)
        replay.write(chunked(data, cuts))
        replay.end()
        replay.settle()
        for s in sessions:
            check_outcome(s, response[s], replay.outcome[s])
            assert replay.delivered[s] == expected[s], f"{s}: delivered notifications differ"
    finally:
        replay.close()


# ---------------------------------------------------------------------------
# Targeted cases, and the inputs that once broke the reader
# ---------------------------------------------------------------------------


def run_stream(bridge: Path, stream: bytes, give_up: Callable[[], Optional[str]] = lambda: None) -> Replay:
    """Replays `stream` (with `@ID@` replaced by the prompt's id) to one prompt of session s0 and settles it."""
    replay = Replay(bridge, ["s0"])
    try:
        ids = replay.request_ids()
        replay.write([stream.replace(b"@ID@", str(ids["s0"]).encode())])
        replay.end()
        replay.settle(give_up=give_up)
    finally:
        replay.close()
    return replay


def test_interleaved_sessions_are_routed_apart(replay_bridge: Path) -> None:
    """Two prompts, their events interleaved byte-chunk by byte-chunk with garbage between."""
    replay = Replay(replay_bridge, ["a", "b"])
    try:
        ids = replay.request_ids()
        lines = []
        for n in range(50):
            for s in ("a", "b"):
                lines.append(frame_bytes(event_frame(s, n + 1, f"{s}{n}"), n % 2 == 0))
            lines.append(b"\x00\xff garbage")
        lines.append(frame_bytes({"jsonrpc": "2.0", "id": ids["b"], "result": RESPONSES["ok"][1]}, True))
        lines.append(frame_bytes({"jsonrpc": "2.0", "id": ids["a"], "result": RESPONSES["error-result"][1]}, True))
        data = b"\n".join(lines) + b"\n"
        replay.write([data[i : i + 7] for i in range(0, len(data), 7)])
        replay.end()
        replay.settle()
        assert replay.outcome["a"].status == "error" and replay.outcome["b"].status == "ok"
        for s in ("a", "b"):
            texts = [p["event"]["data"]["chunk"]["text"] for _, p in replay.delivered[s]]
            assert texts == [f"{s}{n}" for n in range(50)]
    finally:
        replay.close()


def test_a_corrupt_fast_path_line_is_dropped(replay_bridge: Path) -> None:
    good = frame_bytes(event_frame("s0", 1, "kept"), True)
    torn = frame_bytes(event_frame("s0", 2, "torn"), True)[:90]
    later = frame_bytes(event_frame("s0", 3, "after"), True)
    done = b'{"jsonrpc":"2.0","id":@ID@,"result":{"status":"ok","reason":{"kind":"completed"}}}'
    replay = run_stream(replay_bridge, b"\n".join([good, torn, later, done]) + b"\n")
    outcome = replay.outcome["s0"]
    assert not isinstance(outcome, BaseException), outcome
    assert outcome.status == "ok"
    assert [p["event"]["seq"] for _, p in replay.delivered["s0"]] == [1, 3]


def test_a_torn_last_line_at_eof_is_a_transport_error(replay_bridge: Path) -> None:
    good = frame_bytes(event_frame("s0", 1, "kept"), True)
    torn = frame_bytes(event_frame("s0", 2, "cut off by SIGKILL"), True)[:95]
    replay = run_stream(replay_bridge, good + b"\n" + torn)
    outcome = replay.outcome["s0"]
    assert isinstance(outcome, TransportClosedError), outcome
    assert [p["event"]["seq"] for _, p in replay.delivered["s0"]] == [1]


def test_an_unhashable_session_id_does_not_kill_the_reader(replay_bridge: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    died: List[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(f"{args.thread.name}: {args.exc_value!r}"))
    odd = b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":["s0"],"event":{}}}'
    done = b'{"jsonrpc":"2.0","id":@ID@,"result":{"status":"ok","reason":{"kind":"completed"}}}'
    # A dead reader thread means a hang: report it at once rather than after the hang guard.
    replay = run_stream(replay_bridge, odd + b"\n" + done + b"\n", give_up=lambda: died and f"a thread died: {died[0]}")
    assert replay.outcome["s0"].status == "ok"


@pytest.mark.parametrize("where", DEEP_PLACES)
def test_a_frame_nested_too_deep_is_dropped(replay_bridge: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """``json.loads`` raises RecursionError (not ValueError) past about 1 000 levels; such a frame
    is dropped, the frames around it are delivered, and the prompt gets its response."""
    died: List[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(f"{args.thread.name}: {args.exc_value!r}"))
    before = frame_bytes(event_frame("s0", 1, "before"), True)
    after = frame_bytes(event_frame("s0", 3, "after"), True)
    deep = deep_frame("s0", 0, where, 5000, 2).replace(b'"id":0,', b'"id":@ID@,')
    done = b'{"jsonrpc":"2.0","id":@ID@,"result":{"status":"ok","reason":{"kind":"completed"}}}'
    replay = run_stream(replay_bridge, b"\n".join([before, deep, after, done]) + b"\n",
                        give_up=lambda: died and f"a thread died: {died[0]}")
    outcome = replay.outcome["s0"]
    assert getattr(outcome, "status", None) == "ok", outcome
    assert [p["event"]["seq"] for _, p in replay.delivered["s0"]] == [1, 3]
