"""The consumer's decoding of a prompt's inbox batches: parsing a run of raw lines as one JSON
array must deliver exactly what parsing them one by one would, in the same order, with the same
guards — whatever the lines hold."""

from __future__ import annotations

import json
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from deepseek_harness import Notification
from deepseek_harness._internal.decode import FAST_PREFIX, deliver


def reference(batch):
    """One json.loads per line, with the reader's guards: what the fast path must equal."""
    out = []
    for item in batch:
        if isinstance(item, Notification):
            out.append((item.method, item.payload))
            continue
        try:
            msg = json.loads(item)
        except ValueError:
            continue
        if type(msg) is dict and "id" not in msg and type(msg.get("params")) is dict and type(msg.get("method")) is str:
            out.append((msg["method"], msg["params"]))
    return out


def delivered(batch):
    out = []
    deliver(batch, lambda n: out.append((n.method, n.payload)))
    return out


def event_line(sid: str, text: str, seq: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": sid, "event": {
        "type": "assistant/chunk", "seq": seq, "time": 0,
        "data": {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "text": text}}}}},
        ensure_ascii=False, separators=(",", ":")).encode()


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
good = st.builds(event_line, st.sampled_from(["s1", "s2"]), texts, st.integers(0, 10**6))


@st.composite
def tricky(draw):
    """Lines a broken or hostile bridge could send on the fast path."""
    a, b = draw(good), draw(good)
    kind = draw(st.sampled_from(["two-objects", "cut", "request", "not-object", "garbage", "crlf", "params-list", "no-method"]))
    if kind == "two-objects":  # two values on one line: invalid alone, two items in an array
        return a + b"," + b
    if kind == "cut":  # a line broken in two inside a string
        cut = draw(st.integers(len(FAST_PREFIX) + 1, len(a) - 1))
        return a[:cut]
    if kind == "request":
        return a[:-1] + b',"id":7}'
    if kind == "not-object":
        return draw(st.sampled_from([b"[1,2]", b"3", b'"s"', b"null"]))
    if kind == "garbage":
        return FAST_PREFIX + draw(st.binary(max_size=20)).replace(b"\n", b"")
    if kind == "crlf":
        return a + b"\r"
    if kind == "params-list":
        return b'{"jsonrpc":"2.0","method":"session.event","params":[1]}'
    return b'{"jsonrpc":"2.0","params":{"sessionId":"s1"}}'


decoded = st.builds(lambda sid, text: Notification("subagent.started", {"parentSessionId": sid, "childSessionId": text}),
                    st.sampled_from(["s1", "s2"]), texts)
batches = st.lists(st.one_of(good, good, good, tricky(), decoded), max_size=30)


@settings(max_examples=400, deadline=None)
@given(batches)
def test_batched_decoding_equals_line_by_line(batch):
    logging.getLogger("deepseek_harness").setLevel(logging.CRITICAL)  # the drops are expected here
    try:
        assert delivered(batch) == reference(batch)
    finally:
        logging.getLogger("deepseek_harness").setLevel(logging.NOTSET)


@settings(max_examples=400, deadline=None)
@given(batches)
def test_chunks_kept_undecoded_are_the_same_notifications_in_the_same_order(batch):
    """``run()`` without a callback keeps chunks as their lines: what it keeps must be exactly
    what decoding delivers, in stream order, with the same guards."""
    logging.getLogger("deepseek_harness").setLevel(logging.CRITICAL)
    try:
        out = []
        deliver(batch, lambda n: out.append(("decoded", n)), lambda n: out.append(("kept", n)))
        assert [(n.method, n.payload) for _, n in out] == reference(batch)
        assert [via for via, _ in out] == ["kept" if n.event_type == "assistant/chunk" else "decoded" for _, n in out]
        for via, n in out:
            if via == "kept":
                assert n == Notification(n.method, json.loads(json.dumps(n.payload)))
                assert n.event.type == "assistant/chunk"
    finally:
        logging.getLogger("deepseek_harness").setLevel(logging.NOTSET)


def test_a_kept_chunk_is_decoded_once_on_first_access():
    n = Notification._undecoded("session.event", event_line("s1", "hé", 4))
    assert n.event_type == "assistant/chunk" and n.session_id == "s1"
    assert n.payload is n.payload  # decoded once, then the same dict
    assert n.event.data["chunk"]["text"] == "hé" and n.event.seq == 4
    assert n == Notification("session.event", json.loads(event_line("s1", "hé", 4))["params"])


def test_a_cut_line_pair_that_joins_into_valid_json_is_still_dropped():
    """Two halves of a line, each invalid, join (with the array's comma) into one valid object:
    one value for two lines, so the count check falls back to line-by-line and both are dropped,
    while the good lines around them still arrive in order."""
    line = event_line("s1", "ab", 1)
    cut = line.index(b'"ab"') + 2  # inside the string: "a | b"
    first, second = line[:cut], line[cut:]
    assert json.loads(b"[" + first + b"," + second + b"]")  # joined, it parses
    batch = [event_line("s1", "x", 0), first, second, event_line("s1", "y", 2)]
    out = delivered(batch)
    assert [p["event"]["data"]["chunk"]["text"] for _, p in out] == ["x", "y"]
    assert out == reference(batch)


def test_two_objects_on_one_line_are_dropped_not_split():
    batch = [event_line("s1", "a", 1) + b"," + event_line("s1", "b", 2), event_line("s1", "c", 3)]
    assert [p["event"]["seq"] for _, p in delivered(batch)] == [3]


def test_a_turn_end_reason_describes_itself_with_every_detail_it_carries():
    from deepseek_harness.models import TurnEndReason

    assert TurnEndReason(kind="completed").describe() == "completed"
    assert TurnEndReason(kind="max-steps", limit=10).describe() == "max-steps (limit 10)"
    refused = TurnEndReason.model_validate({"kind": "model-error", "httpStatus": 401, "code": "invalid_request_error",
                                            "message": "Authentication Fails"})
    assert refused.describe() == "model-error (HTTP 401, code invalid_request_error): Authentication Fails"
    assert TurnEndReason(kind="internal-error", message="boom").describe() == "internal-error: boom"
