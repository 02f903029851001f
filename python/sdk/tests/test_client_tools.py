"""Client tools (``@tool``, ``tools=``) through the real binary and its scripted model: the SDK
answers each ``tool/request`` with the function's result, off the reader thread (sync tools on
the harness's pool, async ones on the caller's loop); errors, bad arguments, concurrency,
cancellation, a killed bridge. Approvals are in test_approvals.py."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from pydantic import BaseModel

from deepseek_harness import (
    AsyncDeepSeekHarness,
    ClientTool,
    DeepSeekHarness,
    HarnessClient,
    HarnessOptions,
    InvalidParamsError,
    ToolRequestEvent,
    ToolResultEvent,
    TransportClosedError,
    tool,
)
from deepseek_harness._internal.tool_dispatch import POOL_THREAD_PREFIX
from deepseek_harness.client_tools import split_tools

from conftest import call_within, real_bridge_or_skip, run_async

GUARD = 30.0  # a hang guard only: every wait below ends on an event long before


def calls(*tool_calls: Dict[str, Any], text: str = "calling") -> Dict[str, Any]:
    return {"text": text, "toolCalls": list(tool_calls)}


def call(call_id: str, name: str, **arguments: Any) -> Dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def script_file(tmp_path: Path, *turns: List[Dict[str, Any]]) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*.json')))}.json"
    path.write_text(json.dumps({"turns": [{"steps": steps} for steps in turns]}))
    return str(path)


def harness(tmp_path: Path, *turns: List[Dict[str, Any]], **kwargs: Any) -> DeepSeekHarness:
    return DeepSeekHarness(provider="scripted", model=script_file(tmp_path, *turns), cwd=tmp_path,
                           bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions",
                           shutdown_timeout_seconds=5.0, **kwargs)


def async_harness(tmp_path: Path, *turns: List[Dict[str, Any]], **kwargs: Any) -> AsyncDeepSeekHarness:
    return AsyncDeepSeekHarness(provider="scripted", model=script_file(tmp_path, *turns), cwd=tmp_path,
                                bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions",
                                shutdown_timeout_seconds=5.0, **kwargs)


def results(events: List[Any]) -> Dict[str, Dict[str, Any]]:
    """callId → data of each tool/result."""
    return {ev.data["callId"]: ev.data for ev in events if ev.type == "tool/result"}


def text_of(data: Dict[str, Any]) -> str:
    return "".join(b["text"] for b in data["content"])


def stuck_tool() -> Tuple[ClientTool, threading.Event, threading.Event]:
    """A sync tool named ``stuck`` that sets ``started`` and waits for ``release`` (GUARD at most)."""
    started, release = threading.Event(), threading.Event()

    @tool
    def stuck(word: str) -> str:
        """Waits."""
        started.set()
        release.wait(GUARD)
        return "late"

    return stuck, started, release


# -- the decorator --------------------------------------------------------------------------


def test_the_decorator_builds_the_schema_from_hints_and_docstring() -> None:
    @tool
    def lookup(word: str, limit: int = 3) -> str:
        """Looks a word up in the team glossary.

        More text the model does not need.

        Args:
            word: the word to look up
            limit: how many entries to return
        """
        return word

    assert isinstance(lookup, ClientTool)
    assert lookup.to_wire() == {
        "name": "lookup",
        "description": "Looks a word up in the team glossary.",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "word": {"type": "string", "description": "the word to look up"},
                "limit": {"type": "integer", "default": 3, "description": "how many entries to return"},
            },
            "required": ["word"],
        },
        "readOnly": False,
    }
    assert lookup("x") == "x"  # still callable as the function

    @tool(name="find-ticket", description="Finds a ticket.", read_only=True)
    async def find(ticket_id: int) -> Dict[str, Any]:
        return {}

    assert (find.name, find.description, find.read_only, find.is_async) == ("find-ticket", "Finds a ticket.", True, True)
    assert find.parameters["properties"] == {"ticket_id": {"type": "integer"}}


@pytest.mark.parametrize("name, message", [
    ("bash", "built-in tool's name"),
    ("mcp__x", "kept for MCP"),
    ("final_answer", "structured output"),
    ("two words", "must match"),
    ("x" * 65, "must match"),
])
def test_names_the_bridge_would_refuse_fail_at_decoration(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tool(name=name, description="d")(lambda: None)


def test_functions_the_model_cannot_call_fail_at_decoration() -> None:
    def no_doc(x: int) -> int:
        return x

    def star(*args: int) -> int:
        """Doc."""
        return 0

    def positional(x: int, /) -> int:
        """Doc."""
        return x

    with pytest.raises(ValueError, match="docstring or description"):
        tool(no_doc)
    with pytest.raises(TypeError, match=r"\*args"):
        tool(star)
    with pytest.raises(TypeError, match="positional-only"):
        tool(positional)


# -- the tools= rule and construction errors -----------------------------------------------


@tool
def lookup(word: str) -> str:
    """Looks a word up in the team glossary."""
    return f"{word}: the bridge and its SDK"


def test_the_tools_rule() -> None:
    assert split_tools(None, None) == (None, [])
    assert split_tools([], None) == ([], [])
    assert split_tools(["read_file"], None) == (["read_file"], [])
    assert split_tools([lookup], None) == (None, [lookup])  # only client tools: every built-in too
    assert split_tools(["read_file", lookup], None) == (["read_file"], [lookup])
    assert split_tools([lookup], []) == ([], [lookup])
    assert split_tools([lookup], ["grep"]) == (["grep"], [lookup])


def test_construction_errors(tmp_path: Path) -> None:
    other = tool(name="lookup", description="Another.")(lambda word: word)

    def plain(word: str) -> str:
        return word

    bridge = real_bridge_or_skip()
    kwargs: Dict[str, Any] = {"provider": "scripted", "model": "demo", "bridge_bin": bridge}
    with pytest.raises(ValueError, match="two client tools are named 'lookup'"):
        DeepSeekHarness(tools=[lookup, other], **kwargs)
    with pytest.raises(TypeError, match="decorate 'plain' with @deepseek_harness.tool"):
        DeepSeekHarness(tools=[plain], **kwargs)
    with pytest.raises(TypeError, match="not int"):
        AsyncDeepSeekHarness(tools=[3], **kwargs)
    with pytest.raises(TypeError, match="either as builtin_tools= or as names in tools="):
        DeepSeekHarness(tools=["read_file", lookup], builtin_tools=["grep"], **kwargs)
    with pytest.raises(TypeError, match="takes a list"):
        HarnessOptions(tools=lookup)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs can_use_tool"):
        DeepSeekHarness(approvals="writes", **kwargs)
    with pytest.raises(ValueError, match="approvals must be"):
        AsyncDeepSeekHarness(approvals="sometimes", can_use_tool=lambda ev: None, **kwargs)
    for approvals in (None, "never"):  # a callback that would never be asked
        with pytest.raises(ValueError, match="asked only with approvals='writes' or 'always'"):
            DeepSeekHarness(approvals=approvals, can_use_tool=lambda ev: None, **kwargs)
    # Nothing was started by any of these: no bridge, no pool.
    options = HarnessOptions(tools=[lookup])
    h = DeepSeekHarness(options=options, **kwargs)
    assert h.tools is None and h.client_tools == [lookup] and not h.client.started
    h.close()


def test_only_client_tools_keep_the_builtins_and_builtin_tools_narrows_them(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    steps = [calls(call("c1", "lookup", word="harness"), call("c2", "read_file", path="notes.txt")), {"text": "done"}]
    with harness(tmp_path, steps, tools=[lookup]) as h:
        r = h.run("go")
    assert [(d["isError"], text_of(d)) for d in results(r.events).values()] == [
        (False, "harness: the bridge and its SDK"), (False, "1\talpha")]
    with harness(tmp_path, steps, tools=[lookup], builtin_tools=[]) as h:
        r = h.run("go")
    got = results(r.events)
    assert not got["c1"]["isError"] and got["c2"]["isError"] and "read_file" in text_of(got["c2"])


# -- running tools ------------------------------------------------------------------------


def test_a_sync_tool_runs_on_the_pool_never_on_the_reader_and_answers_with_its_result(tmp_path: Path) -> None:
    seen: List[threading.Thread] = []

    class Ticket(BaseModel):
        id: int
        title: str

    @tool(read_only=True)
    def ticket(ticket_id: int) -> Ticket:
        """Reads a ticket."""
        seen.append(threading.current_thread())
        return Ticket(id=ticket_id, title="flaky test")

    with harness(tmp_path, [calls(call("c1", "ticket", ticket_id=7)), {"text": "done"}], tools=[ticket]) as h:
        stream = h.stream("go")
        events = list(stream)
        reader = h.client._reader
    assert stream.result is not None and stream.result.ok
    [request] = [ev for ev in events if isinstance(ev, ToolRequestEvent)]
    assert (request.call_id, request.name, request.arguments) == ("c1", "ticket", {"ticket_id": 7})
    [result] = [ev for ev in events if isinstance(ev, ToolResultEvent)]
    assert (result.is_error, json.loads(result.text)) == (False, {"id": 7, "title": "flaky test"})
    [thread] = seen
    assert thread is not reader and thread is not threading.main_thread()
    assert thread.name.startswith(POOL_THREAD_PREFIX)
    # close() shut the pool down: its worker ends.
    thread.join(GUARD)
    assert not thread.is_alive()


def test_a_tool_that_raises_is_an_error_result_the_turn_goes_on(tmp_path: Path) -> None:
    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        if reason == "exit":
            raise SystemExit(3)  # not an Exception: still the call's answer, never a hung turn
        raise ValueError(f"cannot do {reason}")

    steps = [calls(call("c1", "explode", reason="that"), call("c2", "explode", reason="exit")), {"text": "recovered"}]
    with harness(tmp_path, steps, tools=[explode]) as h:
        r = call_within(GUARD, h.run, "go")
    assert r.ok and r.final_response == "recovered"
    got = results(r.events)
    assert got["c1"]["isError"] and text_of(got["c1"]) == "ValueError: cannot do that"
    assert got["c2"]["isError"] and text_of(got["c2"]) == "SystemExit: 3"


def test_arguments_that_fail_validation_never_reach_the_function_and_the_model_reads_why(tmp_path: Path) -> None:
    ran: List[Any] = []

    @tool
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        ran.append((a, b))
        return a + b

    steps = [calls(call("c1", "add", a="one", b=2), call("c2", "add", a=1), call("c3", "add", a=1, b=2, c=3)),
             calls(call("c4", "add", a=1, b="2")), {"text": "3"}]
    with harness(tmp_path, steps, tools=[add]) as h:
        r = h.run("go")
    got = results(r.events)
    assert r.ok and ran == [(1, 2)]  # only c4 ran ("2" is a valid int for pydantic's lax mode)
    assert got["c1"]["isError"] and "invalid arguments for add" in text_of(got["c1"]) and "- a:" in text_of(got["c1"])
    assert got["c2"]["isError"] and "- b: Field required" in text_of(got["c2"])
    assert got["c3"]["isError"] and "- c: Extra inputs are not permitted" in text_of(got["c3"])
    assert (got["c4"]["isError"], text_of(got["c4"])) == (False, "3")


def test_a_slow_tool_does_not_hold_up_another_sessions_tool(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()
    count = [0]
    lock = threading.Lock()

    @tool
    def work(word: str) -> str:
        """Works on a word."""
        with lock:
            n = count[0]
            count[0] += 1
        if n == 0:  # the first call (session A) waits until session B's turn is over
            started.set()
            assert release.wait(GUARD)
        return f"call {n}"

    with harness(tmp_path, [calls(call("c1", "work", word="x")), {"text": "done"}], tools=[work]) as h:
        h.start()
        box: Dict[str, Any] = {}
        a = threading.Thread(target=lambda: box.setdefault("a", h.run("a", session_id="A")), daemon=True)
        a.start()
        assert started.wait(GUARD)
        b = call_within(GUARD, h.run, "b", session_id="B")
        assert a.is_alive() and "a" not in box  # A still waits for its tool
        assert text_of(results(b.events)["c1"]) == "call 1"
        release.set()
        a.join(GUARD)
    assert box["a"].ok and text_of(results(box["a"].events)["c1"]) == "call 0"


def test_two_sessions_await_their_sync_tools_at_once(tmp_path: Path) -> None:
    both = threading.Barrier(2, timeout=GUARD)  # breaks (and fails the tools) unless both run together

    @tool
    def meet(word: str) -> str:
        """Waits for the other call."""
        both.wait()
        return "met"

    with harness(tmp_path, [calls(call("c1", "meet", word="x")), {"text": "done"}], tools=[meet]) as h:
        h.start()
        runs: List[Any] = []
        threads = [threading.Thread(target=lambda s=s: runs.append(h.run("go", session_id=s)), daemon=True) for s in "AB"]
        for t in threads:
            t.start()
        for t in threads:
            t.join(GUARD)
    assert len(runs) == 2 and all(text_of(results(r.events)["c1"]) == "met" for r in runs)


def test_two_sessions_await_their_async_tools_at_once_on_the_callers_loop(tmp_path: Path) -> None:
    async def main() -> List[Any]:
        loop = asyncio.get_running_loop()
        arrived: List[str] = []
        both = asyncio.Event()

        @tool
        async def meet(word: str) -> str:
            """Waits for the other call."""
            assert asyncio.get_running_loop() is loop
            arrived.append(word)
            if len(arrived) == 2:
                both.set()
            await both.wait()
            return f"met {word}"

        async with async_harness(tmp_path, [calls(call("c1", "meet", word="x")), {"text": "done"}], tools=[meet]) as h:
            return list(await asyncio.gather(h.run("a", session_id="A"), h.run("b", session_id="B")))

    runs = run_async(main(), GUARD)
    assert [text_of(results(r.events)["c1"]) for r in runs] == ["met x", "met x"]


def test_an_async_tool_on_the_blocking_harness_runs_in_a_fresh_loop_on_a_worker(tmp_path: Path) -> None:
    where: List[str] = []

    @tool
    async def probe(word: str) -> str:
        """Reports where it runs."""
        await asyncio.sleep(0)
        where.append(threading.current_thread().name)
        return word.upper()

    with harness(tmp_path, [calls(call("c1", "probe", word="hi")), {"text": "done"}], tools=[probe]) as h:
        r = h.run("go")
    assert text_of(results(r.events)["c1"]) == "HI"
    assert where[0].startswith(POOL_THREAD_PREFIX)


# -- cancellation, timeouts, a dying bridge -------------------------------------------------


def test_cancel_while_a_sync_tool_runs_aborts_the_turn_and_its_late_answer_is_dropped(tmp_path: Path) -> None:
    started, release, answered = threading.Event(), threading.Event(), threading.Event()

    @tool
    def stuck(word: str) -> str:
        """Waits."""
        started.set()
        release.wait(GUARD)
        return "late"

    turns = [[calls(call("c1", "stuck", word="x")), {"text": "never"}], [{"text": "second turn"}]]
    with harness(tmp_path, *turns, tools=[stuck]) as h:
        session = h.start_session()
        box: Dict[str, Any] = {}
        t = threading.Thread(target=lambda: box.setdefault("r", session.run("go")), daemon=True)
        t.start()
        assert started.wait(GUARD)
        assert call_within(GUARD, session.cancel) is True
        t.join(GUARD)
        assert box["r"].status == "aborted"
        dispatcher = h._dispatcher
        assert dispatcher is not None
        # The late answer goes out and is refused by the bridge (unknown-call); nothing raises.
        release.set()
        assert call_within(GUARD, session.run, "again").final_response == "second turn"
    aborted = results(box["r"].events)["c1"]
    assert aborted["isError"] and "abort" in text_of(aborted)


def test_an_async_tool_under_asyncio_timeout_is_cancelled_with_its_turn(tmp_path: Path) -> None:
    async def main() -> List[Any]:
        started, cancelled = asyncio.Event(), asyncio.Event()

        @tool
        async def forever(word: str) -> str:
            """Never answers."""
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "never"

        async def expire_when_started(cm: Any) -> None:
            await started.wait()
            cm.reschedule(asyncio.get_running_loop().time())  # the deadline passes now: no timing involved

        turns = [[calls(call("c1", "forever", word="x")), {"text": "never"}], [{"text": "second turn"}]]
        async with async_harness(tmp_path, *turns, tools=[forever]) as h:
            session = h.start_session()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(None) as cm:
                    expiry = asyncio.ensure_future(expire_when_started(cm))
                    await session.run("go")
            await expiry
            await asyncio.wait_for(cancelled.wait(), GUARD)  # the tool's task was cancelled too
            second = await session.run("again")
            return [second.final_response]

    assert run_async(main(), GUARD * 2) == ["second turn"]


def test_bridge_killed_while_a_tool_is_pending_then_resume_gives_the_call_an_error_result(tmp_path: Path) -> None:
    stuck, started, release = stuck_tool()

    turns = [[calls(call("c1", "stuck", word="x")), {"text": "never"}], [{"text": "resumed"}]]
    model = script_file(tmp_path, *turns)
    common: Dict[str, Any] = dict(provider="scripted", model=model, cwd=tmp_path, bridge_bin=real_bridge_or_skip(),
                                  session_root=tmp_path / "sessions", shutdown_timeout_seconds=5.0, tools=[stuck])
    with DeepSeekHarness(**common) as h:
        box: Dict[str, Any] = {}

        def run() -> None:
            try:
                h.run("go", session_id="s1")
            except BaseException as exc:  # noqa: BLE001
                box["error"] = exc

        t = threading.Thread(target=run, daemon=True)
        t.start()
        assert started.wait(GUARD)
        process = h.client.process
        assert process is not None
        process.kill()
        t.join(GUARD)
        assert isinstance(box.get("error"), TransportClosedError)
        release.set()  # the answer finds the bridge gone: dropped quietly
    with DeepSeekHarness(**common) as h2:
        r = h2.start_session("s1").run("again")
        history = list(h2.start_session("s1").history())
    assert r.final_response == "resumed"
    pending = [ev for ev in history if isinstance(ev, ToolResultEvent) and ev.call_id == "c1"]
    assert len(pending) == 1 and pending[0].is_error
    assert "stopped while this call was pending" in pending[0].text


def test_a_harness_closed_while_a_sync_tool_runs_does_not_hang(tmp_path: Path) -> None:
    stuck, started, release = stuck_tool()

    h = harness(tmp_path, [calls(call("c1", "stuck", word="x")), {"text": "never"}], tools=[stuck])
    h.start()
    box: Dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.setdefault("r", h.run("go")), daemon=True)
    t.start()
    assert started.wait(GUARD)
    call_within(GUARD, h.close)
    t.join(GUARD)
    assert not t.is_alive()
    release.set()
    dispatcher: Optional[Any] = h._dispatcher
    assert dispatcher is not None and dispatcher._pools == {}


PROGRAM_WITH_A_STUCK_TOOL = """
import json, sys, threading
from deepseek_harness import DeepSeekHarness, tool

