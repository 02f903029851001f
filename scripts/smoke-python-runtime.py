#!/usr/bin/env python3
"""Keyless end-to-end smoke of the Python runtime, used by CI.

Starts a local DeepSeek-format HTTP server (scripts/fake_deepseek.py, standard library only),
points bin/harness-bridge (or $HARNESS_TEST_BINARY) at it, and through the SDK runs every scenario of
snapshots/deepseek/ (a text turn, a tool turn, a subagent turn, an error turn, a cancelled
turn, a client tool turn and approval turns, the SDK answering those through ``@tool`` and
``can_use_tool``); then raw-protocol passes without the SDK (a tool turn, a client tool turn, a
stop hook, a steered turn, a budget). Each stream and response is normalized by
snapshots/README.md's rules and compared with the files. Exits non-zero on any difference.

    python scripts/smoke-python-runtime.py            # compare
    python scripts/smoke-python-runtime.py --update   # rewrite the snapshot files
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "python" / "sdk" / "src"))

from fake_deepseek import FakeDeepSeek  # noqa: E402
from snapshot_rules import diff, normalize_stream, read_snapshot, sdk_answers, write_snapshot  # noqa: E402

from deepseek_harness import DeepSeekHarness  # noqa: E402

# HARNESS_TEST_BINARY runs the smoke through another build (scripts/test-arm64.sh: the arm64 one under qemu).
BINARY = Path(os.environ.get("HARNESS_TEST_BINARY") or ROOT / "bin" / "harness-bridge")
SCENARIOS = ROOT / "snapshots" / "deepseek"
SESSION_ID = "snap"


def bridge_env(server: FakeDeepSeek) -> Dict[str, str]:
    return {
        "DEEPSEEK_API_KEY": "sk-smoke-not-a-real-key",
        "DEEPSEEK_BASE_URL": server.base_url,
        "HARNESS_RETRY_BASE_MS": "10",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def prepare(scenario: Dict[str, Any], base: Path) -> Tuple[Path, Path]:
    workspace, session_root = base / "workspace", base / "sessions"
    workspace.mkdir()
    for name, content in scenario.get("files", {}).items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content, encoding="utf-8")
    return workspace, session_root


def run_with_sdk(scenario: Dict[str, Any], server: FakeDeepSeek, base: Path) -> Tuple[List[Any], Any, Path, Path]:
    workspace, session_root = prepare(scenario, base)
    with DeepSeekHarness(
        provider="deepseek",
        model=scenario["model"],
        cwd=str(workspace),
        session_root=str(session_root),
        env=bridge_env(server),
        bridge_bin=str(BINARY),
        request_timeout_seconds=60,
        **sdk_answers(scenario),  # client tools and approvals: the SDK answers them itself
    ) as harness:
        cancelled = threading.Event()

        def watch(n: Any) -> None:
            cancel_on = scenario.get("cancelOn")
            if cancel_on and not cancelled.is_set() and n.method == "session.event" and n.payload["event"]["type"] == cancel_on:
                cancelled.set()
                threading.Thread(target=harness.cancel, args=(SESSION_ID,), daemon=True).start()

        result = harness.run(scenario["prompt"], session_id=SESSION_ID, on_notification=watch, max_cost_usd=scenario.get("maxCostUsd"))
        frames = [{"jsonrpc": "2.0", "method": n.method, "params": n.payload} for n in result.notifications]
        response = {"status": result.status, "reason": result.reason.model_dump(by_alias=True, exclude_none=True)}
        if scenario.get("cancelOn") and not cancelled.is_set():
            raise AssertionError("the turn ended before the event to cancel on arrived")
    return frames, response, workspace, session_root


def run_raw(scenario: Dict[str, Any], server: FakeDeepSeek, base: Path) -> Tuple[List[Any], Any, Path, Path]:
    """The same scenario over the raw protocol: no SDK, just lines on a pipe."""
    workspace, session_root = prepare(scenario, base)
    env = {k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"}
    env.update(bridge_env(server))
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"cwd": str(workspace), "provider": "deepseek", "model": scenario["model"], **scenario.get("initialize", {})}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": SESSION_ID, "contentBlocks": [{"type": "text", "text": scenario["prompt"]}],
                                                                   **({"maxCostUsd": scenario["maxCostUsd"]} if "maxCostUsd" in scenario else {})}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
    ]
    # Written all at once: session/prompt waits for initialize, shutdown only for its turn.
    # shutdown would abort the turn, so it is sent after the prompt's response instead.
    proc = subprocess.Popen([str(BINARY), "--stdio", "--session-root", str(session_root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(("\n".join(json.dumps(r) for r in requests[:2]) + "\n").encode())
    proc.stdin.flush()
    frames: List[Any] = []
    response: Any = None
    next_id = 100
    hooks_asked: Dict[str, int] = {}
    steered = False

    def answer(method: str, params: Dict[str, Any]) -> None:
        nonlocal next_id
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n").encode())
        proc.stdin.flush()
        next_id += 1

    for line in proc.stdout:
        frame = json.loads(line)
        event = frame["params"].get("event", {}) if frame.get("method") == "session.event" else {}
        steer_on = scenario.get("steerOn")
        if steer_on and not steered and event.get("type") == steer_on["event"]:
            # Written before the answer to the same event (a tool result): the steer joins after it.
            steered = True
            answer("session/steer", {"sessionId": SESSION_ID, "contentBlocks": [{"type": "text", "text": steer_on["text"]}]})
        if event.get("type") == "tool/request" and event["data"]["name"] in scenario.get("toolResults", {}):
            answer("session/tool_result", {"sessionId": SESSION_ID, "callId": event["data"]["callId"], **scenario["toolResults"][event["data"]["name"]]})
        if event.get("type") == "permission/request" and "permission" in scenario:
            answer("session/permission", {"sessionId": SESSION_ID, "requestId": event["data"]["requestId"], **scenario["permission"]})
        if event.get("type") == "hook/request" and "hooks" in scenario:
            # The k-th request of a hook gets the k-th answer of its list; past the list, {}.
            hook = event["data"]["hook"]
            given = scenario["hooks"].get(hook, [])
            answer("session/hook", {"sessionId": SESSION_ID, "hookId": event["data"]["hookId"], **(given[hooks_asked.get(hook, 0)] if hooks_asked.get(hook, 0) < len(given) else {})})
            hooks_asked[hook] = hooks_asked.get(hook, 0) + 1
        if isinstance(frame.get("id"), int) and frame["id"] >= 100:
            assert "result" in frame, f"an answer was refused: {frame}"
            continue
        if frame.get("id") == 1:
            assert "result" in frame, f"initialize failed: {frame}"
        elif frame.get("id") == 2:
            assert "result" in frame, f"prompt failed: {frame}"
            response = frame["result"]
            proc.stdin.write((json.dumps(requests[2]) + "\n").encode())
            proc.stdin.close()
        elif frame.get("id") == 3:
            assert frame.get("result") == {}, f"shutdown answered {frame}"
        else:
            frames.append(frame)
    code = proc.wait(timeout=30)
    assert code == 0, f"the bridge exited with {code}"
    return frames, response, workspace, session_root


def check(name: str, directory: Path, run: Tuple[List[Any], Any, Path, Path], update: bool) -> bool:
    frames, response, workspace, session_root = run
    normalized = normalize_stream([*frames, response], str(workspace), str(session_root))
    notifications, normalized_response = normalized[:-1], normalized[-1]
    if update:
        write_snapshot(directory, notifications, normalized_response)
        print(f"updated  {name}")
        return True
    expected_notifications, expected_response = read_snapshot(directory)
    if notifications == expected_notifications and normalized_response == expected_response:
        print(f"ok       {name} ({len(notifications)} notifications, {response['status']})")
        return True
    print(f"DIFFERS  {name}")
    if normalized_response != expected_response:
        print(f"  response: expected {expected_response}, got {normalized_response}")
    if notifications != expected_notifications:
        print(diff(expected_notifications, notifications))
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite snapshots/deepseek/*/ from this run")
    args = parser.parse_args()
    if not BINARY.exists():
        print(f"{BINARY} is missing: run `npm run build` first", file=sys.stderr)
        return 2
    passed = True
    with FakeDeepSeek() as server, tempfile.TemporaryDirectory(prefix="hb-smoke-") as tmp:
        tmp_path = Path(tmp).resolve()
        for index, directory in enumerate(sorted(p for p in SCENARIOS.iterdir() if p.is_dir())):
            scenario = json.loads((directory / "scenario.json").read_text(encoding="utf-8"))
            if "steerOn" in scenario:
                # A steer must reach the bridge before the SDK's own answer to the same event, which
                # the SDK sends from its worker pool: no order to rely on. The raw pass below runs
                # it; the SDK's steer is tested in python/sdk/tests/test_turn_control.py.
                continue
            server.table = scenario["server"]
            base = tmp_path / f"sdk-{index}"
            base.mkdir()
            passed &= check(f"sdk  deepseek/{directory.name}", directory, run_with_sdk(scenario, server, base), args.update)
        # The raw wire: a tool turn, a client tool answered by hand (tool/request → session/tool_result)
        # a stop hook answered by hand (hook/request → session/hook), a steer written before the
        # tool result it must follow, and a budget.
        for raw_name in ("tool-turn", "client-tool-turn", "stop-hook-turn", "steered-turn", "budget-turn"):
            raw_dir = SCENARIOS / raw_name
            scenario = json.loads((raw_dir / "scenario.json").read_text(encoding="utf-8"))
            server.table = scenario["server"]
            base = tmp_path / f"raw-{raw_name}"
            base.mkdir()
            passed &= check(f"raw  deepseek/{raw_name}", raw_dir, run_raw(scenario, server, base), update=False)
        if server.problems:
            passed = False
            print("the fake DeepSeek server saw problems:\n  " + "\n  ".join(server.problems))
    if passed:
        print("smoke passed")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
