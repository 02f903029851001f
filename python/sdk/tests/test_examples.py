"""The examples cannot rot: every ```python block of the documents in DOCUMENTS and every
examples/*.py runs against the real binary, and all of them pass ``mypy --strict``.

Each block is a whole program, as a reader copies it: it runs on its own in a scratch workspace
(holding a README.md), with ``HARNESS_BRIDGE_BIN`` naming the built binary, in a Python
environment holding only what the README's Install section installs (tests/runtime_venv.py: the
SDK and pydantic, not the tests' pytest), so a program that needs more fails here as it fails
for the reader; one that needs a package more says so on a line of its own, ``# needs mcp: pip
install mcp``, and gets it. A block or example
that asks for DeepSeek talks to a local fake DeepSeek server (``DEEPSEEK_BASE_URL``, a fake
key) that answers every prompt with a short text; the examples run a second time without a
key, on the offline demo model, and a third time against a DeepSeek that refuses every request
(HTTP 401, as for a wrong key): a program that reached DeepSeek must then print the turn's
status and its reason (kind, HTTP status, message), what a user needs to see when it fails, and
in the answering run it must print the model's answer. A program that defines ``@tool``
functions must show each one called when it runs offline (a scripted model calling them), with
the tool's name in its output. A block that cannot run here says so in its first line,
``# not run by the tests: <reason>`` (the reason shows in the document and in the test's skip);
it is still type-checked.

New sections of the documents are picked up as they are written: nothing here lists blocks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, NamedTuple, Optional

import pytest

from conftest import REPO_ROOT, real_bridge_or_skip
from runtime_venv import RuntimeVenvs, needs_of

if not (REPO_ROOT / "examples").is_dir():
    # An sdist's tests, outside the repository: there are no documents or examples to run.
    pytest.skip("not in the repository: no README.md blocks or examples/ here", allow_module_level=True)

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from fake_deepseek import FakeDeepSeek  # noqa: E402

DOCUMENTS = [REPO_ROOT / "README.md", REPO_ROOT / "python" / "sdk" / "README.md"]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.py"))
NOT_RUN = re.compile(r"#\s*not run by the tests:\s*(\S.*)")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\S*)")
FAKE_KEY = "sk-fake-key-for-the-examples"
ANSWER = "An answer from the fake DeepSeek server."


class Snippet(NamedTuple):
    name: str  # e.g. "python/sdk/README.md:46" (the line of the opening fence)
    code: str


def python_blocks(path: Path) -> Iterator[Snippet]:
    """The fenced blocks tagged python (or py) of a Markdown file, dedented by their fence's
    indentation (a block in a list item)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rel = path.relative_to(REPO_ROOT).as_posix()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        if lang in ("python", "py", "python3"):
            yield Snippet(f"{rel}:{start}", "\n".join(body) + "\n")


