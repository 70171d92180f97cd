"""Kept for code written against earlier docs: the provider interface lives in :mod:`nia_core.model`.

Import it from :mod:`nia_core` (the public API).
"""

from nia_core.model import DEFAULT_MODEL, Provider, ProviderError, StreamCallback, split_model

__all__ = ["DEFAULT_MODEL", "Provider", "ProviderError", "StreamCallback", "split_model"]
