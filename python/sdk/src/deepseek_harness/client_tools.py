"""Client tools: Python functions the model can call, and the approval callback's answers.

``@tool`` turns a function (sync or ``async``) into a :class:`ClientTool`: its name, the first
paragraph of its docstring as the description, and a JSON Schema of its parameters built by
pydantic from the type hints (each parameter's line of a Google-style ``Args:`` section becomes
its description). The harness offers it with ``initialize.clientTools``; when the model calls
it, the SDK validates the arguments against the same pydantic model, runs the function, and
answers the bridge's ``tool/request`` with ``session/tool_result``:

* a ``str`` result is the tool's text as it is; anything else is sent as JSON (pydantic's
  encoder: models, dataclasses, dates work);
* arguments that do not validate, and an exception the function raises, become an error
  result whose text (``"ValueError: ..."``) the model reads and can act on.

``can_use_tool`` (with ``approvals="writes"`` or ``"always"``) answers each
``permission/request`` with :class:`Allow` (optionally with changed arguments) or
:class:`Deny` (with a message the model reads).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar, Union, overload

import pydantic
import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError

from .wire import ClientToolSpec

__all__ = [
    "ClientTool",
    "tool",
    "Allow",
    "Deny",
    "PermissionResult",
    "BUILTIN_TOOL_NAMES",
    "TOOL_NAME_PATTERN",
    "tool_output_text",
]

#: The bridge's built-in tools: a client tool may not take one of these names.
BUILTIN_TOOL_NAMES = frozenset({"bash", "read_file", "write_file", "edit_file", "glob", "grep", "task"})
#: What the bridge accepts as a client tool's name (and no ``mcp__`` prefix).
TOOL_NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")

F = TypeVar("F", bound=Callable[..., Any])


def check_tool_name(name: Any) -> str:
    """``name`` if the bridge would take it as a client tool's name; ``ValueError`` saying why not."""
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
        raise ValueError(f"client tool name {name!r} must match [A-Za-z0-9_-]{{1,64}}")
    if name in BUILTIN_TOOL_NAMES:
        raise ValueError(f"client tool name {name!r} is a built-in tool's name ({', '.join(sorted(BUILTIN_TOOL_NAMES))})")
    if name == "final_answer":
        raise ValueError("client tool name 'final_answer' is kept for structured output's answer tool")
    if name.startswith("mcp__"):
        raise ValueError(f"client tool name {name!r} starts with 'mcp__', which is kept for MCP servers' tools")
    return name


def _docstring_parts(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """The description (the first paragraph) and the parameter lines of a Google-style
    ``Args:`` section of a docstring."""
    text = inspect.cleandoc(doc) if doc else ""
    paragraphs = re.split(r"\n\s*\n", text, maxsplit=1)
    description = " ".join(paragraphs[0].split()) if paragraphs[0].strip() else ""
    params: Dict[str, str] = {}
    section = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?|\s*\n)+)", text, re.MULTILINE)
    if section:
        current: Optional[str] = None
        for line in section.group(1).splitlines():
            m = re.match(r"^\s{1,8}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if m:
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return description, params


def _arguments_model(fn: Callable[..., Any], name: str, arg_docs: Dict[str, str]) -> Type[BaseModel]:
    """A pydantic model of ``fn``'s parameters (extra arguments are refused: the model sees the
    error instead of the function silently ignoring a misspelt name)."""
    # The parameters' hints only: the return annotation is not described to the model, and may
    # name a class defined where the function is (unresolvable under `from __future__ import
    # annotations`).
    annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != "return"}
    try:
        localns = dict(inspect.getclosurevars(fn).nonlocals) if inspect.isfunction(fn) else None
        hints = typing.get_type_hints(types.SimpleNamespace(__annotations__=annotations),
                                      globalns=getattr(fn, "__globals__", None), localns=localns,
                                      include_extras=True)
    except Exception as exc:  # an annotation that cannot be resolved: say which tool
        raise TypeError(f"@tool {name!r}: cannot resolve the type hints of {fn!r}: {exc}") from exc
    fields: Dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"@tool {name!r}: *args and **kwargs cannot be described to the model; name every parameter")
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"@tool {name!r}: parameter {p.name!r} is positional-only; the model passes arguments by name")
        annotation = hints.get(p.name, Any)
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (annotation, pydantic.Field(default, description=arg_docs.get(p.name)))
    return pydantic.create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


