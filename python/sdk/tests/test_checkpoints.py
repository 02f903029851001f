"""Checkpoints and rewind through the SDK against the real binary: Session.checkpoints() and
Session.rewind() typed, blocking and asyncio — a plain folder (bash's changes reported as not
restored), a git work tree (all restored), a conflict then force, the fork-before-rewind
pattern and undoing a rewind (its own checkpoint, rewound with conversation=False), and the
errors (unknown turn, busy session, conversation on a rewind's checkpoint)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest

from deepseek_harness import (CheckpointEvent, CheckpointInfo, InvalidParamsError, RewindResult, SessionBusyError,
                              SessionRewoundEvent, UnrestoredTurn)

from conftest import run_async

SCRIPT: Dict[str, Any] = {"turns": [
    {"steps": [{"toolCalls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "new\n"}},
                              {"name": "write_file", "arguments": {"path": "keep.txt", "content": "turn1\n"}}]},
               {"text": "one"}]},
    {"steps": [{"toolCalls": [{"name": "edit_file", "arguments": {"path": "keep.txt", "oldText": "turn1", "newText": "turn2"}}]},
               {"text": "two"}]},
    {"steps": [{"toolCalls": [{"name": "bash", "arguments": {"command": "rm doomed.txt && echo made > made.txt"}}]},
               {"text": "three"}]},
    {"steps": [{"text": "slow", "delayMs": 300}]},
]}


def prepare(workspace: Path, git: bool) -> None:
    (workspace / "keep.txt").write_text("original\n")
    (workspace / "doomed.txt").write_text("doomed\n")
    if git:
        env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
            subprocess.run(["git", *args], cwd=workspace, env=env, check=True)


def read(workspace: Path, name: str) -> Any:
    p = workspace / name
    return p.read_text() if p.exists() else None


def test_plain_folder_checkpoints_and_rewind(real):
    prepare(real.workspace, git=False)
    h = real.harness(SCRIPT)
    s = h.start_session("s")
    results = [s.run("go on") for _ in range(3)]
    assert all(r.status == "ok" for r in results)
    # Each turn's events hold its checkpoint just before its turn/end; history() types it.
    assert [[e.type for e in r.events][-2:] for r in results] == [["checkpoint", "turn/end"]] * 3
    typed = [e for e in s.history() if isinstance(e, CheckpointEvent)]
    assert [(c.turn, c.kind, c.files, c.uncovered) for c in typed] == [(1, "files", 2, None), (2, "files", 1, None), (3, "files", 0, ["bash"])]
    cps = s.checkpoints()
    assert all(isinstance(c, CheckpointInfo) for c in cps)
    assert [(c.turn, c.kind, c.files, c.uncovered) for c in cps] == [(1, "files", 2, []), (2, "files", 1, []), (3, "files", 0, ["bash"])]

    result = s.rewind(2)
    assert isinstance(result, RewindResult)
    assert (result.restored, result.removed, result.conflicts) == (["keep.txt"], [], [])
    assert result.unrestored == [UnrestoredTurn(turn=3, tools=["bash"], paths=[])]
    assert read(real.workspace, "keep.txt") == "turn1\n"
    # bash's changes stay: a files checkpoint does not cover them, and the answer said so.
    assert read(real.workspace, "doomed.txt") is None and read(real.workspace, "made.txt") == "made\n"
    # The history no longer holds turns 2 and 3: neither do the checkpoints. The rewind changed
    # a file: it has a checkpoint of its own, turn 4.
    assert [(c.turn, c.rewind) for c in s.checkpoints()] == [(1, None), (4, 2)]
    assert [e.turn for e in s.history() if isinstance(e, SessionRewoundEvent)] == [2]
    with pytest.raises(InvalidParamsError):
        s.rewind(3)


def test_fork_before_rewind_keeps_a_way_back(real):
    prepare(real.workspace, git=True)
    h = real.harness(SCRIPT)
    s = h.start_session("s")
    for _ in range(3):
        s.run("go on")
    assert [c.kind for c in s.checkpoints()] == ["git", "git", "git"]
    kept = s.fork()  # the whole history, under a new id
    result = s.rewind(1)
    assert sorted(result.restored) == ["doomed.txt", "keep.txt"] and sorted(result.removed) == ["made.txt", "new.txt"]
    assert (read(real.workspace, "keep.txt"), read(real.workspace, "doomed.txt")) == ("original\n", "doomed\n")
    # The rewind's own checkpoint: all that is left of the history.
    assert s.checkpoints() == [CheckpointInfo(turn=4, kind="files", files=4, rewind=1)]
    # The fork still holds the three turns (and their checkpoint events).
    assert [c.turn for c in kept.checkpoints()] == [1, 2, 3]
    # Undo the rewind: its turn, files only; every file is as it was after turn 3.
    with pytest.raises(InvalidParamsError):
        s.rewind(4)  # a rewind has no conversation of its own
    undo = s.rewind(4, conversation=False)
    assert (sorted(undo.restored), undo.removed, undo.conflicts) == (["keep.txt", "made.txt", "new.txt"], ["doomed.txt"], [])
    assert [read(real.workspace, f) for f in ("keep.txt", "new.txt", "made.txt", "doomed.txt")] == ["turn2\n", "new\n", "made\n", None]
    # ... and the conversation goes on in the fork.
    assert kept.run("go on").status == "ok"


def test_async_conflict_force_and_busy(real):
    prepare(real.workspace, git=False)

    async def scenario() -> None:
        async with real.async_harness(SCRIPT) as h:
            s = h.start_session("s")
            await s.run("go on")
            await s.run("go on")
            (real.workspace / "keep.txt").write_text("mine\n")
            first = await s.rewind(1, conversation=False)
            assert (first.restored, first.removed, first.conflicts) == ([], ["new.txt"], ["keep.txt"])
            assert read(real.workspace, "keep.txt") == "mine\n"
            forced = await s.rewind(1, force=True)
            assert forced.restored == ["keep.txt"] and read(real.workspace, "keep.txt") == "original\n"
            # Turns 1–3 are cut (3: the first rewind's own checkpoint); the second rewind's is turn 4.
            assert await s.checkpoints() == [CheckpointInfo(turn=4, kind="files", files=1, rewind=1)]
            with pytest.raises(InvalidParamsError):
                await s.rewind(5)

    run_async(scenario())


def test_the_client_method(real):
    prepare(real.workspace, git=False)
    c = real.initialized_client(SCRIPT)
    c.session_prompt("s", "go on")
    result = c.session_rewind("s", 1, conversation=False)
    assert isinstance(result, RewindResult)
    assert (result.restored, result.removed) == (["keep.txt"], ["new.txt"])


def test_a_busy_session_is_not_rewound(real):
    prepare(real.workspace, git=False)
    h = real.harness({"turns": [SCRIPT["turns"][0], SCRIPT["turns"][3]]})
    s = h.start_session("s")
    s.run("go on")
    turn = s.stream("slow")
    next(iter(turn))  # the turn has started
    with pytest.raises(SessionBusyError):
        s.rewind(1)
    for _ in turn:
        pass
    assert s.rewind(1).removed == ["new.txt"]
