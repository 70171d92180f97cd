"""The project layer: locating the project, reading ``.nia/*.toml``, the context-merging rules."""

from nia_core.project.location import locate
from nia_core.project.toml import read_toml

__all__ = ["locate", "read_toml"]