@dataclasses.dataclass(frozen=True)
class ClientTool:
    """A tool the model can call that runs in this Python process (made by :func:`tool`).

    Attributes:
        name: the tool's name for the model (``[A-Za-z0-9_-]{1,64}``, no built-in's name).
        description: what the model is told the tool does.
        parameters: the JSON Schema of its arguments (an object).
        read_only: True when calling it changes nothing: it then needs no approval under
            ``approvals="writes"``, is offered in ``read-only`` mode, and runs beside other
            read-only calls of the same step.
        fn: the function (sync or ``async``).
    """

    name: str
    description: str
    parameters: Dict[str, Any]
    read_only: bool
    fn: Callable[..., Any]
    arguments_model: Type[BaseModel] = dataclasses.field(repr=False, compare=False)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def to_wire(self) -> Dict[str, Any]:
        """The entry of ``initialize.clientTools``."""
        return ClientToolSpec(name=self.name, description=self.description, parameters=self.parameters,
                              read_only=self.read_only).to_wire()

    def validate(self, arguments: Any) -> Dict[str, Any]:
        """The keyword arguments of a call, validated (``ValidationError`` if they do not fit)."""
        model = self.arguments_model.model_validate(arguments)
        return {field: getattr(model, field) for field in type(model).model_fields}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function itself, unvalidated (a decorated function stays callable)."""
        return self.fn(*args, **kwargs)

    def __reduce__(self) -> Any:
        # The arguments model is a class made at decoration, which pickle cannot find by name; so
        # a tool pickles by reference when it is the module attribute its function was defined as
        # (`@tool def f` puts the tool in f's place), else as its function and settings, rebuilt
        # by @tool. Options holding client tools then reach another process (a Ray worker).
        # A tool of the running script (`__main__`) is rebuilt from its function, which the
        # pickler then carries as it can: cloudpickle (Ray) by value; plain pickle by name, which
        # another process fails to find with a clear error (never a silent None).
        module, qualname = getattr(self.fn, "__module__", None), getattr(self.fn, "__qualname__", "")
        if module not in (None, "__main__") and _found(module, qualname) is self:
            return (_attribute, (module, qualname))
        return (_make, (self.fn, self.name, self.description, self.read_only))


def _attribute(module: str, qualname: str) -> Any:
    """``module.qualname`` (imported). Raises ImportError or AttributeError when it is not there:
    a tool unpickled where its module does not define it is an error, never None."""
    import importlib

    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _found(module: str, qualname: str) -> Any:
    """``module.qualname``, or None where it is not (a function's local, a module not importable)."""
    try:
        return _attribute(module, qualname)
    except (ImportError, AttributeError):
        return None


def _make(fn: Callable[..., Any], name: Optional[str], description: Optional[str], read_only: bool) -> ClientTool:
    if not callable(fn):
        raise TypeError(f"@tool decorates a function, not {type(fn).__name__}")
    tool_name = check_tool_name(name if name is not None else getattr(fn, "__name__", None))
    doc_description, arg_docs = _docstring_parts(getattr(fn, "__doc__", None))
    text = description if description is not None else doc_description
    if not text:
        raise ValueError(f"@tool {tool_name!r}: give it a docstring or description=...: the model reads it to choose the tool")
    model = _arguments_model(fn, tool_name, arg_docs)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return ClientTool(tool_name, text, schema, bool(read_only), fn, model)


@overload
def tool(fn: Callable[..., Any], /) -> ClientTool: ...


@overload
def tool(*, name: Optional[str] = None, description: Optional[str] = None,
         read_only: bool = False) -> Callable[[Callable[..., Any]], ClientTool]: ...


def tool(fn: Optional[Callable[..., Any]] = None, /, *, name: Optional[str] = None, description: Optional[str] = None,
         read_only: bool = False) -> Union[ClientTool, Callable[[Callable[..., Any]], ClientTool]]:
    """Makes a function (sync or ``async``) a :class:`ClientTool`: ``@tool`` or
    ``@tool(name=..., description=..., read_only=True)``. The name defaults to the function's,
    the description to its docstring's first paragraph; the parameters' JSON Schema comes from
    the type hints (pydantic), their descriptions from the docstring's ``Args:`` section.
    Raises ``ValueError`` for a name the bridge would refuse or a missing description,
    ``TypeError`` for ``*args``/``**kwargs`` or positional-only parameters."""
    if fn is not None:
        return _make(fn, name, description, read_only)
    return lambda f: _make(f, name, description, read_only)


def tool_output_text(value: Any) -> str:
    """A tool's return value as the text the model reads: a ``str`` as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return pydantic_core.to_json(value).decode("utf-8")


def validation_error_text(tool_name: str, exc: ValidationError) -> str:
    """A pydantic validation error as a message the model can act on (one line per field)."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err.get("loc", ())) or "(arguments)"
        lines.append(f"- {where}: {err.get('msg')} (got {_shown(err.get('input'))})" if err.get("type") != "missing"
                     else f"- {where}: {err.get('msg')}")
    return f"invalid arguments for {tool_name}:\n" + "\n".join(lines)


#: How much of a refused input a validation error repeats (the model sent it: it may be huge).
SHOWN_INPUT_CHARS = 200


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - the input came from the model as JSON; this is belt and braces
        text = f"a {type(value).__name__}"
    if len(text) <= SHOWN_INPUT_CHARS:
        return text
    return f"{text[:SHOWN_INPUT_CHARS]}… ({len(text)} characters)"


# -- approvals ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Allow:
    """``can_use_tool``'s answer: run the call, with ``arguments`` (a dict) instead of the
    model's when given."""

    arguments: Optional[Dict[str, Any]] = None


@dataclasses.dataclass(frozen=True)
class Deny:
    """``can_use_tool``'s answer: do not run the call; ``message`` is the error result the model
    reads (say what it should do instead)."""

    message: str = ""


#: What ``can_use_tool`` returns.
PermissionResult = Union[Allow, Deny]


def split_tools(tools: Optional[List[Any]], builtin_tools: Optional[List[str]]
                ) -> Tuple[Optional[List[str]], List[ClientTool]]:
    """The built-in allow-list (None: all built-ins) and the client tools of ``tools=`` and
    ``builtin_tools=`` (see HarnessOptions' docstring for the rule). Raises ``TypeError`` for an
    item that is neither a name nor a :class:`ClientTool` and for names given both ways,
    ``ValueError`` for two client tools of one name."""
    names: List[str] = []
    client: List[ClientTool] = []
    for item in tools or ():
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, ClientTool):
            client.append(item)
        else:
            hint = (f"decorate {getattr(item, '__name__', 'it')!r} with @deepseek_harness.tool"
                    if callable(item) else "pass built-in tool names (str) or @tool functions")
            raise TypeError(f"tools= takes built-in tool names (str) and client tools (@tool), not "
                            f"{type(item).__name__} {item!r}: {hint}")
    seen: Dict[str, ClientTool] = {}
    for t in client:
        if t.name in seen and seen[t.name] is not t:
            raise ValueError(f"two client tools are named {t.name!r}; give one another name with @tool(name=...)")
        seen[t.name] = t
    client = list(seen.values())  # the same tool listed twice is offered once
    if builtin_tools is not None:
        if names:
            raise TypeError("give the built-in allow-list either as builtin_tools= or as names in tools=, not both")
        for n in builtin_tools:
            if not isinstance(n, str):
                raise TypeError(f"builtin_tools= takes built-in tool names (str), not {type(n).__name__}")
        return list(builtin_tools), client
    if tools is not None and (names or not client):
        return names, client
    return None, client
