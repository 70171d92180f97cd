"""A full check of every plugin at a Location, for ``nia plugins list``.

Loading a plugin only proves it imports and its hooks have the right
signatures. The rest shows only when its sources are produced, observed and
rendered: a hook that raises or returns nonsense, a key outside its namespace
or taken by another plugin, a loader that hangs or raises, a value its codec
cannot encode, a renderer that fails, a ``nia_register_commands`` that raises.
This runs all of that once and marks each plugin that misbehaved. Plugins'
providers are checked by :func:`nia_core.providers.lookup.check_plugin_providers`
(the providers sit above the host).
"""

from __future__ import annotations

import functools

from nia_core.context import Assembly, ContextSource, Location, Observation, canonical_json, observe
from nia_core.context.observation import max_source_bytes, too_large
from nia_core.deadline import Late, call_each
from nia_core.errors import message_of, one_line, where_raised
from nia_core.plugin_host.manager import PluginHost


def check(host: PluginHost, location: Location) -> Assembly:
    """Assemble, observe and render once at ``location``; misbehaving plugins end up with ``error`` set.

    ``host.strict`` turns the first misbehaviour found into a ``PluginError``.
    """
    view = host.open(location)
    try:
        assembly = host.assemble(view)
        observations = observe(assembly.context.sources, host.timeout)
        host.report_observations(assembly, observations)
        checks = []
        for source, obs in zip(assembly.context.sources, observations, strict=True):
            info = host.plugins.get(assembly.owners.get(source.key, ""))
            if info is None or not obs.available or info.error:
                continue
            checks.append((info, source, functools.partial(_value_problem, source, obs.value)))
        outcomes = call_each([check for _, _, check in checks], host.timeout)  # codecs, renderers: plugin code
        for (info, source, _), outcome in zip(checks, outcomes, strict=True):
            if isinstance(outcome.error, Late):
                problem = f"encoding or rendering its value {outcome.error}"
            elif outcome.error is not None:
                problem = f"checking its value raised {outcome.error.text}"
            else:
                problem = outcome.value
            if problem:
                host._mark_broken(info.name, f"context source {source.key!r}: {problem}")
        _check_commands(host)
        _check_summarize(host)
    finally:
        view.close()
    return assembly


def _value_problem(source: ContextSource, value: object) -> str | None:
    """What a session would find wrong with the source's value: its encoding, then its baseline text."""
    return _encode_problem(source, value) or _render_problem(source.baseline, value)


def _encode_problem(source: ContextSource, value: object) -> str | None:
    try:
        encoded = canonical_json(source.codec.encode(value))
    except Exception as exc:  # noqa: BLE001 - reported against the plugin, as a session would count it unavailable
        return f"codec could not encode the value: {message_of(exc)}{where_raised(exc)}"
    oversized = too_large(Observation(source.key, value, "ok"), encoded, source.value_limit(max_source_bytes()))
    return oversized.reason if oversized is not None else None


def _check_commands(host: PluginHost) -> None:
    """Run each ``nia_register_commands`` into a throwaway group: one that raises is broken too."""
    import click

    _, problems = host.call_each("nia_register_commands", {"cli": click.Group()})
    for problem in problems:
        host._mark_broken(problem.plugin, problem.message, problem.error)


def _check_summarize(host: PluginHost) -> None:
    """Ask each ``nia_summarize`` for a summary of a one-message history: one that raises is broken."""
    from nia_core.model import Message

    history = [Message("user", "Tidy up cart.py", seq=1)]
    answers, problems = host.call_each("nia_summarize", {"messages": history}, every=True)
    for problem in problems:
        host._mark_broken(problem.plugin, problem.message, problem.error)
    for plugin, answer in answers:
        if answer is not None and not isinstance(answer, str):
            host._mark_broken(plugin, f"nia_summarize returned {type(answer).__name__}, not text")


def _render_problem(render: object, value: object) -> str | None:
    try:
        text = render(value)  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 - run on a worker: never the user's Ctrl-C
        return f"baseline renderer raised {one_line(exc, where=False)}{where_raised(exc)}"
    if not isinstance(text, str):
        return f"baseline renderer returned {type(text).__name__}, not text"
    text = str.__str__(text)  # a str subclass's own methods are the plugin's code
    if not text.strip():
        return "baseline renderer returned empty text"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "baseline renderer returned text that is not valid UTF-8 (a lone surrogate)"
    return None
