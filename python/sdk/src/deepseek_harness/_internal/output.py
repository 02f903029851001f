"""Structured output on the SDK side: ``run(..., output_schema=dict)`` or
``run(..., output_type=SomePydanticModel)`` sends ``session/prompt.outputSchema`` and turns the
``output`` of ``turn/end`` into :attr:`TurnResult.output` (the value as parsed JSON, or an
instance of ``output_type``). Shared by the blocking and the asyncio fronts."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

from pydantic import BaseModel, TypeAdapter

__all__ = ["OutputSpec", "output_spec"]


class OutputSpec:
    """What a structured turn sends (``schema``) and how its ``output`` is parsed."""

    __slots__ = ("schema", "output_type")

    def __init__(self, schema: Dict[str, Any], output_type: Optional[Any]) -> None:
        self.schema = schema
        self.output_type = output_type

    def parse(self, output: Any) -> Any:
        """``output`` as the caller asked for it: a model instance (validated by pydantic) for a
        model class, a validated value for any other type, else the JSON value as it came."""
        if self.output_type is None:
            return output
        if isinstance(self.output_type, type) and issubclass(self.output_type, BaseModel):
            return self.output_type.model_validate(output)
        return TypeAdapter(self.output_type).validate_python(output)


def output_spec(output_schema: Optional[Mapping[str, Any]], output_type: Optional[Type[Any]]) -> Optional[OutputSpec]:
    """The spec of ``run``'s ``output_schema`` / ``output_type`` keywords (at most one), or None."""
    if output_schema is not None and output_type is not None:
        raise TypeError("give output_schema or output_type, not both")
    if output_schema is not None:
        if not isinstance(output_schema, Mapping):
            message = f"output_schema must be a dict (a JSON Schema), not {type(output_schema).__name__}"
            if isinstance(output_schema, type):
                # A class (a pydantic model, a dataclass) is what output_type= takes: say so, or
                # the user is left reading about metaclasses.
                message += f"; pass a pydantic model as output_type= (output_type={output_schema.__name__})"
            raise TypeError(message)
        return OutputSpec(dict(output_schema), None)
    if output_type is not None:
        if isinstance(output_type, type) and issubclass(output_type, BaseModel):
            schema = output_type.model_json_schema()
        else:
            schema = TypeAdapter(output_type).json_schema()
        return OutputSpec(schema, output_type)
    return None
