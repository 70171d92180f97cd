"""Kept for code written against earlier docs: the message types live in :mod:`nia_core.message` and `model`.

Import them from :mod:`nia_core` (the public API).
"""

from nia_core.message import MESSAGE_KINDS, Message, MessageKind, ToolCall
from nia_core.model import ModelRequest, Reply, Usage

__all__ = ["MESSAGE_KINDS", "Message", "MessageKind", "ModelRequest", "Reply", "ToolCall", "Usage"]
