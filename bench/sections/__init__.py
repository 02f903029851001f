"""The benchmark sections, by the name `--only` takes, in the order a full run goes through them.

Each is a module with `COUNTS` (its counts, a `common.Count` each: tiny under --quick, real
otherwise) and `run(ctx: common.Context) -> common.Result`; its docstring says what it measures
against what, and is what `bench/run.py --help` lists."""

from __future__ import annotations

from types import ModuleType
from typing import Dict

from sections import (checkpoints, client_tools, cold, death, first_request, memory, peers, resume, roundtrip, search, search_ignore,
                      session_list, sessions, size, store, throughput)

SECTIONS: Dict[str, ModuleType] = {
    "cold": cold,
    "first-request": first_request,
    "throughput": throughput,
    "roundtrip": roundtrip,
    "peers": peers,
    "memory": memory,
    "size": size,
    "store": store,
    "death": death,
    "search": search,
    "search-ignore": search_ignore,
    "sessions": sessions,
    "resume": resume,
    "session-list": session_list,
    "client-tools": client_tools,
    "checkpoints": checkpoints,
}
