"""The normalization rules of snapshots/README.md, in Python (the TypeScript twin is
test/support/snapshot-rules.ts). Also reads and writes the snapshot files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ID_KEYS = {"id", "callId", "sessionId", "parentSessionId", "childSessionId", "agentId", "requestId", "hookId"}


def normalize_stream(frames: List[Any], workspace: str, session_root: str) -> List[Any]:
    """Normalizes frames (notifications, then the response) as one stream."""
    ids: Dict[str, str] = {}

    def visit(value: Any, key: Any = None) -> Any:
        if isinstance(value, str):
            if key in ID_KEYS:
                if value not in ids:
                    ids[value] = f"<id:{len(ids) + 1}>"
                return ids[value]
            return value.replace(workspace, "<workspace>").replace(session_root, "<session-root>")
        if key == "time":
            return "<time>"
        if key == "durationMs":
            return "<duration>"
        if isinstance(value, list):
            return [visit(item) for item in value]
        if isinstance(value, dict):
            return {k: visit(v, k) for k, v in value.items()}
        return value

    return [visit(frame) for frame in frames]


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def read_snapshot(directory: Path) -> Tuple[List[Any], Any]:
    lines = (directory / "notifications.jsonl").read_text(encoding="utf-8").splitlines()
    notifications = [json.loads(line) for line in lines if line.strip()]
    response = json.loads((directory / "response.json").read_text(encoding="utf-8"))
    return notifications, response


def write_snapshot(directory: Path, notifications: List[Any], response: Any) -> None:
    (directory / "notifications.jsonl").write_text("".join(dumps(n) + "\n" for n in notifications), encoding="utf-8")
    (directory / "response.json").write_text(json.dumps(response, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def diff(expected: List[Any], actual: List[Any]) -> str:
    """A unified diff of two frame lists, one compact JSON line per frame."""
    import difflib

    return "\n".join(
        difflib.unified_diff([dumps(e) for e in expected], [dumps(a) for a in actual], "expected", "actual", lineterm="", n=1)
    )


def sdk_answers(scenario: Dict[str, Any], before_answer: Optional[Callable[[], None]] = None) -> Dict[str, Any]:
    """The SDK's harness options for a scenario's ``initialize`` additions (by option name), with
    its ``clientTools`` as ``@tool`` functions answering what ``toolResults`` says and its
    ``permission`` as the ``can_use_tool`` callback (the SDK answers them as the TypeScript runner
    answers over the wire). ``before_answer`` runs in each tool before it returns (a
    ``steerOn: tool/request`` scenario sends its steer there, so it is on the wire before the
    tool's result, as the TypeScript runner sends it). Imports the SDK only when called."""
    import dataclasses

    import pydantic

    from deepseek_harness import Allow, Deny, PermissionRequestEvent, PermissionResult, tool

    names = {"contextWindow": "context_window", "compactAt": "compact_at", "approvals": "approvals", "prices": "prices"}
    initialize = dict(scenario.get("initialize", {}))
    options: Dict[str, Any] = {}
    tools = []
    for spec in initialize.pop("clientTools", []):
        answer = scenario["toolResults"][spec["name"]]
        if answer.get("isError"):
            raise ValueError("a scenario's error answer would need a tool that raises: not supported here yet")
        text = "".join(block["text"] for block in answer["content"])

        def answer_it(text: str = text) -> str:
            if before_answer is not None:
                before_answer()
            return text

        made = tool(name=spec["name"], description=spec["description"], read_only=spec.get("readOnly", False))(answer_it)
        # The scenario's schema as it is, and arguments taken whatever they are (the function needs none).
        anything = pydantic.create_model(f"{spec['name']}_any", __config__=pydantic.ConfigDict(extra="allow"))
        tools.append(dataclasses.replace(made, parameters=spec["parameters"], arguments_model=anything))
    if tools:
        options["tools"] = tools
    initialize.pop("hooks", None)  # asked for by the Hooks made from the scenario's "hooks" below
    options.update({names[k]: v for k, v in initialize.items()})
    permission = scenario.get("permission")
    if permission is not None:
        def can_use_tool(request: PermissionRequestEvent) -> PermissionResult:
            if permission["decision"] == "allow":
                return Allow(arguments=permission.get("arguments"))
            return Deny(permission.get("message", ""))

        options["can_use_tool"] = can_use_tool
    if scenario.get("hooks"):
        options["hooks"] = sdk_hooks(scenario["hooks"])
    return options


def sdk_hooks(answers: Dict[str, List[Dict[str, Any]]]) -> Any:
    """A scenario's ``hooks`` (by hook name, the wire answers in order; past the list: ``{}``)
    as the SDK's ``Hooks``, each function returning the next answer in the SDK's types."""
    from deepseek_harness import Hooks, PostToolAnswer, PromptSubmitAnswer, StopAnswer

    def answering(name: str) -> Any:
        queue = list(answers.get(name, []))

        def answer(event: Any) -> Any:
            given = queue.pop(0) if queue else {}
            if not given:
                return None
            if name == "prompt-submit":
                return PromptSubmitAnswer(block=given.get("block"), context=given.get("context"))
            if name == "post-tool":
                content = given.get("content")
                return PostToolAnswer(content="".join(b["text"] for b in content) if content is not None else None,
                                      is_error=given.get("isError"), context=given.get("context"))
            return StopAnswer(continue_with=given.get("continue"))

        return answer if name in answers else None

    return Hooks(prompt_submit=answering("prompt-submit"), post_tool=answering("post-tool"), stop=answering("stop"))
