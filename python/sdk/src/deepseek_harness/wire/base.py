"""The leaf of the wire package: the base every wire model derives from, the content blocks, and
the joined text of a list of blocks. Every other module of :mod:`deepseek_harness.wire` builds on
this one and this one imports none of them, so the package's imports run one way.

Field names are snake_case in Python and camelCase on the wire (``input_tokens`` ↔
``inputTokens``); every model accepts either spelling and dumps the wire one with
``model_dump(by_alias=True)``.
"""

from __future__ import annotations

from typing import Annotated, Any, Dict, List, Literal, Optional, Type, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "WireModel", "TextBlock", "ReasoningBlock", "ToolCallBlock", "ContentBlock", "AssistantBlock", "ResultBlock",
    "joined_text",
]


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

# Content blocks inside events: the known kinds as models, any other kind kept as its dict.
# left_to_right, because pydantic's default "smart" union would take every dict as the plain-dict
# member.
AssistantBlock = Annotated[
    Union[TextBlock, ReasoningBlock, ToolCallBlock, Dict[str, Any]], Field(union_mode="left_to_right")
]
ResultBlock = Annotated[Union[TextBlock, Dict[str, Any]], Field(union_mode="left_to_right")]


def joined_text(blocks: List[Any], kind: Type[Any]) -> str:
    """The ``text`` of the blocks of class ``kind``, joined (other blocks, dicts included, skipped):
    what the event models' ``text`` properties return."""
    return "".join(b.text for b in blocks if isinstance(b, kind))
