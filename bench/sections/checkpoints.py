"""Checkpoints of a git work tree of 10 000 files: what a turn that runs `bash` pays for its
git checkpoint (the snapshot before its first writing tool: git lists the files, the bridge
stats each, hashes and keeps what changed; and the look at the end of the turn), measured from
the turn's own event times, against (a) `git status --porcelain` on the same tree (git's own
stat of every file against its index, fsmonitor and the untracked cache off: the same work),
and (b) the turn's tool time (`tool/result` `durationMs`). The first turn of a session keeps
what is not already in the repository (the store is empty): its time, against `git status`,
and the bytes its checkpoint store holds after it (apparent and on disk), against the tree's,
reported apart."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

from common import Context, Count, Result, median
from session_logs import read_until, request

COUNTS = {
    "files": Count(quick=300, full=10_000),
    "turns": Count(quick=2, full=9),
}

GIT_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
TURN = {"turns": [{"steps": [{"toolCalls": [{"name": "bash", "arguments": {"command": "date +%s%N > d0/changed.txt"}}]},
                             {"text": "done"}]}]}


def make_tree(ws: Path, files: int) -> None:
    ws.mkdir(parents=True)
    for i in range(files):
        d = ws / f"d{i // 100}"
        if i % 100 == 0:
            d.mkdir()
        (d / f"f{i}.txt").write_text(f"file {i}\n" * 8)
    (ws / "turn.json").write_text(json.dumps(TURN))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "tree"]):
        subprocess.run(["git", *args], cwd=ws, env=GIT_ENV, check=True, stdout=subprocess.DEVNULL)


def git_status(ws: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "status", "--porcelain"],
                   cwd=ws, env={**GIT_ENV, "GIT_OPTIONAL_LOCKS": "0"}, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def folder_bytes(top: Path, skip: str = "") -> Dict[str, int]:
    """Bytes of the files under ``top`` (folders named ``skip`` left out), and bytes on disk
    (allocated blocks, folders included)."""
    apparent = disk = 0
    for dirpath, dirs, names in os.walk(top):
        if skip in dirs:
            dirs.remove(skip)
        disk += os.lstat(dirpath).st_blocks * 512
        for n in names:
            st = os.lstat(os.path.join(dirpath, n))
            apparent += st.st_size
            disk += st.st_blocks * 512
    return {"apparent": apparent, "disk": disk}


def store_bytes(root: Path) -> Dict[str, int]:
    """The session's checkpoint store (`<root>/<workspace>/cp.checkpoints`)."""
    stores = list(root.glob("*/cp.checkpoints"))
    assert len(stores) == 1, stores
    return folder_bytes(stores[0])


def tree_bytes(ws: Path) -> Dict[str, int]:
    """The work tree outside .git."""
    return folder_bytes(ws, skip=".git")


def turn_costs(events: List[Dict[str, Any]]) -> Dict[int, Dict[str, float]]:
    """Per turn, from the logged events' times (ms): the snapshot before the tool (its call's
    `assistant/message` → the tool's start, `tool/result` time − `durationMs`), the look at the
    end (the last `assistant/message` → `checkpoint`), and the tool's own time."""
    out: Dict[int, Dict[str, float]] = {}
    call_at: Dict[int, int] = {}
    last_message: Dict[int, int] = {}
    turn = 0
    for e in events:
        t, data = e["type"], e["data"]
        if t == "turn/start":
            turn = data["turn"]
        elif t == "assistant/message":
            last_message[turn] = e["time"]
            if any(b["type"] == "tool-call" for b in data["content"]):
                call_at[turn] = e["time"]
        elif t == "tool/result":
            out.setdefault(turn, {})["before"] = (e["time"] - data["durationMs"]) - call_at[turn]
            out[turn]["tool"] = data["durationMs"]
        elif t == "checkpoint":
            assert data["kind"] == "git", data
            out[turn]["after"] = e["time"] - last_message[turn]
    return out


