"""``nia context``: what the model would be told."""

from __future__ import annotations

import json

import click

from nia_core.cli.app import App
from nia_core.context import EMPTY_SNAPSHOT, ReplacementReady, replace
from nia_core.project.toml import ConfigError


@click.group()
def context() -> None:
    """Inspect the system context nia assembles."""


@context.command("show")
@click.option("--json", "as_json", is_flag=True, help="Per-source key, plugin, status and size, as JSON.")
@click.option(
    "--location",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The working directory to assemble for (default: the current one).",
)
@click.pass_context
def show(ctx: click.Context, as_json: bool, location: str | None) -> None:
    """Print the baseline system context as it would be sent."""
    app = App.of(ctx)
    host, view = app.open(location)
    config_problem = host.config_problem(view.location)
    if config_problem is not None:  # a session would keep its context as it was; here there is nothing to show
        raise ConfigError(config_problem)
    assembly = host.assemble(view)
    result = replace(assembly.context, EMPTY_SNAPSHOT, timeout=host.timeout)
    assert isinstance(result, ReplacementReady)  # an empty snapshot never blocks
    host.report_observations(assembly, result.observations)  # names the plugin of a hung loader; --strict fails
    generation = result.generation
    sizes = generation.sizes()
    unavailable = [o.key for o in result.observations if not o.available]
    if as_json:
        sources = [
            {
                "key": obs.key,
                "plugin": assembly.owners.get(obs.key) or assembly.contributors.get(obs.key) or None,
                "status": obs.status,
                "reason": obs.reason or None,
                "size": sizes.get(obs.key, 0),
            }
            for obs in result.observations
        ]
        broken = [{"plugin": info.name, "status": "error", "reason": info.error} for info in host.infos() if info.error]
        payload = {
            "location": str(view.location.path),
            "root": str(view.location.root),
            "baseline": generation.baseline,
            "sources": sources,
            "plugin_errors": broken,
            "blocked_on": unavailable,
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    _echo_large(generation.baseline)
    if unavailable:
        click.echo(
            "Warning: a session would be blocked on: " + ", ".join(unavailable) + " (shown without them)",
            err=True,
        )


_CHUNK = 256 * 1024


def _echo_large(text: str) -> None:
    """``click.echo(text)``, a slice at a time.

    Echoed whole, a baseline of megabytes is copied once to add the newline and
    once more to encode it: two more copies of the largest thing nia holds, at
    the moment memory peaks.
    """
    for start in range(0, len(text), _CHUNK):
        click.echo(text[start : start + _CHUNK], nl=False)
    click.echo()
