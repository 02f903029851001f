"""The session viewer (``harness-bridge view``) in a real browser: Debian's headless chromium,
driven over WebDriver (tests/webdriver.py).

What a user relies on: the list shows the workspace's sessions; a session shows as a timeline
with its tool calls, their results and the diff of an edit; a turn run by another bridge process
appears while it runs, without a reload; and whatever a log holds is shown as text, never run
(an XSS payload in a tool result and in an edit stays text, and no script of it runs).

Skipped, with the reason, where chromium or chromedriver is missing; CI installs both and sets
HARNESS_REQUIRE_BROWSER=1, which turns the skip into a failure. The first test saves a
screenshot in its temporary folder; with HARNESS_VIEWER_SCREENSHOT=docs/viewer.png it also
writes it there (how the README's picture is made: scripts/viewer-screenshot.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from conftest import REPO_ROOT, real_bridge_or_skip
from deepseek_harness import DeepSeekHarness, tool
from webdriver import WebDriver, find_browser, until

XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "</script><script>window.__xss=2</script>"
EVIL_FILE = f"notes for the model\n{XSS_IMG}\n{XSS_SCRIPT}\n"

FIRST_TURN = {
    "steps": [
        {"reasoning": "The file says world; the user wants there.", "text": "Let me look first.",
         "toolCalls": [{"id": "call-read", "name": "read_file", "arguments": {"path": "evil.html"}}],
         "usage": {"inputTokens": 1200, "outputTokens": 40, "cacheHitTokens": 1024, "costUsd": 0.000321}},
        {"text": "Now the edit.",
         "toolCalls": [{"id": "call-edit", "name": "edit_file",
                        "arguments": {"path": "hello.py", "oldText": "print('hello world')", "newText": "print('hello there')\nprint('bye')"}}]},
        {"text": "Done: hello.py now says hello there."},
    ]
}
SECOND_TURN = {
    "steps": [
        {"text": "Asking the gate.", "toolCalls": [{"id": "call-gate", "name": "gate", "arguments": {}}]},
        {"text": "the live answer arrived"},
    ]
}


def _require_browser() -> None:
    why = find_browser()
    if why is None:
        return
    if os.environ.get("HARNESS_REQUIRE_BROWSER") == "1":
        pytest.fail(f"HARNESS_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    _require_browser()
    driver = WebDriver(tmp_path / "browser")
    try:
        yield driver
    finally:
        driver.close()


class Workspace:
    """A workspace, its session root, a scripted model and the viewer serving them."""

    def __init__(self, tmp_path: Path, bridge: Path) -> None:
        self.bridge = bridge
        self.dir = tmp_path / "workspace"
        self.dir.mkdir()
        self.root = tmp_path / "sessions"
        (self.dir / "evil.html").write_text(EVIL_FILE)
        (self.dir / "hello.py").write_text("import sys\nprint('hello world')\n")
        self.script = tmp_path / "script.json"
        self.script.write_text(json.dumps({"turns": [FIRST_TURN, SECOND_TURN]}))
        self.viewer = subprocess.Popen([str(bridge), "view", "--session-root", str(self.root), "--workspace", str(self.dir)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.viewer.stdout is not None
        self.url = self.viewer.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), (self.url, self.viewer.stderr.read() if self.viewer.stderr else "")

    def harness(self, **kwargs: Any) -> DeepSeekHarness:
        return DeepSeekHarness(provider="scripted", model=str(self.script), cwd=self.dir, bridge_bin=self.bridge,
                               session_root=self.root, permission_mode="workspace-write", shutdown_timeout_seconds=10.0, **kwargs)

    def close(self) -> int:
        self.viewer.send_signal(signal.SIGTERM)
        try:
            return self.viewer.wait(30)
        finally:
            if self.viewer.poll() is None:
                self.viewer.kill()


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    w = Workspace(tmp_path, real_bridge_or_skip())
    try:
        yield w
    finally:
        assert w.close() == 0, "the viewer must exit 0 on SIGTERM"


def _first_turn(ws: Workspace, session_id: str = "demo") -> None:
    h = ws.harness()
    try:
        result = h.start_session(session_id).run("Change hello.py to say hello there; evil.html has notes.")
        assert result.status == "ok", result
    finally:
        h.close()


def _workspace_folder(ws: Workspace) -> Path:
    """The session root's folder of this workspace's logs (the one holding the first turn's log;
    the root holds other folders too, such as the bridges' `activity/`)."""
    return next(ws.root.glob("*/other.jsonl")).parent


def test_list_timeline_tool_calls_edit_diff_and_xss_as_text(ws: Workspace, browser: WebDriver, tmp_path: Path) -> None:
    _first_turn(ws)
    browser.get(ws.url)
    browser.wait_for("return document.querySelector('#sessions li[data-session-id=\"demo\"]')", "the session in the list")
    assert "Change hello.py to say hello there" in browser.js("return document.getElementById('sessions').innerText")
    browser.js("document.querySelector('#sessions li[data-session-id=\"demo\"] a').click()")
    browser.wait_for("return document.querySelector('#timeline [data-type=\"turn/end\"]')", "the end of the turn")

    calls = browser.js("return [...document.querySelectorAll('#timeline .tool-call .tool-name')].map(e => e.textContent)")
    assert [c.split()[2] for c in calls] == ["read_file", "edit_file"]
    # The read's result is the evil file, shown as text; the edit's result too.
    results = browser.js("return [...document.querySelectorAll('#timeline .tool-call .tool-result pre')].map(e => e.textContent)")
    assert XSS_IMG in results[0] and XSS_SCRIPT in results[0]
    assert "hello.py" in results[1]
    # The diff of the edit, computed from its arguments: the old line out, the new ones in, in order.
    diff = browser.js("return [...document.querySelectorAll('#timeline pre.diff span')].map(e => [e.className, e.textContent])")
    assert diff == [["del", "- print('hello world')"], ["add", "+ print('hello there')"], ["add", "+ print('bye')"]]
    # Reasoning is there but collapsed; usage and cost per step are shown.
    assert browser.js("const d = document.querySelector('#timeline details.reasoning'); return d && !d.open && d.textContent.includes('the user wants there')")
    text = browser.text()
    assert "The file says world" not in text  # collapsed: not rendered as visible text
    assert "cache hit 1024" in text and "$0.000321" in text

    # Nothing from the log ran: no flag set, no element made from its markup, only the viewer's script.
    assert browser.js("return [window.__xss === undefined, document.querySelectorAll('#timeline img, #timeline script').length, document.scripts.length]") == [True, 0, 1]
    assert XSS_IMG in text and XSS_SCRIPT in text

    shot = tmp_path / "viewer.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    target = os.environ.get("HARNESS_VIEWER_SCREENSHOT")
    if target:
        shutil.copyfile(shot, REPO_ROOT / target if not os.path.isabs(target) else target)


def test_a_turn_run_by_another_process_appears_live_without_a_reload(ws: Workspace, browser: WebDriver) -> None:
    _first_turn(ws)
    browser.get(f"{ws.url}#demo")
    browser.wait_for("return document.querySelector('#timeline [data-type=\"turn/end\"]')", "the first turn")
    browser.js("window.__sameDocument = 42")

    gate_open = threading.Event()

    @tool
    def gate() -> str:
        """Waits until the test has seen the running turn in the browser."""
        assert gate_open.wait(60), "the test never opened the gate"
        return "gate opened"

    h = ws.harness(tools=["read_file", "edit_file", "write_file", gate])
    box: Dict[str, Any] = {}

    def second_turn() -> None:
        try:
            box["result"] = h.session("demo").run("Now ask the gate.")
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    runner = threading.Thread(target=second_turn, daemon=True)
    runner.start()
    try:
        # While the turn is blocked in the gate: its prompt and the pending call are on the page already.
        browser.wait_for(
            "const t = document.getElementById('timeline').innerText;"
            "return t.includes('Now ask the gate.') && t.includes('tool call: gate') && t.includes('running…')",
            "the running second turn")
        assert browser.js("return document.querySelectorAll('#timeline [data-type=\"turn/end\"]').length") == 1
    finally:
        gate_open.set()
        runner.join(60)
        h.close()
    assert "error" not in box, box.get("error")
    assert box["result"].status == "ok"
    browser.wait_for("return document.querySelectorAll('#timeline [data-type=\"turn/end\"]').length === 2", "the end of the second turn")
    text = browser.js("return document.getElementById('timeline').innerText")
    assert "the live answer arrived" in text and "gate opened" in text
    assert browser.js("return window.__sameDocument") == 42, "the page was reloaded"
    # Each event once: following by cursor repeats nothing.
    seqs: List[str] = browser.js("return [...document.querySelectorAll('#timeline [data-seq]')].map(e => e.dataset.seq)")
    assert len(seqs) == len(set(seqs))


def test_unknown_and_damaged_lines_show_as_text(ws: Workspace, browser: WebDriver) -> None:
    """Hook, steer, checkpoint and rewind events have cards of their own; events this viewer does
    not know (from a newer bridge) are shown generically, and a damaged line is a note: the rest
    of the log still shows. Whatever a field holds, it is text."""
    _first_turn(ws, "other")  # makes the workspace folder
    folder = _workspace_folder(ws)
    header = {"type": "session-header", "version": 1, "sessionId": "hand", "workspace": str(ws.dir), "createdAt": 1, "provider": "scripted", "model": "x"}
    lines = [
        json.dumps(header),
        json.dumps({"type": "user/message", "seq": 1, "time": 2, "data": {"id": "m", "content": [{"type": "text", "text": "hand-written"}]}}),
        json.dumps({"type": "hook/request", "seq": 2, "time": 3, "data": {"hook": "pre-tool", "note": XSS_SCRIPT}}),
        '{"type":"hook/decision", this is not json ' + XSS_IMG,
        json.dumps({"type": "permission/request", "seq": 3, "time": 4, "data": {"requestId": "r", "callId": "c", "name": "write_file", "arguments": {"path": "x", "content": XSS_IMG}}}),
        json.dumps({"type": "permission/decision", "seq": 4, "time": 5, "data": {"requestId": "r", "decision": "deny", "message": "not today"}}),
        json.dumps({"type": "context/compacted", "seq": 5, "time": 6, "data": {"summary": "s", "tokensBefore": 900, "tokensAfter": 100, "keptFromSeq": 1, "turn": 1, "trigger": "auto"}}),
        json.dumps({"type": "future/thing", "seq": 6, "time": 7, "data": {"x": XSS_SCRIPT}}),
        json.dumps({"type": "user/steer", "seq": 7, "time": 8, "data": {"id": "s", "content": [{"type": "text", "text": "also lint " + XSS_IMG}]}}),
        json.dumps({"type": "hook/decision", "seq": 8, "time": 9, "data": {"hookId": "h", "hook": "stop", "continue": "the tests fail"}}),
        json.dumps({"type": "checkpoint", "seq": 9, "time": 10, "data": {"turn": 1, "files": 2, "kind": "files", "uncovered": ["bash"]}}),
        json.dumps({"type": "session/rewound", "seq": 10, "time": 11, "data": {"turn": 1}}),
    ]
    (folder / "hand.jsonl").write_text("".join(f"{line}\n" for line in lines))
    browser.get(f"{ws.url}#hand")
    browser.wait_for("return document.querySelector('#timeline [data-type=\"session/rewound\"]')", "the last event")
    text = browser.js("return document.getElementById('timeline').innerText")
    for expected in ["hook asked: pre-tool", "unreadable line", "approval asked: write_file", "approval: deny", "not today", "900 → 100 tokens", "future/thing",
                     "user (steering the turn)", "also lint", "hook answered: stop", "the tests fail",
                     "checkpoint of turn 1 (files): 2 file(s)", "not covered: bash", "rewound to before turn 1"]:
        assert expected in text, expected
    assert XSS_SCRIPT in text and XSS_IMG in text
    assert browser.js("return [window.__xss === undefined, document.querySelectorAll('#timeline img, #timeline script').length]") == [True, 0]


def test_a_header_or_event_whose_fields_cannot_become_text_does_not_stop_the_timeline(ws: Workspace, browser: WebDriver) -> None:
    """A log's values are JSON, but not every JSON value becomes text: String() of an object whose
    toString is no function throws. Such a value in the header, or in a field an event's card
    names, is shown as a note; the timeline goes on with the events after it."""
    _first_turn(ws, "other")  # makes the workspace folder
    folder = _workspace_folder(ws)
    hostile = {"toString": 1, "valueOf": 2}
    header = {"type": "session-header", "version": 1, "sessionId": hostile, "workspace": str(ws.dir), "createdAt": hostile,
              "provider": hostile, "model": hostile}
    lines = [
        json.dumps(header),
        json.dumps({"type": "user/message", "seq": 1, "time": 2, "data": {"id": "m", "content": [{"type": "text", "text": "before"}]}}),
        json.dumps({"type": "turn/start", "seq": 2, "time": 3, "data": {"turn": hostile}}),
        json.dumps({"type": "tool/result", "seq": 3, "time": 4, "data": {"callId": "c", "name": hostile, "content": [], "isError": False}}),
        json.dumps({"type": "context/compacted", "seq": 4, "time": 5, "data": {"summary": "s", "tokensBefore": 900, "tokensAfter": 100, "keptFromSeq": 1, "turn": 1, "trigger": "auto"}}),
    ]
    (folder / "hostile.jsonl").write_text("".join(f"{line}\n" for line in lines))
    browser.get(f"{ws.url}#hostile")
    browser.wait_for("return document.querySelector('#timeline [data-type=\"context/compacted\"]')", "the last event")
    text = browser.js("return document.getElementById('timeline').innerText")
    assert "before" in text and "900 → 100 tokens" in text
    assert browser.js("return document.getElementById('session-head').innerText").strip() != ""


def test_a_huge_log_opens_at_its_tail_and_can_show_everything(ws: Workspace, browser: WebDriver) -> None:
    _first_turn(ws, "other")  # makes the workspace folder
    folder = _workspace_folder(ws)
    header = {"type": "session-header", "version": 1, "sessionId": "huge", "workspace": str(ws.dir), "createdAt": 1, "provider": "scripted", "model": "x"}
    lines = [json.dumps(header),
             json.dumps({"type": "user/message", "seq": 1, "time": 2, "data": {"id": "m", "content": [{"type": "text", "text": "the very first prompt"}]}})]
    for seq in range(2, 130):  # ~6.4 MiB: more than the tail the page opens with
        lines.append(json.dumps({"type": "tool/result", "seq": seq, "time": 3, "data": {"callId": f"c{seq}", "name": "bash",
                                                                                       "content": [{"type": "text", "text": f"output {seq} " + "z" * 50_000}], "isError": False, "durationMs": 1}}))
    (folder / "huge.jsonl").write_text("".join(f"{line}\n" for line in lines))
    browser.get(f"{ws.url}#huge")
    browser.wait_for("return document.getElementById('timeline').innerText.includes('output 129 ')", "the last event")
    text = browser.js("return document.getElementById('timeline').innerText")
    assert "MiB of earlier events are not shown" in text and "the very first prompt" not in text
    browser.js("document.querySelector('#timeline button').click()")
    browser.wait_for("const t = document.getElementById('timeline').innerText; return t.includes('the very first prompt') && t.includes('output 129 ')",
                     "the whole log")
    assert "MiB of earlier events are not shown" not in browser.js("return document.getElementById('timeline').innerText")
