"""The SDK types every event, notification and method of the wire with the bridge's names.

test/fixtures/wire-shape.json is the wire's shape as the bridge's TypeScript types declare it
(scripts/wire-shape.mjs writes it; test/protocol/wire-shape.test.ts checks it against those
types): each session event type with the field paths of its data, each notification and each
method with those of its params and result. Here the same paths are read off the SDK's wire
types, all in the ``deepseek_harness.wire`` package (by wire alias; ``initialize``'s plain
settings from ``options.INITIALIZE_FIELDS``, the table that sends them), and must be the same
sets, so a field added to one side only fails one of the two tests. A path is ``a.b`` for a
nested field, ``a[].b`` for a field of an array's elements; a union contributes every member's
fields. Maps and JSON values (``Dict[str, Any]``, ``Any``) are opaque here as
``Record``/``JsonValue`` are there, and ``SessionEvent`` inside a result or a notification is the
envelope checked on its own.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, Dict, List, Mapping, Set, Tuple

import pytest
from pydantic import BaseModel

from deepseek_harness import wire
from deepseek_harness.options import INITIALIZE_FIELDS

FIXTURE = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "wire-shape.json"

#: Where the SDK types each method: its params and its result (None: no fields).
METHODS: Dict[str, Tuple[Any, Any]] = {
    "initialize": ("INITIALIZE_FIELDS", wire.InitializeResponse),
    "session/prompt": (wire.SessionPromptParams, wire.SessionPromptResponse),
    "session/cancel": (wire.SessionCancelParams, wire.SessionCancelResponse),
    "session/compact": (wire.SessionCompactParams, wire.SessionCompactResponse),
    "session/tool_result": (wire.SessionToolResultParams, None),
    "session/permission": (wire.SessionPermissionParams, None),
    "session/hook": (wire.SessionHookParams, None),
    "session/list": (wire.SessionListParams, wire.SessionListResponse),
    "session/read": (wire.SessionReadParams, wire.SessionReadResponse),
    "session/fork": (wire.SessionForkParams, wire.SessionForkResponse),
    "session/delete": (wire.SessionDeleteParams, wire.SessionDeleteResponse),
    "session/steer": (wire.SessionSteerParams, wire.SessionSteerResponse),
    "session/rewind": (wire.SessionRewindParams, wire.RewindResult),
    "shutdown": (None, None),
}

#: The typed event of each notification stream consumers get (``session.event``'s are per type).
NOTIFICATIONS: Dict[str, Any] = {"session.event": wire.SessionEventParams, **wire.NOTIFICATION_EVENTS}


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
    elif isinstance(tp, type) and issubclass(tp, wire.SessionEvent):
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
    out = {"cwd", "provider", "model", "protocolVersion", "toolChoice.name"}
    out |= {wire_name for _, wire_name, _ in INITIALIZE_FIELDS}
    out |= {f"clientTools[].{p}" for p in paths(wire.ClientToolSpec)}
    out |= {f"prices.{p}" for p in paths(wire.Prices)}
    return sorted(out)


def method_paths(source: Any) -> List[str]:
    if source is None:
        return []
    if source == "INITIALIZE_FIELDS":
        return _initialize_params()
    return paths(source)


@pytest.mark.parametrize("event_type", sorted(shape()["events"]))
def test_every_session_event_type_is_typed_with_the_bridges_fields(event_type: str) -> None:
    cls = wire.SESSION_EVENT_TYPES.get(event_type)
    assert cls is not None, f"{event_type} has no typed event in wire.SESSION_EVENT_TYPES (it would stream as UnknownEvent)"
    envelope = {f.alias or n for n, f in wire.BaseSessionEvent.model_fields.items()}
    assert paths(cls, envelope) == shape()["events"][event_type]


def test_the_sdk_types_no_event_type_the_bridge_does_not_send() -> None:
    assert sorted(wire.SESSION_EVENT_TYPES) == sorted(shape()["events"])


def test_the_event_envelope() -> None:
    assert sorted(f.alias or n for n, f in wire.SessionEvent.model_fields.items()) == shape()["eventEnvelope"]


@pytest.mark.parametrize("method", sorted(shape()["notifications"]))
def test_every_notification_is_typed_with_the_bridges_fields(method: str) -> None:
    assert method in NOTIFICATIONS, f"no typed event for the {method} notification"
    assert paths(NOTIFICATIONS[method]) == shape()["notifications"][method]
    # Notification.params' models: every field, nested ones as far as they type them (some are dicts).
    on_wire = set(shape()["notifications"][method])
    top = {p for p in on_wire if "." not in p and "[]" not in p}
    assert top <= set(paths(wire.NOTIFICATION_PARAMS[method])) <= on_wire


def test_the_notifications_are_the_bridges() -> None:
    assert sorted(NOTIFICATIONS) == sorted(shape()["notifications"]) == sorted(wire.NOTIFICATION_PARAMS)


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
    assert "usage.cacheMissTokens" in paths(wire.TurnEndEvent)
    assert "content[].argumentsText" in paths(wire.AssistantMessageEvent)
    assert "contentBlocks[].text" in paths(wire.SessionPromptParams)


def test_every_event_class_of_the_wire_package_is_registered() -> None:
    # An event model missing from wire.event_types would stream as UnknownEvent, and the tests
    # above would not see it.
    from deepseek_harness.wire import feature_events, turn_events

    registered = set(wire.SESSION_EVENT_TYPES.values()) | set(wire.CHUNK_TYPES.values()) | set(wire.NOTIFICATION_EVENTS.values())
    for module in (turn_events, feature_events):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, wire.TurnEvent) and obj not in (wire.TurnEvent, wire.BaseSessionEvent, wire.UnknownEvent):
                assert obj in registered, f"{module.__name__}.{name} is in no table of wire.event_types"
            assert getattr(wire, name) is obj, f"deepseek_harness.wire does not export {module.__name__}.{name}"
