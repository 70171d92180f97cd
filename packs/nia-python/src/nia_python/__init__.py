"""nia-python: what an agent working on a Python project should know, kept current during a session.

A plugin pack: one distribution, three plugins (each its own entry point, so
each is listed, configured and switched off on its own):

- ``nia-python`` (:mod:`nia_python.project`): ``python/interpreter`` (the
  virtualenv and Python version in use) and ``python/project`` (name, version
  and declared Python from ``pyproject.toml``);
- ``nia-pytest`` (:mod:`nia_python.pytest_results`): ``python/tests``, the
  tests that failed in pytest's last run, read from pytest's own cache;
- ``nia-python-lint`` (:mod:`nia_python.lint`, off until configured):
  ``python/ruff`` and ``python/mypy``, from the results files your runs write.

Built on nia's public API only (``nia_core``). Every file is read through
nia's checked reader, with the project root and a size limit; nothing is run.
"""

__version__ = "0.1.0"
