"""An MCP server's tools for the agent: a glossary server written with the official `mcp`
package (`pip install mcp`), in this same file, started by the bridge over stdio; the model
calls its tool as `mcp__glossary__lookup`. With DEEPSEEK_API_KEY set it talks to DeepSeek;
otherwise the offline scripted model plays a turn that calls the tool, which is how a test
of your own can drive an MCP server without a model.

    HARNESS_BRIDGE_BIN=$PWD/bin/harness-bridge python examples/mcp_glossary.py
"""

# needs mcp: pip install mcp

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from deepseek_harness import DeepSeekHarness, HarnessOptions

GLOSSARY = {"harness": "the bridge and its SDK", "bridge": "the single executable serving JSON-RPC over stdio"}


def serve() -> None:
    """The MCP server: the bridge runs this file with --serve and speaks MCP on its stdin/stdout."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("glossary")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(word: str) -> str:
        """Looks a word up in the team glossary."""
        return GLOSSARY.get(word.lower(), f"{word!r} is not in the glossary")

    server.run()  # stdio


# What the offline scripted model does: call the tool, then answer.
SCRIPT = {"turns": [{"steps": [
    {"text": "Let me look it up.", "toolCalls": [{"name": "mcp__glossary__lookup", "arguments": {"word": "harness"}}]},
    {"text": "The glossary's answer is the tool result above."},
]}]}


def main() -> int:
    servers = {"glossary": {"command": sys.executable, "args": [os.path.abspath(__file__), "--serve"]}}
    with tempfile.TemporaryDirectory() as scratch:
        if os.environ.get("DEEPSEEK_API_KEY"):
            options = HarnessOptions(provider="deepseek")
        else:
            script = Path(scratch) / "script.json"
            script.write_text(json.dumps(SCRIPT), encoding="utf-8")
            options = HarnessOptions(provider="scripted", model=str(script))
        with DeepSeekHarness(options=options, mcp_servers=servers, cwd=".") as harness:
            result = harness.run("What does 'harness' mean in our glossary? Use the glossary tool.")
            init = harness.initialize_response
            assert init is not None
            for status in init.mcp_servers or []:
                print(f"server {status.name}: {status.status}, tools {status.tools or status.error}")
    for event in result.events:
        if event.type == "tool/result":
            text = "".join(block.get("text", "") for block in event.data["content"])
            print(f"{event.data['name']} -> {text!r}")
    print(result.final_response if result.ok else f"{result.status}: {result.reason.describe()}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        sys.exit(main())