started = threading.Event()

@tool
def stuck(word: str) -> str:
    \"\"\"Never returns.\"\"\"
    started.set()
    threading.Event().wait()
    return "never"

model, bridge, root = sys.argv[1:4]
h = DeepSeekHarness(provider="scripted", model=model, bridge_bin=bridge, session_root=root,
                    client_tool_timeout_seconds=1, tools=[stuck])
result = h.run("go")
assert started.is_set(), result
h.close()
print("closed", result.status, flush=True)
"""


def test_a_program_whose_sync_tool_never_returns_still_exits_after_close(tmp_path: Path) -> None:
    # The tool's thread is abandoned (a daemon): the interpreter does not wait for it at exit.
    import subprocess
    import sys
    model = script_file(tmp_path, [calls(call("c1", "stuck", word="x")), {"text": "gave up on it"}])
    program = tmp_path / "stuck.py"
    program.write_text(PROGRAM_WITH_A_STUCK_TOOL)
    run = subprocess.run([sys.executable, str(program), model, str(real_bridge_or_skip()), str(tmp_path / "sessions")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=GUARD)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "closed ok" in run.stdout


def test_the_low_level_client_offers_client_tools_and_the_caller_answers(tmp_path: Path) -> None:
    model = script_file(tmp_path, [calls(call("c1", "lookup", word="harness"), call("w1", "write_file", path="a.txt", content="x")),
                                   {"text": "done"}])
    answered: List[str] = []
    with HarnessClient(real_bridge_or_skip(), session_root=tmp_path / "sessions") as client:
        client.initialize(tmp_path, "scripted", model, client_tools=[lookup], approvals="writes")

        def answer(n: Any) -> None:  # on this thread; the answers are requests of their own
            event = n.payload.get("event", {})
            if event.get("type") == "tool/request":
                client.session_tool_result("s1", event["data"]["callId"], "by hand")
                answered.append("tool")
            elif event.get("type") == "permission/request":
                data = event["data"]
                if data["name"] == "lookup":  # not read-only, so asked about too
                    client.session_permission("s1", data["requestId"], "allow")
                else:
                    client.session_permission("s1", data["requestId"], "deny", message="not today")
                answered.append("permission")

        events: List[Any] = []
        response = client.session_prompt("s1", "go", on_notification=lambda n: (events.append(n), answer(n)))
        with pytest.raises(InvalidParamsError) as caught:
            client.session_tool_result("s1", "c1", "again")
    assert response.status == "ok" and sorted(answered) == ["permission", "permission", "tool"]
    assert caught.value.kind == "unknown-call"
    got = {n.payload["event"]["data"]["callId"]: n.payload["event"]["data"] for n in events
           if n.payload.get("event", {}).get("type") == "tool/result"}
    assert text_of(got["c1"]) == "by hand" and text_of(got["w1"]) == "not today" and got["w1"]["isError"]


def test_the_reader_hands_over_exactly_the_events_to_answer() -> None:
    from deepseek_harness._internal.inbox import Pending
    from deepseek_harness._internal.router import Router

    def frame(event_type: str, data: Dict[str, Any], layout: str = "bridge") -> bytes:
        event = {"type": event_type, "seq": 1, "time": 0, "data": data}
        if layout != "bridge":  # the same event with its keys in another order
            event = {"seq": 1, "time": 0, "data": data, "type": event_type}
        return json.dumps({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "s1", "event": event}},
                          separators=(",", ":")).encode()

    router = Router()
    handed: List[Any] = []
    router.interceptor = lambda n, owner: handed.append((n.payload["event"]["type"], owner))
    prompt = Pending(1, "session/prompt", "s1")
    router.add(prompt, "s1")
    lines = [
        frame("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": '"type":"tool/request"'}}),
        frame("tool/request", {"callId": "c1", "name": "lookup", "arguments": {}}),
        frame("tool/result", {"callId": "c0", "name": "x", "content": [], "isError": False, "durationMs": 1}),
        frame("permission/request", {"requestId": "p1", "callId": "c2", "name": "bash", "arguments": {}}),
        frame("tool/request", {"callId": "c3", "name": "lookup", "arguments": {}}, layout="other"),
    ]
    router.dispatch(lines)
    assert handed == [("tool/request", prompt), ("permission/request", prompt), ("tool/request", prompt)]
    # Every line still reaches the prompt, in order (the answered ones decoded, the rest raw).
    [batch] = list(prompt.inbox.items)
    assert len(batch) == 5 and [type(item) is bytes for item in batch] == [True, False, True, False, False]


def test_a_sync_tool_on_the_async_harness_leaves_the_loop_free(tmp_path: Path) -> None:
    async def main() -> str:
        loop_free = threading.Event()

        @tool
        def needs_the_loop(word: str) -> str:
            """Returns once the event loop has run a callback: it would wait forever on the loop's own thread."""
            assert loop_free.wait(GUARD), "the loop never ran: the tool blocked it"
            return threading.current_thread().name

        async with async_harness(tmp_path, [calls(call("c1", "needs_the_loop", word="x")), {"text": "done"}],
                                 tools=[needs_the_loop]) as h:
            session = h.start_session()
            async with session.stream("go") as events:
                async for item in events:
                    if isinstance(item, ToolRequestEvent):
                        loop_free.set()  # runs on the loop, while the tool waits on its worker
            assert events.result is not None
            return text_of(results(events.result.events)["c1"])

    assert run_async(main(), GUARD * 2).startswith(POOL_THREAD_PREFIX)


