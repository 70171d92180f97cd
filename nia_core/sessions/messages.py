"""Kept for code written against earlier docs: the message types live in :mod:`nia_core.model`.

Import them from :mod:`nia_core` (the public API).
"""

from nia_core.model import MESSAGE_KINDS, Message, MessageKind, ModelRequest, Reply, ToolCall, Usage

__all__ = ["MESSAGE_KINDS", "Message", "MessageKind", "ModelRequest", "Reply", "ToolCall", "Usage"]
