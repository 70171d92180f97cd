"""Durable sessions: the store, context epochs, the safe provider-turn boundary."""
