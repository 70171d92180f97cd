"""Providers: lowering a :class:`~nia_core.model.ModelRequest` to a wire format and sending it."""