def run(ctx: Context) -> Result:
    files = ctx.count(COUNTS["files"])
    base = ctx.tmp / "checkpoints"
    ws, root = base / "ws", base / "root"
    make_tree(ws, files)
    (ws / ".git" / "info" / "exclude").write_text("turn.json\n")
    proc = subprocess.Popen([str(ctx.bin), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin
    proc.stdin.write(request(1, "initialize", {"cwd": str(ws), "provider": "scripted", "model": "turn.json"}))
    proc.stdin.flush()
    read_until(proc, 1)
    status: List[float] = []
    stored: Dict[str, int] = {}
    rid = 1
    for _ in range(ctx.count(COUNTS["turns"])):
        status.append(git_status(ws))
        rid += 1
        proc.stdin.write(request(rid, "session/prompt", {"sessionId": "cp", "contentBlocks": [{"type": "text", "text": "go"}]}))
        proc.stdin.flush()
        if read_until(proc, rid)["result"]["status"] != "ok":
            raise RuntimeError("the checkpoint turn failed")
        if not stored:
            stored = store_bytes(root)
    tree = tree_bytes(ws)
    rid += 1
    proc.stdin.write(request(rid, "session/read", {"sessionId": "cp", "limit": 1000}))
    proc.stdin.flush()
    events = read_until(proc, rid)["result"]["events"]
    proc.stdin.close()
    proc.wait()
    costs = turn_costs(events)
    first = costs[1]
    later = [costs[t] for t in sorted(costs) if t > 1]
    git_ms = median(status) * 1000
    per_turn = median([c["before"] + c["after"] for c in later])
    tool = median([c["tool"] for c in later])
    res = Result(f"Checkpoints: a bash turn in a git work tree of {files:,} files (median of {len(later)} turns after the first)",
                 ["turn", "snapshot before ms", "look after ms", "checkpoint ms", "tool ms", "git status ms"])
    res.row("first (empty store)", f"{first['before']:.0f}", f"{first['after']:.0f}", f"{first['before'] + first['after']:.0f}",
            f"{first['tool']:.0f}", f"{git_ms:.0f}")
    res.row("later", f"{median([c['before'] for c in later]):.0f}", f"{median([c['after'] for c in later]):.0f}", f"{per_turn:.0f}",
            f"{tool:.0f}", f"{git_ms:.0f}")
    judged = None if ctx.quick else True
    # A turn walks the tree twice (the snapshot before its first writing tool, the look at its
    # end), each a listing and a stat of every file; git status walks it once.
    ratio_git = per_turn / 2 / git_ms if git_ms > 0 else float("nan")
    res.goal(f"each of a later turn's two walks (listing + stat of every file) within 4x `git status` on the same {files:,} files",
             f"{ratio_git:.2f}x", None if judged is None else ratio_git <= 4)
    res.goal("checkpoint cost per turn against the turn's tool time (bash; reported)", f"{per_turn / tool if tool else float('nan'):.2f}x", None)
    first_ms = first["before"] + first["after"]
    res.goal(f"first turn's checkpoint of {files:,} files against `git status` (reported)",
             f"{first_ms / git_ms if git_ms > 0 else float('nan'):.1f}x ({first_ms:.0f} ms)", None)
    res.goal(f"checkpoint store after the first turn, against the tree's {tree['apparent']:,} B ({tree['disk']:,} B on disk; reported)",
             f"{stored['apparent']:,} B = {stored['apparent'] / tree['apparent']:.3f}x; on disk {stored['disk']:,} B = {stored['disk'] / tree['disk']:.3f}x", None)
    res.notes.append("From the logged events' times (ms): snapshot before = the tool-call message -> the tool's start "
                     "(tool/result time - durationMs); look after = the turn's last message -> its checkpoint event. "
                     "git status runs between the turns (interleaved), with fsmonitor and the untracked cache off.")
    return res