def test_a_client_tool_pickles_as_its_function_and_settings() -> None:
    import pickle

    options = HarnessOptions(tools=["read_file", lookup])
    copy = pickle.loads(pickle.dumps(options))
    [clone] = [t for t in copy.tools if isinstance(t, ClientTool)]
    assert clone.to_wire() == lookup.to_wire() and clone.fn is lookup.fn
    assert clone.validate({"word": "x"}) == {"word": "x"}


def test_a_tool_made_from_a_function_kept_under_its_name_pickles_too() -> None:
    import pickle

    from deepseek_harness.options import initialize_settings

    made = tool(name="fields", description="The settings table.")(initialize_settings)
    clone = pickle.loads(pickle.dumps(made))
    assert clone is not made and clone.to_wire() == made.to_wire() and clone.fn is initialize_settings


def test_an_async_tool_whose_turn_was_cancelled_before_it_started_never_runs(tmp_path: Path) -> None:
    # The loop is busy when the tool/request arrives; the turn is cancelled meanwhile. The tool's
    # job must not start once the loop is free: the user cancelled what it would do.
    ran: List[str] = []

    @tool
    async def deploy() -> str:
        """Deploys."""
        ran.append("deployed")
        return "deployed"

    # The step waits before its tool call streams, so `step/start` reaches the loop (and blocks
    # it) before the `tool/request` is read: without the wait the bridge may write both in one
    # go, and the loop would be free when the request came.
    model = script_file(tmp_path, [{**calls(call("c1", "deploy")), "delayMs": 300}, {"text": "never"}])
    requested, cancelled = threading.Event(), threading.Event()

    async def main() -> str:
        async with AsyncDeepSeekHarness(provider="scripted", model=model, cwd=tmp_path, bridge_bin=real_bridge_or_skip(),
                                        session_root=tmp_path / "sessions", tools=[deploy]) as h:
            watch = h.client.subscribe_notifications(
                lambda n: (n.payload.get("event") or {}).get("type") == "tool/request" and not requested.set())

            def cancel_once_requested() -> None:
                assert requested.wait(GUARD)
                h.client.session_cancel("s1")  # returns once the turn has settled
                cancelled.set()

            threading.Thread(target=cancel_once_requested, daemon=True).start()

            def busy_loop(n: Any) -> None:  # blocks the loop (a slow callback) until the turn is over
                if (n.payload.get("event") or {}).get("type") == "step/start":
                    assert cancelled.wait(GUARD)

            result = await h.run("go", session_id="s1", on_notification=busy_loop)
            for _ in range(10):
                await asyncio.sleep(0)  # let anything the loop was handed run
            watch.close()
            return result.reason.kind

    assert run_async(main(), GUARD * 2) == "aborted"
    assert ran == []


