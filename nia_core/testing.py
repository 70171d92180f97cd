"""nia's test kit for plugin authors (a pytest plugin, registered as ``pytest11``).

Its fixtures do nothing unless a test asks for them.
"""
