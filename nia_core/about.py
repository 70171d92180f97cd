"""What nia is called as a distribution, kept apart so any layer can name it without importing the API."""

DISTRIBUTION = "nia-context"
"""The distribution name (``nia`` on the package index is an unrelated project; nia itself is not there yet)."""

__version__ = "0.1.0"


def extra_install(extra: str) -> str:
    """The pip command that adds the packages of nia's ``extra`` to the Python nia runs in.

    It names those packages (``pip install 'mcp<3,>=2.3'``), which the package
    index has, rather than ``nia-context[mcp]``, which it does not have yet.
    """
    from importlib.metadata import PackageNotFoundError, requires

    try:
        declared = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        declared = []
    wanted = [
        line.split(";", 1)[0].strip() for line in declared if line.replace("'", '"').endswith(f'extra == "{extra}"')
    ]
    if not wanted:
        return f"pip install '{DISTRIBUTION}[{extra}]'"
    return "pip install " + " ".join(f"'{requirement}'" for requirement in wanted)
