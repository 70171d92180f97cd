"""Providers: lowering a :class:`~nia_core.sessions.messages.ModelRequest` to a wire format and sending it."""
