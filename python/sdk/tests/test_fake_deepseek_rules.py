"""The Python fake DeepSeek against the shared refusal cases (test/fixtures/deepseek-refusals.json),
which the TypeScript fake is checked against too, so both refuse what the real API refuses."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from fake_deepseek import refusal as deepseek_refusal  # noqa: E402

CASES = json.loads((REPO_ROOT / "test" / "fixtures" / "deepseek-refusals.json").read_text("utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_refuses_what_deepseek_refuses(case: dict) -> None:
    refusal = deepseek_refusal(case["body"])
    assert (400 if refusal else 200) == case["status"]
    if refusal:
        assert refusal["error"]["type"] == "invalid_request_error"
    if "message" in case:
        assert refusal is not None and refusal["error"]["message"].startswith(case["message"])
