"""The pluggy markers for nia's hooks (project name ``nia``)."""

import pluggy

hookspec = pluggy.HookspecMarker("nia")
hookimpl = pluggy.HookimplMarker("nia")