def test_the_dispatcher_keeps_nothing_per_session_once_its_jobs_are_done(tmp_path: Path) -> None:
    # A long-lived harness serves many sessions: no bookkeeping may stay behind per session.
    h = harness(tmp_path, [calls(call("c1", "lookup", word="harness")), {"text": "done"}], tools=[lookup])
    with h:
        for n in range(5):
            assert call_within(GUARD, h.run, "go", session_id=f"s{n}").ok
        dispatcher: Any = h._dispatcher
        # A worker finishes its job just after the bridge took the answer: wait for the last one.
        import time
        until = time.monotonic() + GUARD
        while dispatcher._outstanding and time.monotonic() < until:
            time.sleep(0.01)
        assert dispatcher._outstanding == {} and dispatcher._settled == {}


def test_prompts_run_from_inside_tools_never_wait_for_the_workers_their_callers_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Three sessions' tools each run a prompt on the same harness, with a pool of two workers:
    # the two running hold both workers while their inner prompts' tools need one. Those jobs get
    # threads of their own (before: every call waited out the client-tool timeout).
    import deepseek_harness._internal.tool_dispatch as dispatch
    monkeypatch.setattr(dispatch, "POOL_WORKERS", 2)
    holder: Dict[str, DeepSeekHarness] = {}

    @tool
    def outer(word: str) -> str:
        """Runs a prompt of its own, whose call of this tool is answered at once."""
        if "nested" in threading.current_thread().name:
            return "inner"
        return holder["h"].run("inner", session_id=f"inner-{threading.get_ident()}").final_response

    h = holder["h"] = harness(tmp_path, [calls(call("c1", "outer", word="x")), {"text": "done"}], tools=[outer],
                              client_tool_timeout_seconds=3600.0)
    with h:
        threads = [threading.Thread(target=lambda n=n: box.setdefault(n, h.run("go", session_id=f"outer-{n}")), daemon=True)
                   for n in range(3)]
        box: Dict[int, Any] = {}
        for t in threads:
            t.start()
        for t in threads:
            t.join(GUARD)
        assert sorted(box) == [0, 1, 2]
        assert all(r.ok and r.final_response == "done" for r in box.values())
