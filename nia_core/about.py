"""What nia is called on the package index, kept apart so any layer can name it without importing the API."""

DISTRIBUTION = "nia-context"
"""The distribution name (``pip install nia-context``): ``nia`` on the index is an unrelated project."""

__version__ = "0.1.0"
