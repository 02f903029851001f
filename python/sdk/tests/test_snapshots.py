"""The scripted snapshots (snapshots/scripted/*), seen through the SDK: the notifications a
turn hands to the caller and its {status, reason}, normalized by snapshots/README.md's rules,
must equal the files the TypeScript suite checks too. ``UPDATE_SNAPSHOTS=1`` is honoured by
the TypeScript suite only: the files have one writer."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from deepseek_harness import DeepSeekHarness
from deepseek_harness._internal.connection import outcome, send

from conftest import REPO_ROOT, real_bridge_or_skip

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from snapshot_rules import diff, normalize_stream, read_snapshot, sdk_answers  # noqa: E402

SCENARIOS = sorted(p for p in (REPO_ROOT / "snapshots" / "scripted").iterdir() if p.is_dir())


@pytest.mark.parametrize("directory", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scripted_scenario_matches_snapshot(directory: Path, tmp_path: Path) -> None:
    bridge = real_bridge_or_skip()
    scenario: Dict[str, Any] = json.loads((directory / "scenario.json").read_text(encoding="utf-8"))
    tmp_path = tmp_path.resolve()
    workspace, session_root = tmp_path / "workspace", tmp_path / "sessions"
    workspace.mkdir()
    for name, content in scenario.get("files", {}).items():
        (workspace / name).write_text(content, encoding="utf-8")
    model = scenario.get("model", "demo")
    if "script" in scenario:
        model = str(tmp_path / "script.json")
        Path(model).write_text(json.dumps(scenario["script"]), encoding="utf-8")

    # The scenario's further initialize params, by their option names; its client tools and
    # approvals as the SDK's tools= and can_use_tool= answering what toolResults / permission say.
    # steerOn (tool/request only here): the steer is sent from the tool, before its result, and
    # not waited for there (its answer comes once it is recorded, after the result).
    steer_on = scenario.get("steerOn")
    steers: List[Any] = []
    holder: Dict[str, Any] = {}

    def send_steer() -> None:
        if steer_on and not steers:
            params = {"sessionId": "snap", "contentBlocks": [{"type": "text", "text": steer_on["text"]}]}
            steers.append(send(holder["harness"].client, "session/steer", params))

    if steer_on:
        assert steer_on["event"] == "tool/request", "the SDK runner steers on tool/request only"
    extra = sdk_answers(scenario, send_steer if steer_on else None)
    with DeepSeekHarness(provider="scripted", model=model, cwd=str(workspace), session_root=str(session_root), bridge_bin=str(bridge), request_timeout_seconds=60, **extra) as harness:
        holder["harness"] = harness
        cancelled = threading.Event()

        def watch(n: Any) -> None:
            if scenario.get("cancelOn") and not cancelled.is_set() and n.method == "session.event" and n.payload["event"]["type"] == scenario["cancelOn"]:
                cancelled.set()
                harness.cancel("snap")  # from the callback: callbacks run on the caller's thread

        result = harness.run(scenario["prompt"], session_id="snap", on_notification=watch, max_cost_usd=scenario.get("maxCostUsd"))
        for pending in steers:
            assert outcome(harness.client, pending.inbox.get(time.monotonic() + 30), "session/steer") == {"steered": True}

    frames = [{"jsonrpc": "2.0", "method": n.method, "params": n.payload} for n in result.notifications]
    response = {"status": result.status, "reason": result.reason.model_dump(by_alias=True, exclude_none=True)}
    normalized = normalize_stream([*frames, response], str(workspace), str(session_root))
    expected_notifications, expected_response = read_snapshot(directory)
    assert normalized[-1] == expected_response
    assert normalized[:-1] == expected_notifications, diff(expected_notifications, normalized[:-1])
