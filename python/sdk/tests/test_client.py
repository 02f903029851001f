"""HarnessClient: settlement, ordering, callbacks, concurrency, cancel, faults, lifecycle."""

from __future__ import annotations

import logging
import os
import signal
import threading

import pytest

import deepseek_harness
from deepseek_harness import (
    HarnessClient,
    HarnessError,
    JsonRpcError,
    Notification,
    NotInitializedError,
    ProtocolError,
    RequestTimeoutError,
    SessionBusyError,
    SessionPromptResponse,
    TransportClosedError,
)

from conftest import SUBAGENT_SCRIPT, call_within, read_fake_log

HANG = {"turns": [{"steps": [{"text": "working on it", "chunkSize": 4, "hang": True}]}, {"steps": [{"text": "done"}]}]}
MANY_CHUNKS = {"steps": [{"reasoning": "think " * 20, "text": "abcdefghij" * 50, "chunkSize": 1}]}


def event_types(ns):
    return [n.payload["event"]["type"] for n in ns if n.method == "session.event"]


# ---------------------------------------------------------------------------
# Public surface
# ---------------------------------------------------------------------------


def test_removed_helpers_are_gone():
    for name in ("notify", "next_request", "respond", "respond_error", "_requests"):
        assert not hasattr(HarnessClient, name), name
    assert not hasattr(deepseek_harness, "IncomingRequest")
    assert not hasattr(deepseek_harness.client, "IncomingRequest")
    assert not hasattr(deepseek_harness.models, "IncomingRequest")


def test_prompt_response_is_exactly_status_and_reason():
    r = SessionPromptResponse.model_validate({"status": "error", "reason": {"kind": "max-steps", "limit": 3}})
    assert r.status == "error" and r.reason.kind == "max-steps" and r.reason.limit == 3
    # Unknown kinds are kept and map to error.
    r = SessionPromptResponse.model_validate({"status": "error", "reason": {"kind": "new-kind", "extra": 1}})
    assert r.reason.kind == "new-kind" and r.reason.status == "error"
    assert r.reason.model_extra == {"extra": 1}
    with pytest.raises(ValueError):
        SessionPromptResponse.model_validate({"status": "ok", "reason": {"kind": "completed"}, "accepted": True})
    with pytest.raises(ValueError):
        SessionPromptResponse.model_validate({"status": "ok", "reason": {"kind": "aborted"}})
    with pytest.raises(ValueError):
        SessionPromptResponse.model_validate({"status": "finished", "reason": {"kind": "completed"}})


def test_error_classes_by_code():
    for code, prop, cls in [
        (-32001, "is_busy", deepseek_harness.SessionBusyError),
        (-32002, "is_not_initialized", deepseek_harness.NotInitializedError),
        (-32003, "is_shutting_down", deepseek_harness.ShuttingDownError),
        (-32004, "is_provider_unavailable", deepseek_harness.ProviderUnavailableError),
    ]:
        err = JsonRpcError.from_wire({"code": code, "message": "m", "data": {"kind": "k"}}, "session/prompt")
        assert type(err) is cls and isinstance(err, JsonRpcError) and isinstance(err, HarnessError)
        assert getattr(err, prop) is True
        assert err.code == code and err.message == "m" and err.kind == "k"
    plain = JsonRpcError.from_wire({"code": -32603, "message": "boom"})
    assert type(plain) is JsonRpcError and not plain.is_busy
    assert issubclass(RequestTimeoutError, TimeoutError)


# ---------------------------------------------------------------------------
# Settlement and ordering
# ---------------------------------------------------------------------------


