"""Tests written with nia's test kit (the ``nia_*`` fixtures come with nia)."""

import nia_template_plugin as plugin


def test_notes_arrive_change_and_leave(nia_project, nia_boundaries):
    notes = nia_project.write("NOTES.md", "Ship on Fridays.\n")

    texts = nia_boundaries.drive(plugin, lambda: notes.write_text("Never ship on Fridays.\n"))

    assert texts.baseline == "Project notes (NOTES.md):\n\nShip on Fridays.\n"
    assert texts.added == texts.baseline
    assert texts.updates == ["The project notes (NOTES.md) changed. They now read:\n\nNever ship on Fridays.\n"]
    assert texts.removal == "The project notes (NOTES.md) given earlier no longer apply: the file is gone."


def test_deleting_the_file_removes_the_source(nia_project, nia_boundaries):
    notes = nia_project.write("NOTES.md", "Ship on Fridays.\n")

    texts = nia_boundaries.drive(plugin, notes.unlink)

    assert texts.updates == ["The project notes (NOTES.md) given earlier no longer apply: the file is gone."]
    assert texts.removal is None  # nothing left to remove


def test_no_notes_no_source(nia_host, nia_location):
    host = nia_host(plugin)
    assert host.assemble(host.open(nia_location)).context.keys == ()


def test_the_file_is_configurable(nia_project, nia_host):
    nia_project.write("docs/notes.txt", "Use tabs.\n")
    nia_project.configure("nia-template-plugin", file="docs/notes.txt")
    host = nia_host(plugin)

    assembly = host.assemble(host.open(nia_project.location))

    assert assembly.context.keys == ("template-plugin/notes",)


def test_a_file_outside_the_project_is_never_read(nia_project, nia_host, tmp_path):
    """A repository can hold a NOTES.md that links anywhere, or name any file: only the project's own is read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("A token from outside the project.\n")
    (nia_project.location.root / "NOTES.md").symlink_to(secret)
    host = nia_host(plugin)
    assert host.assemble(host.open(nia_project.location)).context.keys == ()

    (nia_project.location.root / "NOTES.md").unlink()
    nia_project.write("NOTES.md", "Ship on Fridays.\n")  # read, were the setting below ignored
    nia_project.configure("nia-template-plugin", file="../secret.txt")
    host = nia_host(plugin)
    assert host.assemble(host.open(nia_project.location)).context.keys == ()
