"""Load: 50 concurrent sessions × 20 turns through one bridge, from 50 threads of the sync SDK.

Every turn settles ``ok``; each :class:`TurnResult` holds only its own session's notifications,
its own prompt (the first event's content) and the answer its turn number scripts; ``seq``
strictly increases across a session's 20 turns; and each session's durable log holds exactly
the durable events its turns reported, once each.
"""

from __future__ import annotations

import json
import threading
from typing import Dict, List

from conftest import call_within

SESSIONS = 50
TURNS = 20


def answer(k: int) -> str:
    return f"answer {k}: " + "streamed in small chunks " * 6


# The n-th prompt of a session plays turns[n]: a tool call on every fifth turn; every answer is
# streamed 4 characters at a time (~40 notifications a turn, ~40 000 in all).
SCRIPT = {
    "turns": [
        {"steps": (
            [{"text": f"checking {k}", "toolCalls": [{"id": f"read-{k}", "name": "read_file", "arguments": {"path": "README.md"}}]},
             {"text": answer(k), "chunkSize": 4}]
            if k % 5 == 0 else [{"reasoning": f"turn {k}", "text": answer(k), "chunkSize": 4}]
        )}
        for k in range(TURNS)
    ]
}


def test_fifty_sessions_times_twenty_turns(real):
    h = real.harness(SCRIPT)
    call_within(60, h.start)
    failures: List[str] = []
    results: Dict[str, list] = {}

    def worker(i: int) -> None:
        sid = f"load-{i:02d}"
        session = h.start_session(sid)
        mine = results.setdefault(sid, [])
        try:
            for k in range(TURNS):
                prompt = f"prompt {i}/{k}"
                r = session.run(prompt)
                mine.append(r)
                if (r.status, r.final_response) != ("ok", answer(k)):
                    failures.append(f"{sid} turn {k}: {r.status} {r.reason} {r.final_response!r}")
                strangers = [n for n in r.notifications if n.session_id != sid]
                if strangers:
                    failures.append(f"{sid} turn {k}: {len(strangers)} notifications of other sessions, e.g. {strangers[0].payload}")
                first = r.events[0]
                if first.type != "user/message" or first.data["content"] != [{"type": "text", "text": prompt}]:
                    failures.append(f"{sid} turn {k}: first event is not this prompt: {first}")
                if r.events[-1].type != "turn/end" or r.events[-1].data["turn"] != k + 1:
                    failures.append(f"{sid} turn {k}: last event {r.events[-1]}")
        except BaseException as exc:  # noqa: BLE001
            failures.append(f"{sid}: {exc!r}")

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)  # a hang guard, not a performance bound
    assert not [t for t in threads if t.is_alive()], "some sessions did not settle"
    assert failures == [], failures[:10]

    call_within(60, h.close)
    assert sorted(results) == [f"load-{i:02d}" for i in range(SESSIONS)]
    for sid, turns in results.items():
        assert len(turns) == TURNS, sid
        seqs = [n.payload["event"]["seq"] for r in turns for n in r.notifications if n.method == "session.event"]
        assert all(b > a for a, b in zip(seqs, seqs[1:])), f"{sid}: seq not strictly increasing"
        (path,) = list(real.session_root.rglob(f"{sid}.jsonl"))
        logged = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        reported = [e.model_dump() for r in turns for e in r.events]
        assert logged == reported, f"{sid}: the log differs from what the turns reported"