def test_prompt_settles_with_the_response(backend):
    c = backend.initialized_client(MANY_CHUNKS)
    seen = []
    r = call_within(60, c.session_prompt, "s1", [{"type": "text", "text": "hi"}], seen.append)
    assert isinstance(r, SessionPromptResponse)
    assert (r.status, r.reason.kind) == ("ok", "completed")
    types = event_types(seen)
    assert types[0] == "user/message" and types[-1] == "turn/end"
    assert types.count("assistant/chunk") >= 500
    assert all(isinstance(n, Notification) for n in seen)
    seqs = [n.payload["event"]["seq"] for n in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_every_notification_before_the_response_reaches_the_callback(backend):
    c = backend.initialized_client(MANY_CHUNKS)
    for i in range(3):
        sub = c.subscribe_notifications()
        seen = []
        call_within(60, c.session_prompt, f"order-{i}", "go", seen.append)
        # The subscription was filled by the reader before the response was routed, so it
        # holds exactly what the reader saw; the callback must have had all of it already.
        from_reader = sub.drain()
        sub.close()
        assert len(from_reader) > 500
        assert seen == from_reader
        assert seen[-1].payload["event"]["type"] == "turn/end"


def test_callbacks_run_on_the_callers_thread(backend):
    c = backend.initialized_client(request_timeout_seconds=60)
    threads = set()
    r = c.session_prompt("t", "hi", lambda n: threads.add(threading.current_thread()))
    assert r.status == "ok"
    assert threads == {threading.current_thread()}


def test_lazy_validation_of_notifications(backend):
    c = backend.initialized_client()
    seen = []
    call_within(60, c.session_prompt, "lazy", "hi", seen.append)
    ev = seen[-1].event
    assert ev is not None and ev.type == "turn/end" and ev.seq == seen[-1].payload["event"]["seq"]
    assert seen[-1].session_id == "lazy"


# ---------------------------------------------------------------------------
# Concurrency
# ---------------------------------------------------------------------------


def test_twenty_threads_on_twenty_sessions(backend):
    script = {"steps": [{"text": "parallel " * 8, "chunkSize": 4, "delayMs": 5}]}
    c = backend.initialized_client(script)
    results, seen, errors = {}, {}, []
    barrier = threading.Barrier(20)

    def worker(i):
        sid = f"par-{i}"
        mine = []
        try:
            barrier.wait(30)
            results[sid] = c.session_prompt(sid, f"hello {i}", mine.append)
            seen[sid] = mine
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert errors == []
    assert len(results) == 20
    for sid, r in results.items():
        assert r.status == "ok"
        assert seen[sid] and all(n.payload["sessionId"] == sid for n in seen[sid])
        assert event_types(seen[sid])[-1] == "turn/end"


def test_overlapping_prompt_is_busy(backend):
    c = backend.initialized_client(HANG)
    started = threading.Event()
    box = {}

    def first():
        box["r"] = c.session_prompt("busy", "one", lambda n: started.set())

    t = threading.Thread(target=first)
    t.start()
    assert started.wait(30)
    second_seen = []
    with pytest.raises(SessionBusyError) as info:
        call_within(30, c.session_prompt, "busy", "two", second_seen.append)
    assert info.value.is_busy and info.value.code == -32001
    assert second_seen == []
    assert call_within(30, c.session_cancel, "busy") is True
    t.join(30)
    assert box["r"].status == "aborted" and box["r"].reason.kind == "aborted"
    # reusable after settlement (turn 1 of the script completes)
    assert call_within(30, c.session_prompt, "busy", "three").status == "ok"


# ---------------------------------------------------------------------------
# Cancel
# ---------------------------------------------------------------------------


def test_cancel_from_another_thread(backend):
    c = backend.initialized_client(HANG)
    started = threading.Event()
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", c.session_prompt("c1", "go", lambda n: started.set())))
    t.start()
    assert started.wait(30)
    assert call_within(30, c.session_cancel, "c1") is True
    t.join(30)
    assert not t.is_alive()
    assert (box["r"].status, box["r"].reason.kind) == ("aborted", "aborted")
    assert call_within(30, c.session_cancel, "c1") is False
    assert call_within(30, c.session_cancel, "never-seen") is False


def test_cancel_from_the_callback(backend):
    c = backend.initialized_client(HANG)
    calls = []

    def on_notification(n):
        if not calls and n.payload.get("event", {}).get("type") == "assistant/chunk":
            calls.append(c.session_cancel("cb"))

    r = call_within(30, c.session_prompt, "cb", "go", on_notification)
    assert (r.status, r.reason.kind) == ("aborted", "aborted")
    assert calls == [True]


def test_raising_callback_cancels_the_turn_and_reraises(backend):
    c = backend.initialized_client(HANG)
    sub = c.subscribe_session_notifications("boom")

    class Boom(Exception):
        pass

    def on_notification(n):
        if n.payload.get("event", {}).get("type") == "assistant/chunk":
            raise Boom("callback failed")

    with pytest.raises(Boom):
        call_within(30, c.session_prompt, "boom", "go", on_notification)
    ends = [n.payload["event"]["data"] for n in sub.drain() if n.event_type == "turn/end"]
    assert ends and ends[-1]["reason"]["kind"] == "aborted"
    # The client is still usable, and the session is idle again (not busy).
    r = call_within(30, c.session_prompt, "boom", "again")
    assert r.status == "ok"


def test_request_timeout_cancels_the_prompt(backend, fake_log):
    env = {"FAKE_BRIDGE_LOG": str(fake_log)}
    # The 1 s default is for the prompt under test; a bridge starting on a busy machine may take
    # longer than that to answer initialize, which is not what this test is about.
    c = backend.client(env=env, request_timeout_seconds=1.0).start()
    c.initialize(backend.workspace, "scripted", backend.script(HANG), timeout=60)
    with pytest.raises(RequestTimeoutError) as info:
        call_within(60, c.session_prompt, "slow", "go")
    assert isinstance(info.value, TimeoutError) and info.value.method == "session/prompt"
    # The turn was cancelled on the bridge: the session accepts a new prompt (not busy).
    r = call_within(60, c.session_prompt, "slow", "again", timeout=30)
    assert r.status == "ok"
    if not backend.is_real:
        methods = [(f["method"], f["sessionId"]) for f in read_fake_log(fake_log)[1:]]
        assert ("session/cancel", "slow") in methods


# ---------------------------------------------------------------------------
# Subscriptions and subagents
# ---------------------------------------------------------------------------


def test_session_subscription_follows_children(backend):
    c = backend.initialized_client(SUBAGENT_SCRIPT)
    parent_sub = c.subscribe_session_notifications("parent")
    other_sub = c.subscribe_session_notifications("other")
    methods_sub = c.subscribe_notifications("subagent.started")
    seen = []
    r = call_within(60, c.session_prompt, "parent", "go", seen.append)
    assert r.status == "ok"
    got = parent_sub.drain()
    started = [n for n in got if n.method == "subagent.started"]
    assert len(started) == 1
    child = started[0].payload["childSessionId"]
    assert child != "parent"
    assert any(n.method == "session.event" and n.payload["sessionId"] == child for n in got)
    assert any(n.method == "subagent.finished" for n in got)
    assert got == seen  # the prompt's callback follows children too
    assert other_sub.drain() == []
    assert [n.method for n in methods_sub.drain()] == ["subagent.started"]
    for s in (parent_sub, other_sub, methods_sub):
        s.close()


def test_subscription_ends_when_the_client_closes(fake):
    c = fake.initialized_client()
    sub = c.subscribe_notifications()
    c.close()
    assert call_within(10, lambda: list(sub)) == []
    assert sub.closed


# ---------------------------------------------------------------------------
# Protocol errors from the bridge
# ---------------------------------------------------------------------------


def test_not_initialized(backend):
    c = backend.client().start()
    with pytest.raises(NotInitializedError) as info:
        call_within(30, c.session_prompt, "x", "hi")
    assert info.value.is_not_initialized


def test_provider_unavailable(real, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    c = real.client().start()
    with pytest.raises(deepseek_harness.ProviderUnavailableError) as info:
        call_within(30, c.initialize, real.workspace, "deepseek", "deepseek-chat")
    assert info.value.is_provider_unavailable and "DEEPSEEK_API_KEY" in info.value.message


def test_unknown_provider_is_invalid_params(backend):
    c = backend.client().start()
    with pytest.raises(deepseek_harness.InvalidParamsError):
        call_within(30, c.initialize, backend.workspace, "no-such-provider", "x")


# ---------------------------------------------------------------------------
# Faults (fake bridge)
# ---------------------------------------------------------------------------


def test_server_request_frames_are_dropped(fake):
    c = fake.initialized_client(env={"FAKE_BRIDGE_MODE": "server-request"})
    for i in range(2):
        seen = []
        r = call_within(30, c.session_prompt, f"sr{i}", "hi", seen.append)
        # The spoofed frames reused the prompt's id; the real response still settles it.
        assert (r.status, r.reason.kind) == ("ok", "completed")
        assert seen and all(n.event_type != "spoofed" for n in seen)
        assert event_types(seen)[-1] == "turn/end"
    # the same with a subscription open (the reader decodes every frame itself then)
    sub = c.subscribe_notifications()
    seen = []
    assert call_within(30, c.session_prompt, "sr-sub", "hi", seen.append).status == "ok"
    assert all(n.event_type != "spoofed" for n in seen + sub.drain())
    sub.close()


def test_garbage_frames_are_ignored(fake):
    c = fake.initialized_client(env={"FAKE_BRIDGE_MODE": "garbage"})
    assert call_within(30, c.session_prompt, "g", "hi").status == "ok"
    assert call_within(30, c.session_prompt, "g", "hi").status == "ok"


def test_bridge_death_fails_the_pending_request_at_once(fake):
    c = fake.initialized_client(env={"FAKE_BRIDGE_MODE": "die-mid-request"})
    seen = []
    with pytest.raises(TransportClosedError) as info:
        call_within(30, c.session_prompt, "dies", "hi", seen.append)
    err = info.value
    assert err.exit_code == 3
    assert any("crashing on purpose" in line for line in err.stderr_tail)
    assert "crashing on purpose" in str(err)
    # Later requests fail at once too.
    with pytest.raises(TransportClosedError):
        call_within(10, c.session_cancel, "dies")
    call_within(30, c.close)


def test_bridge_failing_at_start(fake):
    c = fake.client(env={"FAKE_BRIDGE_MODE": "exit-at-start"}).start()
    with pytest.raises(TransportClosedError) as info:
        call_within(30, c.initialize, fake.workspace, "scripted", "demo")
    assert info.value.exit_code == 1
    assert any("fatal start-up error" in line for line in info.value.stderr_tail)


def test_slow_request_times_out(fake):
    c = fake.client(env={"FAKE_BRIDGE_MODE": "slow-initialize", "FAKE_BRIDGE_DELAY": "30"}, shutdown_timeout_seconds=1.0).start()
    with pytest.raises(RequestTimeoutError) as info:
        call_within(30, c.initialize, fake.workspace, "scripted", "demo", timeout=0.5)
    assert info.value.method == "initialize"
    call_within(30, c.close)


def test_close_when_the_bridge_ignores_sigterm(fake):
    c = fake.initialized_client(env={"FAKE_BRIDGE_MODE": "ignore-sigterm"}, shutdown_timeout_seconds=0.5)
    proc = c.process
    call_within(60, c.close)
    assert proc.returncode == -signal.SIGKILL
    call_within(10, c.close)  # idempotent


def test_close_is_graceful_and_idempotent(backend):
    c = backend.initialized_client()
    proc = c.process
    call_within(60, c.close)
    assert proc.returncode == 0
    call_within(10, c.close)
    with pytest.raises(TransportClosedError):
        c.session_prompt("after", "hi")


def test_close_during_a_turn_settles_it(backend):
    c = backend.initialized_client(HANG)
    started = threading.Event()
    box = {}

    def run():
        try:
            box["r"] = c.session_prompt("closing", "go", lambda n: started.set())
        except BaseException as exc:  # noqa: BLE001
            box["e"] = exc

    t = threading.Thread(target=run)
    t.start()
    assert started.wait(30)
    call_within(60, c.close)
    t.join(30)
    assert not t.is_alive()
    # shutdown aborts the turn and answers it first
    assert box.get("r") is not None and box["r"].status == "aborted", box


def test_sixteen_mib_frame(fake):
    c = fake.initialized_client({"steps": [{"text": "big"}]}, env={"FAKE_BRIDGE_MODE": "big-frame"})
    seen = []
    call_within(60, c.session_prompt, "big", "hi", seen.append)
    messages = [n for n in seen if n.event_type == "assistant/message"]
    assert len(messages[-1].payload["event"]["data"]["content"][0]["text"]) == 16 * 1024 * 1024 + 1


def test_protocol_version_mismatch(fake):
    c = fake.client(env={"FAKE_BRIDGE_MODE": "protocol-2"}).start()
    with pytest.raises(ProtocolError, match="protocol version 2"):
        call_within(30, c.initialize, fake.workspace, "scripted", "demo")


def test_server_version_mismatch_warns(fake):
    c = fake.client(env={"FAKE_BRIDGE_SERVER_VERSION": "9.9.9"}).start()
    with pytest.warns(RuntimeWarning, match="9.9.9"):
        c.initialize(fake.workspace, "scripted", "demo")


def test_malformed_prompt_result(fake):
    c = fake.initialized_client(env={"FAKE_BRIDGE_MODE": "bad-prompt-result"})
    with pytest.raises(ProtocolError):
        call_within(30, c.session_prompt, "bad", "hi")


def test_child_environment_and_arguments(fake, fake_log, monkeypatch):
    monkeypatch.setenv("NODE_OPTIONS", "--max-old-space-size=16")
    c = fake.client(env={"FAKE_BRIDGE_LOG": str(fake_log)}, log_level="debug", max_steps=7,
                    permission_mode="read-only").start()
    c.initialize(fake.workspace, "scripted", "demo")
    first = read_fake_log(fake_log)[0]
    assert first["node_options"] is None
    assert first["argv"] == ["--stdio", "--session-root", str(fake.session_root), "--log-level", "debug",
                             "--max-steps", "7", "--permission-mode", "read-only"]


def test_stderr_is_forwarded_to_logging(fake, caplog):
    caplog.set_level(logging.DEBUG, logger="deepseek_harness.bridge")
    c = fake.initialized_client()
    call_within(30, c.close)
    records = [r for r in caplog.records if r.name == "deepseek_harness.bridge"]
    assert any("fake bridge ready" in r.getMessage() and r.levelno == logging.INFO for r in records)
    assert any("fake bridge ready" in line for line in c.stderr_tail)


def test_requests_before_start_fail_clearly():
    c = HarnessClient("/nonexistent/harness-bridge")
    with pytest.raises(HarnessError, match="not started"):
        c.session_prompt("x", "hi")
    c.close()


def test_atexit_reaps_a_forgotten_child(fake, fake_log):
    import subprocess
    import sys
    import time

    code = (
        "import sys\n"
        "from deepseek_harness import HarnessClient\n"
        "c = HarnessClient(sys.argv[1], env={'FAKE_BRIDGE_LOG': sys.argv[2]}).start()\n"
        "c.initialize(sys.argv[3], 'scripted', 'demo')\n"
        "print('started', flush=True)\n"  # exits without close()
    )
    run = subprocess.run([sys.executable, "-c", code, str(fake.bridge), str(fake_log), str(fake.workspace)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "started" in run.stdout, run.stderr
    pid = read_fake_log(fake_log)[0]["pid"]
    # The atexit hook closed the bridge before the interpreter exited: it is gone (or a zombie
    # of the exited parent, already reaped by init).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the bridge (pid {pid}) outlived the Python process that forgot to close it")
    methods = [f["method"] for f in read_fake_log(fake_log)[1:]]
    assert methods[-1] == "shutdown"
