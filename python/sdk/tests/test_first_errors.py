"""The errors a new user meets first, through the SDK and the real binary: each message names
the cause and the fix. No network to the provider (nothing listening at the base URL), a base
URL whose path has no chat-completions endpoint (HTTP 404), a model name the server does not
know (DeepSeek's own answer), a workspace that does not exist."""

from __future__ import annotations

import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import REPO_ROOT
from deepseek_harness import DeepSeekHarness, InvalidParamsError, TurnResult

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from fake_deepseek import FakeDeepSeek  # noqa: E402

PROMPT = "What is in README.md?"


def run_once(real: Any, base_url: str, model: str = "deepseek-flash") -> TurnResult:
    harness = DeepSeekHarness(provider="deepseek", model=model, cwd=real.workspace, session_root=real.session_root,
                              bridge_bin=real.bridge, shutdown_timeout_seconds=5.0,
                              env={"DEEPSEEK_API_KEY": "sk-fake", "DEEPSEEK_BASE_URL": base_url,
                                   "HARNESS_MAX_RETRIES": "0", "NO_PROXY": "127.0.0.1"})
    real.opened.append(harness)
    result = harness.run(PROMPT)
    assert result.status == "error" and result.reason.kind == "model-error", result.reason
    assert result.reason.message is not None
    return result


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 nothing listens on: bound and held for the test without listening,
    so a connection is refused and no other process can take the port meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        yield port


@pytest.fixture
def not_found_server() -> Iterator[str]:
    """A web server that answers 404 on every path, as a wrong base URL's host does."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b'{"detail":"Not Found"}'
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_no_server_at_the_base_url_says_so_and_names_the_variable(real, closed_port):
    message = run_once(real, f"http://127.0.0.1:{closed_port}").reason.message or ""
    assert f"ECONNREFUSED 127.0.0.1:{closed_port}" in message  # what the network said, kept
    assert f"nothing accepts connections at 127.0.0.1:{closed_port}: start the server there, or point " \
           "DEEPSEEK_BASE_URL (default https://api.deepseek.com) at one that runs" in message


def test_a_base_url_without_the_endpoint_says_where_the_requests_went(real, not_found_server):
    message = run_once(real, f"{not_found_server}/wrong").reason.message or ""
    assert message.startswith('deepseek answered HTTP 404: {"detail":"Not Found"}')
    assert f"there is no chat-completions endpoint at {not_found_server}/wrong/chat/completions: check DEEPSEEK_BASE_URL" in message
    assert "the bridge appends /chat/completions to it" in message


def test_a_model_the_server_does_not_know_is_named_with_the_field_to_change(real):
    with FakeDeepSeek() as fake:
        # DeepSeek's answer to a model name it does not serve.
        refusal = {"error": {"message": "Model Not Exist", "type": "invalid_request_error", "param": None,
                             "code": "invalid_request_error"}}
        fake.table[PROMPT] = [{"status": 400, "body": refusal}]
        result = run_once(real, fake.base_url, model="deepseek-flsh")
    assert result.reason.http_status == 400
    message = result.reason.message or ""
    assert message.startswith("deepseek answered HTTP 400: Model Not Exist")
    assert "does not serve the model 'deepseek-flsh': pass a model it serves (initialize.model; model= in the Python SDK)" in message


def test_a_workspace_that_does_not_exist_is_named_with_the_fix(real, tmp_path: Path):
    missing = tmp_path / "no-such-project"
    harness = DeepSeekHarness(provider="scripted", model="demo", cwd=missing, session_root=real.session_root,
                              bridge_bin=real.bridge, shutdown_timeout_seconds=5.0)
    real.opened.append(harness)
    with pytest.raises(InvalidParamsError) as caught:
        harness.start()
    assert caught.value.message == (f"invalid params: params.cwd: {missing} does not exist; the workspace must be an "
                                    "existing folder: create it, or pass the folder to work in as cwd")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    harness = DeepSeekHarness(provider="scripted", model="demo", cwd=a_file, session_root=real.session_root,
                              bridge_bin=real.bridge, shutdown_timeout_seconds=5.0)
    real.opened.append(harness)
    with pytest.raises(InvalidParamsError, match=f"params.cwd: {a_file} is not a folder; the workspace must be"):
        harness.start()
