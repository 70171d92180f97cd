"""``nia models``: the providers and models a session can name here, with capabilities and prices."""

from __future__ import annotations

import json

import click

from nia_core.cli.app import App
from nia_core.cli.options import location_option


@click.command("models")
@location_option("The working directory whose project settings apply (default: the current one).")
@click.option("--json", "as_json", is_flag=True, help="As one JSON object: providers, each with its models.")
@click.pass_context
def models(ctx: click.Context, location: str | None, as_json: bool) -> None:
    """The providers and models a session can use here: where each provider is, whether its key is set,
    and for each model pattern the role of the baseline, how an update reaches the model, and its price.

    A model no pattern matches still works: its baseline is a system message,
    its updates are wrapped in a user turn, and it has no price.
    """
    from nia_core.providers.catalog import catalog, describe_updates
    from nia_core.providers.lookup import providers_at

    app = App.of(ctx)
    where = app.locate(location)
    lookup = providers_at(where, app.host(where))
    entries = catalog(where, lookup)
    if as_json:
        payload = {"location": str(where.path), "providers": [entry.to_json() for entry in entries]}
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    for entry in entries:
        head = f"{entry.name} ({entry.origin})"
        if entry.url is not None:
            head += f"  {entry.url}"
        if entry.key_env is not None:
            head += f"  key ${entry.key_env}: {'set' if entry.key_set else 'not set'}"
        click.echo(head)
        if entry.problem is not None:
            click.echo(f"  cannot be used here: {entry.problem}")
        width = max((len(f"{entry.name}/{m.pattern}") for m in entry.models), default=0)
        roles_of = {
            m.pattern: f"baseline {m.capabilities.baseline_role}, updates {describe_updates(m.capabilities)}"
            for m in entry.models
            if m.capabilities is not None
        }
        roles_width = max((len(text) for text in roles_of.values()), default=0)
        for model in entry.models:
            named = f"{entry.name}/{model.pattern}".ljust(width)
            roles = roles_of.get(model.pattern, "").ljust(roles_width)
            price = model.price
            cost = (
                f"${price.input:g} in, ${price.cache_read:g} cache read, ${price.cache_write:g} cache write, "
                f"${price.output:g} out per 1M tokens"
                if price is not None
                else "no price"
            )
            click.echo("  " + "  ".join(part for part in (named, roles, cost) if part.strip()))
        if not entry.models:
            click.echo("  (any model name; nia knows no capabilities or prices for it)")
