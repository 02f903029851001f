#!/usr/bin/env python3
"""The demo: turns of the offline scripted model, streamed through bin/harness-bridge by the SDK.

1. The built-in demo turn (``provider="scripted", model="demo"``) with the blocking API,
   ``Session.stream``: reasoning and text appear as they arrive, the tool call and its result as
   they happen, then the TurnResult.
2. A turn that delegates to a subagent (the ``task`` tool), with the asyncio API,
   ``AsyncSession.stream``; the script is written to the scratch workspace (the built-in demo
   script has no subagent).

Both run in a scratch workspace holding a copy of the repository's README (so the demo's
read_file finds one wherever the demo is started); no network, no key. The scripted model streams
as fast as the pipe goes; ``HARNESS_SCRIPTED_DELAY_MS`` (default here: 30 ms before each chunk)
paces it so that a person sees the text arrive. ``--fast`` (or 0) turns the pacing off.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "sdk" / "src"))
# The SDK never runs a checkout's bin/harness-bridge on its own (an untrusted repository could
# plant one): the demo names the binary it just built.
os.environ.setdefault("HARNESS_BRIDGE_BIN", str(ROOT / "bin" / "harness-bridge"))
# Each line as it is printed, also into a pipe: the point is to see the turn arrive.
sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]

# ~60 chunks in all: about 2 s of streaming, the whole demo well under 5 s.
PACE_MS = "0" if "--fast" in sys.argv[1:] else os.environ.get("HARNESS_SCRIPTED_DELAY_MS", "30")
PACED = {"HARNESS_SCRIPTED_DELAY_MS": PACE_MS}

from deepseek_harness import (  # noqa: E402
    AssistantMessageEvent,
    AsyncDeepSeekHarness,
    BaseSessionEvent,
    DeepSeekHarness,
    ReasoningDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDeltaEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnResult,
    UnknownEvent,
    UserMessageEvent,
)

# The subagent turn: the parent delegates, the child really runs glob, then both answer.
SUBAGENT_SCRIPT = {
    "turns": [{"steps": [
        {"reasoning": "Counting files is a self-contained job; a subagent can do it.",
         "text": "I'll hand this to a subagent.", "chunkSize": 12,
         "toolCalls": [{"name": "task", "arguments": {"prompt": "List the Markdown files here.", "description": "find docs"}}]},
        {"text": "The subagent found the Markdown files; see its answer above.", "chunkSize": 16},
    ]}],
    "subagent": {"steps": [
        {"text": "Looking with glob.", "toolCalls": [{"name": "glob", "arguments": {"pattern": "*.md"}}], "chunkSize": 8},
        {"text": "There is one Markdown file: README.md.", "chunkSize": 8},
    ]},
}


class Printer:
    """Prints stream items the moment they arrive: deltas inline, everything else one a line;
    a subagent's events are indented under the parent's."""

    def __init__(self, root_session: str) -> None:
        self.root = root_session
        self.inline: Optional[Tuple[str, str]] = None  # (kind, session) being printed inline

    def line(self, text: str, session: Any = None) -> None:
        self.end_inline()
        print(self.indent(session) + text)

    def indent(self, session: Any) -> str:
        return "  " if session in (None, self.root) else "  │   "

    def end_inline(self) -> None:
        if self.inline:
            print()
            self.inline = None

    def show(self, item: Any) -> None:
        if isinstance(item, (TextDeltaEvent, ReasoningDeltaEvent)):
            kind = "thinking" if isinstance(item, ReasoningDeltaEvent) else "assistant"
            if self.inline != (kind, item.session_id):
                self.end_inline()
                print(f"{self.indent(item.session_id)}{kind} ▸ ", end="")
                self.inline = (kind, item.session_id)
            print(item.text, end="", flush=True)
        elif isinstance(item, UserMessageEvent):
            self.line(f"user ▸ {item.text}", item.session_id)
        elif isinstance(item, AssistantMessageEvent):
            for call in item.tool_calls:
                self.line(f"tool call ▸ {call.name} {json.dumps(call.arguments)}", item.session_id)
        elif isinstance(item, ToolResultEvent):
            first = item.text.strip().splitlines()[0] if item.text.strip() else ""
            status = "error" if item.is_error else "ok"
            self.line(f"tool result ◂ {item.name} {status} in {item.duration_ms} ms: {first[:60]!r}", item.session_id)
        elif isinstance(item, SubagentStartedEvent):
            self.line(f"subagent ▸ started {item.child_session_id}")
        elif isinstance(item, SubagentFinishedEvent):
            self.line(f"subagent ◂ {item.status} ({item.stop_reason.kind}): {item.text!r}")
        elif isinstance(item, TurnEndEvent):
            self.line(f"turn end ◂ {item.reason.kind}", item.session_id)
        elif isinstance(item, UnknownEvent):
            self.line(f"(unknown {item.method} {item.type or ''})", item.session_id)
        elif isinstance(item, TurnResult):
            self.end_inline()
            show_result(item)
        elif isinstance(item, BaseSessionEvent):
            pass  # turn/start, step/start and tool-call deltas: the lines above say it all


def show_result(result: TurnResult) -> None:
    print("\n  TurnResult")
    print(f"    status:         {result.status}")
    print(f"    reason:         {result.reason.model_dump(by_alias=True, exclude_none=True)}")
    print(f"    usage:          {result.usage.model_dump(by_alias=True, exclude_none=True) if result.usage else None}")
    print(f"    events:         {len(result.events)} durable, {len(result.notifications)} notifications")
    print(f"    final_response: {result.final_response}")


def blocking_demo(workspace: Path) -> None:
    with DeepSeekHarness(provider="scripted", model="demo", cwd=workspace, session_root=workspace / ".sessions",
                         env=PACED) as harness:
        info = harness.initialize_response
        assert info is not None
        print(f"harness-bridge {info.server_info.version} (protocol {info.protocol_version}), offline demo model\n")
        print("1. The built-in demo turn: Session.stream\n")
        session = harness.start_session()
        printer = Printer(session.id)
        for item in session.stream("Show me what you can do."):
            printer.show(item)


async def async_demo(workspace: Path) -> None:
    script = workspace / "subagent-demo.json"
    script.write_text(json.dumps(SUBAGENT_SCRIPT))
    print("\n2. A subagent at work: AsyncSession.stream\n")
    async with AsyncDeepSeekHarness(provider="scripted", model=str(script), cwd=workspace,
                                    session_root=workspace / ".sessions", env=PACED) as harness:
        session = harness.start_session()
        printer = Printer(session.id)
        async with session.stream("How many Markdown files are there?") as stream:
            async for item in stream:
                printer.show(item)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="harness-demo-") as tmp:
        workspace = Path(tmp)
        shutil.copy(ROOT / "README.md", workspace / "README.md")
        blocking_demo(workspace)
        asyncio.run(async_demo(workspace))


if __name__ == "__main__":
    main()
