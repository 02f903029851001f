#!/usr/bin/env python3
"""The demo: one turn of the offline demo model through the Python SDK.

Spawns bin/harness-bridge via DeepSeekHarness(provider="scripted", model="demo") in a scratch
workspace holding a copy of this README, prints every event as it arrives, then the TurnResult.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python" / "sdk" / "src"))

from deepseek_harness import DeepSeekHarness, Notification  # noqa: E402

streaming = ""  # the chunk type being printed inline, "" when none


def show(n: Notification) -> None:
    """Prints a notification the moment it arrives: chunks inline, other events one a line."""
    global streaming
    p = n.payload
    if n.method != "session.event":
        if streaming:
            print()
        streaming = ""
        print(f"  {n.method}: child {p.get('childSessionId')}")
        return
    event, who = p["event"], ("" if "." not in p["sessionId"] else "  (subagent) ")
    data = event["data"]
    if event["type"] == "assistant/chunk":
        chunk = data["chunk"]
        if streaming != chunk["type"]:
            if streaming:
                print()
            print(f"  {who}[{event['seq']}] {chunk['type']} ▸ ", end="")
        streaming = chunk["type"]
        print(chunk.get("text", chunk.get("argumentsDelta", "")), end="", flush=True)
        return
    if streaming:
        print()
    streaming = ""
    if event["type"] == "tool/result":
        detail = f"{data['name']} → {data['content'][0]['text'][:60]!r}…"
    elif event["type"] == "assistant/message":
        detail = f"finishReason={data['finishReason']}: " + " + ".join(b["type"] for b in data["content"])
    elif event["type"] == "turn/end":
        detail = str(data["reason"])
    else:
        detail = str(data)[:70]
    print(f"  {who}[{event['seq']}] {event['type']}: {detail}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="harness-demo-") as workspace:
        shutil.copy(ROOT / "README.md", Path(workspace) / "README.md")
        with DeepSeekHarness(provider="scripted", model="demo", cwd=workspace, session_root=Path(workspace) / ".sessions") as harness:
            info = harness.initialize_response
            print(f"harness-bridge {info.server_info.version if info else '?'} (protocol {info.protocol_version if info else '?'}), offline demo model\n")
            result = harness.run("Show me what you can do.", on_notification=show)
    print("\nTurnResult")
    print(f"  status:         {result.status}")
    print(f"  reason:         {result.reason.model_dump(by_alias=True, exclude_none=True)}")
    print(f"  usage:          {result.usage.model_dump(by_alias=True, exclude_none=True) if result.usage else None}")
    print(f"  events:         {len(result.events)} durable, {len(result.notifications)} notifications")
    print(f"  final_response: {result.final_response}")


if __name__ == "__main__":
    main()
