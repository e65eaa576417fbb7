"""Subcommands of the `scalebook` CLI, one module each, registered by `scalebook.cli`."""
