"""The base of every wire model and the content blocks: the leaves the other wire types are built from.

Apart from :mod:`.models` (which re-exports every name here) so that the modules the wire
types are split into (:mod:`.usage`, the event modules, the feature modules) can all build on
them without importing one another in a circle.

Field names are snake_case in Python and camelCase on the wire (``input_tokens`` ↔
``inputTokens``); every model accepts either spelling and dumps the wire one with
``model_dump(by_alias=True)``.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["WireModel", "TextBlock", "ReasoningBlock", "ToolCallBlock", "ContentBlock"]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, either spelling accepted, extras kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
    )

    def to_wire(self) -> Dict[str, Any]:
        """The wire form (camelCase keys, unset optional fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)


# ---------------------------------------------------------------------------
# Content blocks
# ---------------------------------------------------------------------------


class TextBlock(WireModel):
    """Plain text; the only block a prompt may hold."""

    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(WireModel):
    """The model's reasoning (assistant content only)."""

    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallBlock(WireModel):
    """A tool call the model asked for (assistant content only)."""

    type: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    arguments: Dict[str, Any] = Field(default_factory=dict)
    #: Present only when the model sent arguments that were not a JSON object.
    raw_arguments: Optional[str] = None
    #: The model's valid arguments exactly as it streamed them, present only when that text is
    #: not the compact JSON of ``arguments``; the bridge sends it back as written.
    arguments_text: Optional[str] = None


ContentBlock = Union[TextBlock, ReasoningBlock, ToolCallBlock]
