"""The SDK types every event, notification and method of the wire with the bridge's names.

test/fixtures/wire-shape.json is the wire's shape as the bridge's TypeScript types declare it
(scripts/wire-shape.mjs writes it; test/protocol/wire-shape.test.ts checks it against those
types): each session event type with the field paths of its data, each notification and each
method with those of its params and result. Here the same paths are read off the SDK's models
(by wire alias) and must be the same sets, so a field added to one side only fails one of the
two tests. A path is ``a.b`` for a nested field, ``a[].b`` for a field of an array's elements;
a union contributes every member's fields. Maps and JSON values (``Dict[str, Any]``, ``Any``)
are opaque here as ``Record``/``JsonValue`` are there, and ``SessionEvent`` inside a result or
a notification is the envelope checked on its own.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, Dict, List, Mapping, Set, Tuple

import pytest
from pydantic import BaseModel

from deepseek_harness import events as ev
from deepseek_harness import models
from deepseek_harness import sessions
from deepseek_harness import turn_control
from deepseek_harness import checkpoints
from deepseek_harness._internal import request_params as rp
from deepseek_harness.client_tool_models import SessionPermissionParams, SessionToolResultParams
from deepseek_harness.hooks import SessionHookParams
from deepseek_harness.options import INITIALIZE_FIELDS

FIXTURE = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "wire-shape.json"

#: Where the SDK types each method: its params and its result (None: no fields).
METHODS: Dict[str, Tuple[Any, Any]] = {
    "initialize": ("INITIALIZE_FIELDS", models.InitializeResponse),
    "session/prompt": (rp.SessionPromptParams, models.SessionPromptResponse),
    "session/cancel": (rp.SessionCancelParams, models.SessionCancelResponse),
    "session/compact": (rp.SessionCompactParams, models.SessionCompactResponse),
    "session/tool_result": (SessionToolResultParams, None),
    "session/permission": (SessionPermissionParams, None),
    "session/hook": (SessionHookParams, None),
    "session/list": (rp.SessionListParams, sessions.SessionListResponse),
    "session/read": (rp.SessionReadParams, sessions.SessionReadResponse),
    "session/fork": (rp.SessionForkParams, sessions.SessionForkResponse),
    "session/delete": (rp.SessionDeleteParams, sessions.SessionDeleteResponse),
    "session/steer": (rp.SessionSteerParams, turn_control.SessionSteerResponse),
    "session/rewind": (checkpoints.SessionRewindParams, checkpoints.RewindResult),
    "shutdown": (None, None),
}

#: The typed event of each notification stream consumers get (``session.event``'s are per type).
NOTIFICATIONS: Dict[str, Any] = {
    "session.event": models.SessionEventParams,
    "subagent.started": ev.SubagentStartedEvent,
    "subagent.finished": ev.SubagentFinishedEvent,
}


def shape() -> Dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _collect(tp: Any, prefix: str, out: Set[str]) -> None:
    """Adds the field paths of annotation ``tp`` under ``prefix`` to ``out``."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        _collect(typing.get_args(tp)[0], prefix, out)
    elif origin is typing.Union:
        for member in typing.get_args(tp):
            _collect(member, prefix, out)
    elif origin in (list, List):
        _collect(typing.get_args(tp)[0], f"{prefix}[]", out)
    elif isinstance(tp, type) and issubclass(tp, models.SessionEvent):
        return  # opaque: the envelope, checked by test_the_event_envelope
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        for name, field in tp.model_fields.items():
            path = _join(prefix, field.alias or name)
            out.add(path)
            _collect(field.annotation, path, out)
    elif typing.is_typeddict(tp):
        for name, hint in typing.get_type_hints(tp, include_extras=True).items():
            path = _join(prefix, name)
            out.add(path)
            _collect(hint, path, out)
    # Anything else (str, int, Literal, Dict, Any) has no fields of its own.


def paths(tp: Any, leave_out: Set[str] = set()) -> List[str]:
    out: Set[str] = set()
    _collect(tp, "", out)
    return sorted(out - leave_out)


def _initialize_params() -> List[str]:
    """``initialize``'s params: the three always sent, ``protocolVersion``, and the table of
    settings; ``clientTools`` entries are :class:`ClientToolSpec`, a ``toolChoice`` of one tool
    is ``{"name": ...}`` (options._tool_choice_wire)."""
    from deepseek_harness.client_tool_models import ClientToolSpec

    out = {"cwd", "provider", "model", "protocolVersion", "toolChoice.name"}
    out |= {wire for _, wire, _ in INITIALIZE_FIELDS}
    out |= {f"clientTools[].{p}" for p in paths(ClientToolSpec)}
    out |= {f"prices.{p}" for p in paths(turn_control.Prices)}
    return sorted(out)


