"""Stream one turn as it happens: text as it arrives, each tool call and its result, then the
TurnResult. With DEEPSEEK_API_KEY set it talks to DeepSeek, otherwise to the offline demo model.

    HARNESS_BRIDGE_BIN=$PWD/bin/harness-bridge python examples/streaming.py "What is in README.md?"
"""

from __future__ import annotations

import os
import sys

from deepseek_harness import (
    AssistantMessageEvent,
    DeepSeekHarness,
    HarnessOptions,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolResultEvent,
    TurnResult,
)


def main(prompt: str) -> int:
    # The bridge's deepseek provider reads DEEPSEEK_API_KEY from the environment it inherits.
    online = bool(os.environ.get("DEEPSEEK_API_KEY"))
    model = HarnessOptions(provider="deepseek") if online else HarnessOptions(provider="scripted", model="demo")
    with DeepSeekHarness(options=model, cwd=".", max_steps=10) as harness:
        session = harness.start_session()
        for item in session.stream(prompt):
            if isinstance(item, ReasoningDeltaEvent):
                print(item.text, end="", flush=True, file=sys.stderr)  # thinking, off stdout
            elif isinstance(item, TextDeltaEvent):
                print(item.text, end="", flush=True)
            elif isinstance(item, AssistantMessageEvent):
                for call in item.tool_calls:
                    print(f"\n-> {call.name} {call.arguments}")
            elif isinstance(item, ToolResultEvent):
                print(f"<- {item.name}: {'error' if item.is_error else 'ok'} ({item.duration_ms} ms)")
            elif isinstance(item, TurnResult):
                print(f"\n[{item.status}: {item.reason.describe()}; usage {item.usage}]")
                return 0 if item.status == "ok" else 1
    return 1


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:]) or "What is in README.md?"))
