"""``nia init``: a commented ``.nia/project.toml`` and ``.nia/commands.toml`` for the folder it runs in."""

from __future__ import annotations

from pathlib import Path

import click

from nia_core.cli.options import location_option


@click.command("init")
@location_option("The folder to make a nia project (default: the current one).")
def init_command(location: str | None) -> None:
    """Write a commented .nia/project.toml and .nia/commands.toml here.

    The project's name comes from the folder, and its README becomes project
    context; every other setting is a commented example. A file that exists
    is left as it is.
    """
    from nia_core.files import Refused
    from nia_core.project.root import locate, working_directory
    from nia_core.project.starter import init
    from nia_core.project.toml import ConfigError

    folder = (Path(location) if location else working_directory()).resolve()
    above = locate(folder)
    try:
        results = init(folder)
    except Refused as exc:
        raise ConfigError(f"{folder / '.nia'}: nothing written: {exc.problem}") from None
    except OSError as exc:
        raise ConfigError(f"{folder / '.nia'}: nothing written: {exc.strerror or exc}") from None
    for name, written in results:
        state = "written" if written else "exists, left as it is"
        click.echo(f"{folder / '.nia' / name}: {state}")
    if above.has_project_dir and above.root != folder:
        click.echo(f"Note: {above.root} holds a .nia/ too; from here down, this folder is the project.")
    elif above.is_git and above.root != folder:
        click.echo(f"Note: the git repository's root is {above.root}; from here down, this folder is the project.")
    click.echo("Next: nia context show    # what the model would be told here")
    click.echo("      nia workflows list  # once a workflow in .nia/commands.toml is uncommented")
