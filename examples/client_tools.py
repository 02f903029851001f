"""Give the agent a Python tool and approve its writes from the terminal.

``find_ticket`` reads this process's own "ticket database" (a dict): data the agent cannot
reach any other way. ``approvals="writes"`` makes every call that changes something (a file
write, bash) wait for ``ask_on_terminal``, which asks you on the terminal; when stdin is not a
terminal (CI, a pipe) it allows writes inside ``notes/`` and denies the rest, so the example
never blocks. With DEEPSEEK_API_KEY set it talks to DeepSeek; otherwise a small offline script
plays the model (it looks HB-7 up, then writes notes/HB-7.md).

    HARNESS_BRIDGE_BIN=$PWD/bin/harness-bridge python examples/client_tools.py "Summarize ticket HB-7 into notes/HB-7.md"
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict

from deepseek_harness import (
    Allow,
    DeepSeekHarness,
    Deny,
    HarnessOptions,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    PermissionResult,
    TextDeltaEvent,
    ToolRequestEvent,
    ToolResultEvent,
    TurnResult,
    tool,
)

TICKETS: Dict[str, Dict[str, str]] = {
    "HB-7": {"title": "Flaky cancel test on arm64", "status": "open", "owner": "dana",
             "body": "test_cancel times out once in 40 runs under qemu; the cancel reply races the prompt reply."},
    "HB-9": {"title": "README typo", "status": "closed", "owner": "lee", "body": "'recieve' in the install section."},
}


@tool(read_only=True)
def find_ticket(ticket_id: str) -> Dict[str, str]:
    """Looks a ticket up in the team's tracker and returns its title, status, owner and text.

    Args:
        ticket_id: the ticket's key, such as HB-7
    """
    ticket = TICKETS.get(ticket_id.strip().upper())
    if ticket is None:
        # An exception becomes an error result the model reads: "LookupError: ...".
        raise LookupError(f"no ticket {ticket_id!r}; known: {', '.join(sorted(TICKETS))}")
    return {"id": ticket_id, **ticket}


def ask_on_terminal(request: PermissionRequestEvent) -> PermissionResult:
    """The approval callback: runs on the harness's worker thread, so input() blocks nothing else."""
    path = str(request.arguments.get("path", ""))
    if not sys.stdin.isatty():
        # No one to ask: a fixed policy instead of a prompt that would never be answered.
        return Allow() if path.startswith("notes/") else Deny(f"not allowed to write {path or request.name} here")
    answer = input(f"\nallow {request.name} {json.dumps(request.arguments)[:200]}? [y/N/reason] ").strip()
    if answer.lower() in ("y", "yes"):
        return Allow()
    return Deny(answer if answer.lower() not in ("", "n", "no") else "the user said no")


def offline_script(folder: Path) -> str:
    """A scripted model turn (the offline stand-in for DeepSeek)."""
    steps = [
        {"text": "Looking the ticket up.", "toolCalls": [{"id": "c1", "name": "find_ticket", "arguments": {"ticket_id": "HB-7"}}]},
        {"text": "Writing the note.", "toolCalls": [{"id": "c2", "name": "write_file", "arguments": {
            "path": "notes/HB-7.md", "content": "# HB-7: Flaky cancel test on arm64\n\nOpen, owned by dana.\n"}}]},
        {"text": "Wrote notes/HB-7.md: HB-7 is an open flaky cancel test on arm64, owned by dana."},
    ]
    path = folder / "script.json"
    path.write_text(json.dumps({"turns": [{"steps": steps}]}))
    return str(path)


def main(prompt: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        online = bool(os.environ.get("DEEPSEEK_API_KEY"))
        model = HarnessOptions(provider="deepseek") if online else HarnessOptions(provider="scripted", model=offline_script(Path(tmp)))
        with DeepSeekHarness(options=model, cwd=".", max_steps=10, tools=[find_ticket],
                             approvals="writes", can_use_tool=ask_on_terminal) as harness:
            for item in harness.stream(prompt):
                if isinstance(item, TextDeltaEvent):
                    print(item.text, end="", flush=True)
                elif isinstance(item, ToolRequestEvent):
                    print(f"\n-> (Python) {item.name} {item.arguments}")
                elif isinstance(item, PermissionDecisionEvent):
                    print(f"\n   approval: {item.decision}{': ' + item.message if item.message else ''}")
                elif isinstance(item, ToolResultEvent):
                    print(f"<- {item.name}: {'error' if item.is_error else 'ok'}: {item.text[:120]}")
                elif isinstance(item, TurnResult):
                    print(f"\n[{item.status}: {item.reason.describe()}]")
                    return 0 if item.ok else 1
    return 1


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:]) or "Summarize ticket HB-7 into notes/HB-7.md"))
