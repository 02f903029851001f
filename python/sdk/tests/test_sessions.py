"""The sessions API through the SDK against the real binary: list_sessions, session(id) to
resume, Session.history (typed, paged), Session.fork then diverge and resume after a restart,
Session.delete of a busy session, Session.log_path — blocking and asyncio."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from deepseek_harness import (
    AssistantMessageEvent,
    InvalidParamsError,
    SessionBusyError,
    SessionInfo,
    StepStartEvent,
    TextDeltaEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
)

from conftest import run_async

SCRIPT: Dict[str, Any] = {"turns": [{"steps": [{"text": f"answer {n}"}]} for n in range(1, 6)]}


def users(events: List[Any]) -> List[str]:
    return [e.text for e in events if isinstance(e, UserMessageEvent)]


def test_list_history_and_log_path(real):
    h = real.harness(SCRIPT)
    alpha = h.start_session("alpha")
    first = alpha.run("Fix the parser:\n   it drops the last token")
    second = alpha.run("and add a test")
    h.start_session("beta").run("Rename the module")

    listed = h.list_sessions()
    assert [s.session_id for s in listed] == ["beta", "alpha"]
    assert all(isinstance(s, SessionInfo) for s in listed)
    assert listed[1].title == "Fix the parser: it drops the last token"
    assert listed[1].turns == 2 and listed[1].parent_session_id is None
    assert listed[1].updated_at >= listed[1].created_at

    durable = [e.seq for e in first.events + second.events]
    for page_size in (1, 3, 1000):
        history = list(alpha.history(page_size=page_size))
        assert [e.seq for e in history] == durable
    history = list(alpha.history(page_size=2))
    assert users(history) == ["Fix the parser:\n   it drops the last token", "and add a test"]
    assert [type(e) for e in history[:4]] == [UserMessageEvent, TurnStartEvent, StepStartEvent, AssistantMessageEvent]
    assert isinstance(history[-1], TurnEndEvent) and history[-1].session_id == "alpha"
    assert not any(isinstance(e, TextDeltaEvent) for e in history)
    assert [e.seq for e in alpha.history(after_seq=durable[3])] == durable[4:]

    # The log path is the bridge's: the file holds the header and exactly these events.
    path = alpha.log_path
    assert path is not None and path.is_file()
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["sessionId"] == "alpha"
    assert [json.loads(line)["seq"] for line in lines[1:]] == durable
    assert h.start_session("never-prompted").log_path == path.parent / "never-prompted.jsonl"


def test_fork_then_diverge_and_resume_after_a_restart(real):
    h = real.harness(SCRIPT)
    main = h.start_session("main")
    for text in ("one", "two", "three"):
        main.run(text)
    branch = main.fork(turn=1, new_id="branch")
    assert branch.session_id == "branch"
    assert users(list(branch.history())) == ["one"]
    branch.run("two, differently")
    main.run("four")
    anonymous = main.fork()
    assert len(anonymous.session_id) == 32
    assert users(list(anonymous.history())) == ["one", "two", "three", "four"]
    info = {s.session_id: s for s in h.list_sessions()}
    assert info["branch"].parent_session_id == "main" and info["branch"].origin == "fork" and info["branch"].turns == 2

    with pytest.raises(InvalidParamsError) as exists:
        main.fork(turn=1, new_id="branch")
    assert exists.value.kind == "session-exists"
    with pytest.raises(InvalidParamsError) as turn:
        main.fork(turn=9)
    assert turn.value.kind == "unknown-turn"
    h.close()

    again = real.harness(SCRIPT)
    resumed = again.session("branch")
    result = resumed.run("three, on the branch")
    assert result.final_response == "answer 3"
    assert [e.data["turn"] for e in result.events if e.type == "turn/start"] == [3]
    again.session("main").run("five")
    assert users(list(again.session("branch").history())) == ["one", "two, differently", "three, on the branch"]
    assert users(list(again.session("main").history())) == ["one", "two", "three", "four", "five"]
    with pytest.raises(InvalidParamsError) as unknown:
        again.session("ghost")
    assert unknown.value.kind == "unknown-session"
    with pytest.raises(InvalidParamsError):
        again.session("../main")


def test_delete_refuses_a_busy_session_then_deletes(real):
    script = {"turns": [{"steps": [{"text": "done"}]}, {"steps": [{"text": "thinking", "hang": True}]}]}
    h = real.harness(script)
    busy = h.start_session("busy")
    busy.run("one")
    path = busy.log_path
    assert path is not None and path.exists()
    stream = busy.stream("two")
    next(iter(stream))  # the turn is running
    with pytest.raises(SessionBusyError):
        busy.delete()
    stream.close()  # cancels the turn and waits for it to settle
    assert busy.delete() is True
    assert not path.exists()
    assert "busy" not in [s.session_id for s in h.list_sessions()]
    assert busy.delete() is False


def test_no_session_log_has_no_log_path_and_lists_from_memory(real):
    h = real.harness(SCRIPT, extra_args=["--no-session-log"])
    s = h.start_session("m")
    s.run("one")
    assert s.log_path is None
    assert [x.session_id for x in h.list_sessions()] == ["m"]
    assert users(list(s.fork(turn=1).history())) == ["one"]


def test_the_asyncio_twins(real):
    async def scenario() -> None:
        async with real.async_harness(SCRIPT) as h:
            main = h.start_session("amain")
            await main.run("one")
            await main.run("two")
            assert [s.session_id for s in await h.list_sessions()] == ["amain"]
            fork = await main.fork(turn=1, new_id="afork")
            await fork.run("other")
            seen = [e async for e in fork.history(page_size=1)]
            assert users(seen) == ["one", "other"]
            resumed = await h.session("amain")
            assert users([e async for e in resumed.history()]) == ["one", "two"]
            assert resumed.log_path is not None and resumed.log_path.is_file()
            with pytest.raises(InvalidParamsError):
                await h.session("nope")
            assert await fork.delete() is True
            assert [s.session_id for s in await h.list_sessions()] == ["amain"]

    run_async(scenario())


@pytest.mark.parametrize("name", ["ワーク 😀 space", "x" * 60 + "é", "plain-name_1.0"])
def test_log_path_matches_the_bridge_for_odd_workspace_names(real, tmp_path, name):
    from deepseek_harness import DeepSeekHarness

    workspace = tmp_path / name
    workspace.mkdir()
    state = tmp_path / "state"
    # No session_root: the bridge's default, $XDG_STATE_HOME/harness-bridge.
    h = DeepSeekHarness(provider="scripted", model=real.script(SCRIPT), cwd=workspace, bridge_bin=real.bridge,
                        env={"XDG_STATE_HOME": str(state), "HARNESS_SESSION_ROOT": ""},  # empty: unset
                        shutdown_timeout_seconds=5.0)
    real.opened.append(h)
    s = h.start_session("odd")
    s.run("hello")
    path = s.log_path
    assert path is not None and path.is_file(), (path, list(state.rglob("*.jsonl")))
    assert list(state.rglob("*.jsonl")) == [path]