def method_paths(source: Any) -> List[str]:
    if source is None:
        return []
    if source == "INITIALIZE_FIELDS":
        return _initialize_params()
    return paths(source)


@pytest.mark.parametrize("event_type", sorted(shape()["events"]))
def test_every_session_event_type_is_typed_with_the_bridges_fields(event_type: str) -> None:
    cls = ev._SESSION_EVENTS.get(event_type)
    assert cls is not None, f"{event_type} has no typed event in events.py's registry (it would stream as UnknownEvent)"
    envelope = {f.alias or n for n, f in ev.BaseSessionEvent.model_fields.items()}
    assert paths(cls, envelope) == shape()["events"][event_type]


def test_the_sdk_types_no_event_type_the_bridge_does_not_send() -> None:
    assert sorted(ev._SESSION_EVENTS) == sorted(shape()["events"])


def test_the_event_envelope() -> None:
    assert sorted(f.alias or n for n, f in models.SessionEvent.model_fields.items()) == shape()["eventEnvelope"]


@pytest.mark.parametrize("method", sorted(shape()["notifications"]))
def test_every_notification_is_typed_with_the_bridges_fields(method: str) -> None:
    assert method in NOTIFICATIONS, f"no typed event for the {method} notification"
    assert paths(NOTIFICATIONS[method]) == shape()["notifications"][method]
    # Notification.params' models: every field, nested ones as far as they type them (some are dicts).
    wire = set(shape()["notifications"][method])
    top = {p for p in wire if "." not in p and "[]" not in p}
    assert top <= set(paths(models._PARAMS_MODELS[method])) <= wire


def test_the_notifications_are_the_bridges() -> None:
    assert sorted(NOTIFICATIONS) == sorted(shape()["notifications"]) == sorted(models._PARAMS_MODELS)


@pytest.mark.parametrize("method", sorted(shape()["methods"]))
def test_every_method_is_typed_with_the_bridges_fields(method: str) -> None:
    assert method in METHODS, f"the SDK has no types for the {method} request"
    params, result = METHODS[method]
    expected: Mapping[str, List[str]] = shape()["methods"][method]
    assert method_paths(params) == expected["params"], "params"
    assert method_paths(result) == expected["result"], "result"


def test_the_methods_are_the_bridges() -> None:
    assert sorted(METHODS) == sorted(shape()["methods"])


def test_the_walk_sees_nested_fields() -> None:
    # The comparisons above pass vacuously if the walk finds nothing nested.
    assert "usage.cacheMissTokens" in paths(ev.TurnEndEvent)
    assert "content[].argumentsText" in paths(ev.AssistantMessageEvent)
    assert "contentBlocks[].text" in paths(rp.SessionPromptParams)


def test_every_event_class_of_the_event_modules_is_registered_and_re_exported() -> None:
    # The event models live in turn_events.py and feature_events.py; events.py's registry must
    # hold each of them (else it would stream as UnknownEvent, and the tests above would not see
    # it) and events.py must re-export each public name (``from deepseek_harness.events import X``).
    from deepseek_harness import feature_events, turn_events

    registered = set(ev._SESSION_EVENTS.values()) | set(ev._CHUNKS.values()) | set(ev._NOTIFICATIONS.values())
    for module in (turn_events, feature_events):
        for name in module.__all__:
            assert getattr(ev, name) is getattr(module, name), f"events.py does not re-export {module.__name__}.{name}"
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, ev.TurnEvent) and obj not in (ev.TurnEvent, ev.BaseSessionEvent):
                assert obj in registered, f"{module.__name__}.{name} is in no registry of events.py"
    assert {n for n in ev.__all__} >= {n for n in turn_events.__all__ + feature_events.__all__ if n not in ("AssistantBlock", "ResultBlock")}


def test_models_re_exports_the_wire_types_split_off_from_it() -> None:
    from deepseek_harness import usage, wire_model

    for module in (wire_model, usage):
        for name in module.__all__:
            assert name in models.__all__ and getattr(models, name) is getattr(module, name), f"{module.__name__}.{name}"
