"""asyncio: several sessions at once on one bridge, then a streamed turn the program stops
early (the turn is cancelled, the session goes on), all under one deadline. With
DEEPSEEK_API_KEY set it talks to DeepSeek, otherwise to the offline demo model.

    HARNESS_BRIDGE_BIN=$PWD/bin/harness-bridge python examples/async_sessions.py
"""

from __future__ import annotations

import asyncio
import os
import sys

from deepseek_harness import AsyncDeepSeekHarness, AsyncSession, HarnessOptions, TextDeltaEvent, TurnResult


async def first_words(session: AsyncSession, prompt: str, limit: int) -> str:
    """Streams a turn until `limit` characters of text have arrived, then stops: leaving the
    `async with` cancels the turn and returns once it has settled."""
    text = ""
    async with session.stream(prompt) as events:
        async for item in events:
            if isinstance(item, TextDeltaEvent):
                text += item.text
                if len(text) >= limit:
                    break
    return text[:limit]


async def main() -> int:
    online = bool(os.environ.get("DEEPSEEK_API_KEY"))
    model = HarnessOptions(provider="deepseek") if online else HarnessOptions(provider="scripted", model="demo")
    async with AsyncDeepSeekHarness(options=model, cwd=".", max_steps=10) as harness:
        # Three sessions, three turns in flight together: each result holds only its own events.
        prompts = ["What is in README.md?", "Name one file here.", "Say hello."]
        results: list[TurnResult] = await asyncio.gather(*(harness.start_session().run(p) for p in prompts))
        for prompt, result in zip(prompts, results):
            shown = repr(result.final_response[:60]) if result.ok else result.reason.describe()
            print(f"{prompt!r}: {result.status}, {len(result.events)} events: {shown}")

        session = harness.start_session()
        print(f"first words: {await first_words(session, 'Explain this repository', 20)!r}")
        again = await session.run("One more turn on the same session.")
        print(f"next turn on that session: {again.status}" + ("" if again.ok else f" ({again.reason.describe()})"))
        return 0 if all(r.status == "ok" for r in [*results, again]) else 1


if __name__ == "__main__":
    # One deadline for everything: on expiry, whatever turn is in flight is cancelled first.
    sys.exit(asyncio.run(asyncio.wait_for(main(), timeout=300)))