def all_snippets() -> List[Snippet]:
    blocks = [b for doc in DOCUMENTS for b in python_blocks(doc)]
    return blocks + [Snippet(p.relative_to(REPO_ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in EXAMPLES]


SNIPPETS = all_snippets()


def not_run_reason(code: str) -> Optional[str]:
    first = next((line for line in code.splitlines() if line.strip()), "")
    m = NOT_RUN.match(first.strip())
    return m.group(1) if m else None


class AnsweringFake(FakeDeepSeek):
    """The fake DeepSeek server, answering any prompt it has no table entry for with ANSWER:
    the examples choose their own prompts."""

    def _entry_for(self, body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        entry = super()._entry_for(body)
        if entry is not None:
            return entry
        return {"events": [{"delta": {"role": "assistant", "content": ANSWER}}, {"delta": {}, "finish_reason": "stop"}]}


# What DeepSeek answers a wrong key (HTTP 401).
REFUSAL = {"error": {"message": "Authentication Fails, Your api key: ****xyz is invalid", "type": "authentication_error",
                     "param": None, "code": "invalid_request_error"}}


class RefusingFake(FakeDeepSeek):
    """A DeepSeek that refuses every request as it refuses a wrong key."""

    def _entry_for(self, body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        return {"status": 401, "body": REFUSAL}


@pytest.fixture(scope="module")
def fake_deepseek() -> Iterator[AnsweringFake]:
    with AnsweringFake() as server:
        yield server


@pytest.fixture(scope="module")
def refusing_deepseek() -> Iterator[RefusingFake]:
    with RefusingFake() as server:
        yield server


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> RuntimeVenvs:
    """Where the programs run: an environment as the Install section makes it (see the module's doc)."""
    return RuntimeVenvs(tmp_path_factory.mktemp("runtime"))


def run_snippet(code: str, tmp_path: Path, env: Dict[str, str], runtime: RuntimeVenvs) -> "subprocess.CompletedProcess[str]":
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("# A project\nIt has a README.\n")
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    # Its own state folder, so that its session logs can be read below; nothing of the tests'
    # own environment (a PYTHONPATH, the venv) reaches the program's Python.
    env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    python = runtime.python(needs_of(code))
    return subprocess.run([str(python), str(script)], cwd=workspace, env=env, capture_output=True, text=True, timeout=180)


def turn_ends(tmp_path: Path) -> List[str]:
    """The reason kinds of every turn the snippet ran, from the session logs under tmp_path
    (the default root and any root of its own in the workspace). A program can ignore a
    TurnResult whose status is "error" and still exit 0; the logs cannot."""
    kinds = []
    for log in sorted(tmp_path.rglob("*.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "turn/end":
                kinds.append(event["data"]["reason"]["kind"])
    return kinds


TOOL_DEF = re.compile(r"^@tool\b[^\n]*\n(?:@[^\n]*\n)*(?:async\s+)?def\s+(\w+)", re.M)


def client_tools_of(code: str) -> List[str]:
    """The names of the ``@tool`` functions a program defines."""
    return TOOL_DEF.findall(code)


def tool_results(tmp_path: Path) -> List[Dict[str, Any]]:
    """Every tool/result event the program's turns logged."""
    results = []
    for log in sorted(tmp_path.rglob("*.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "tool/result":
                results.append(event["data"])
    return results


def assert_client_tools_called(name: str, code: str, run: "subprocess.CompletedProcess[str]", tmp_path: Path) -> None:
    """Offline, every @tool the program defines is called, succeeds, and its name is printed:
    the reader sees the feature work without a key."""
    for tool in client_tools_of(code):
        called = [r for r in tool_results(tmp_path) if r.get("name") == tool]
        assert called, f"{name} defines the tool {tool} but its offline run never calls it"
        assert all(r.get("isError") is False for r in called), called
        assert tool in run.stdout, f"{name} does not show {tool} being called:\n{run.stdout[-2000:]}"


def assert_ran_well(name: str, run: "subprocess.CompletedProcess[str]", tmp_path: Path, code: str = "") -> None:
    assert run.returncode == 0, f"{name} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    kinds = turn_ends(tmp_path)
    assert kinds, f"{name} ran no turn"
    # "aborted": a turn the program cancelled on purpose (a stream left early); "blocked": a
    # prompt its own prompt-submit hook refused, which a program with one shows on purpose.
    expected = {"completed", "aborted"} | ({"blocked"} if "prompt_submit=" in code else set())
    assert set(kinds) <= expected, f"{name}: turns ended {kinds}\n{run.stdout[-2000:]}"


def base_env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "OPENAI_"))}
    env["HARNESS_BRIDGE_BIN"] = str(real_bridge_or_skip())
    env["HARNESS_MAX_RETRIES"] = "0"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    return env


def test_the_documents_have_blocks_to_run() -> None:
    # A change of fence style that hid every block would make the tests below vacuous.
    names = [s.name for s in SNIPPETS]
    assert sum(n.startswith("python/sdk/README.md:") for n in names) >= 5, names
    assert any(n.startswith("README.md:") for n in names), names
    assert {"examples/streaming.py", "examples/async_sessions.py", "examples/mcp_glossary.py", "examples/batch.py"} <= set(names), names
    # The @tool check below must see the tools the documents define.
    defining = [s.name for s in SNIPPETS if client_tools_of(s.code)]
    assert "examples/client_tools.py" in defining and any(n.startswith("README.md:") for n in defining), defining


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.name for s in SNIPPETS])
def test_runs_against_the_binary_with_a_fake_deepseek(snippet: Snippet, tmp_path: Path, fake_deepseek: AnsweringFake,
                                                      runtime: RuntimeVenvs) -> None:
    reason = not_run_reason(snippet.code)
    if reason is not None:
        pytest.skip(f"{snippet.name} says: not run by the tests: {reason}")
    env = {**base_env(), "DEEPSEEK_API_KEY": FAKE_KEY, "DEEPSEEK_BASE_URL": fake_deepseek.base_url}
    before = len(fake_deepseek.requests)
    run = run_snippet(snippet.code, tmp_path, env, runtime)
    assert_ran_well(snippet.name, run, tmp_path, snippet.code)
    assert fake_deepseek.problems == [], fake_deepseek.problems
    if len(fake_deepseek.requests) > before:
        assert ANSWER in run.stdout, f"{snippet.name} asked DeepSeek but does not print the answer:\n{run.stdout[-2000:]}"
    else:
        assert_client_tools_called(snippet.name, snippet.code, run, tmp_path)


# The blocks that say they are not run are skipped once, by the test above, not twice.
RUN_SNIPPETS = [s for s in SNIPPETS if not_run_reason(s.code) is None]


@pytest.mark.parametrize("snippet", RUN_SNIPPETS, ids=[s.name for s in RUN_SNIPPETS])
def test_prints_status_and_reason_when_deepseek_refuses(snippet: Snippet, tmp_path: Path, refusing_deepseek: RefusingFake,
                                                        runtime: RuntimeVenvs) -> None:
    env = {**base_env(), "DEEPSEEK_API_KEY": FAKE_KEY, "DEEPSEEK_BASE_URL": refusing_deepseek.base_url}
    before = len(refusing_deepseek.requests)
    run = run_snippet(snippet.code, tmp_path, env, runtime)
    if len(refusing_deepseek.requests) == before:
        # Offline only (the scripted provider): examples/ go to DeepSeek whenever a key is set.
        assert not snippet.name.startswith("examples/"), f"{snippet.name} did not use DeepSeek with a key set"
        # An offline block has no DeepSeek turn to fail: it must go on working with a key set.
        assert_ran_well(snippet.name, run, tmp_path, snippet.code)
        return
    assert "Traceback" not in run.stderr, f"{snippet.name} crashed on a refused turn:\n{run.stderr[-4000:]}"
    assert "model-error" in turn_ends(tmp_path)
    # What the user needs to see: the status, the reason's kind, its HTTP status and message.
    for shown in ("error", "model-error", "401", "Authentication Fails"):
        assert shown in run.stdout, f"{snippet.name} does not print {shown!r} when the turn fails:\n{run.stdout[-2000:]}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_run_offline_without_a_key(example: Path, tmp_path: Path, runtime: RuntimeVenvs) -> None:
    code = example.read_text(encoding="utf-8")
    run = run_snippet(code, tmp_path, base_env(), runtime)
    assert_ran_well(example.name, run, tmp_path)
    assert_client_tools_called(example.name, code, run, tmp_path)
    assert ANSWER not in run.stdout  # the demo model's answers, not the fake's


def test_every_block_and_example_passes_mypy_strict(tmp_path: Path) -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        message = "mypy is not installed in this venv: bash scripts/setup.sh installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    files = []
    for n, snippet in enumerate(SNIPPETS):
        # One module per block, named after where it comes from, so that mypy's messages say it.
        stem = re.sub(r"\W+", "_", snippet.name)
        path = tmp_path / f"m{n:02d}_{stem}.py"
        path.write_text(snippet.code, encoding="utf-8")
        files.append(str(path))
    check = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy_cache"), *files],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_programs_python_holds_what_the_install_section_installs_and_what_they_name(runtime: RuntimeVenvs) -> None:
    """The check above is not vacuous: the tests' own packages are not there, the SDK's are, and
    a program's ``# needs`` line brings its own."""
    def imports(python: Path, module: str) -> bool:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        return subprocess.run([str(python), "-c", f"import {module}"], env=env, capture_output=True, timeout=60).returncode == 0

    bare = runtime.python(needs_of("print('hi')\n"))
    assert imports(bare, "deepseek_harness.batch") and imports(bare, "pydantic")
    assert not imports(bare, "pytest") and not imports(bare, "hypothesis") and not imports(bare, "mcp")
    assert needs_of("# needs mcp: pip install mcp\nimport mcp\n") == {"mcp"}
    assert imports(runtime.python(frozenset({"mcp"})), "mcp.server.mcpserver")
