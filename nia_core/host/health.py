"""A full check of every plugin at a Location, for ``nia plugins list``.

Loading a plugin only proves it imports and its hooks have the right
signatures. The rest shows only when its sources are produced, observed and
rendered: a hook that raises or returns nonsense, a key outside its namespace
or taken by another plugin, a loader that hangs or raises, a renderer that
fails. This runs all of that once and marks each plugin that misbehaved.
"""

from __future__ import annotations

from nia_core.context import Assembly, Location, observe
from nia_core.host.host import PluginHost


def check(host: PluginHost, location: Location) -> Assembly:
    """Assemble, observe and render once at ``location``; misbehaving plugins end up with ``error`` set.

    ``host.strict`` turns the first misbehaviour found into a ``PluginError``.
    """
    view = host.open(location)
    try:
        assembly = host.assemble(view)
        observations = observe(assembly.context.sources, host.timeout)
        host.report_observations(assembly, observations)
        owners = {f"plugin {name!r}": info for name, info in host.plugins.items()}
        for source, obs in zip(assembly.context.sources, observations, strict=True):
            info = owners.get(assembly.contributors.get(source.key, ""))
            if info is None or not obs.available or info.error:
                continue
            problem = _render_problem(source.baseline, obs.value)
            if problem:
                host._mark_broken(info.name, f"context source {source.key!r}: baseline renderer {problem}")
    finally:
        view.close()
    return assembly


def _render_problem(render: object, value: object) -> str | None:
    try:
        text = render(value)  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - reported against the plugin
        return f"raised {type(exc).__name__}: {' '.join(str(exc).split())}"
    if not isinstance(text, str):
        return f"returned {type(text).__name__}, not text"
    if not text.strip():
        return "returned empty text"
    return None
