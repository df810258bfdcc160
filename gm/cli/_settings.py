"""The settings a command runs with: read from the environment once, the first time the command asks."""

from __future__ import annotations

import argparse

from gm.config import Settings
from gm.store import Store, default_database_url


def settings_of(arguments: argparse.Namespace) -> Settings:
    """The environment's settings (gm.config) for the command `arguments` belong to, read once and kept with them.

    Read only when a command asks: `gm roll`, `gm odds` and `gm check` need none, so a bad `GM_*` value
    does not stop them.
    """
    settings = getattr(arguments, "settings", None)
    if not isinstance(settings, Settings):
        settings = arguments.settings = Settings.from_env()
    return settings


def store_of(arguments: argparse.Namespace) -> Store:
    """The store the command's settings name (GM_DATABASE_URL, else gm.db in GM_HOME)."""
    return Store(default_database_url(settings_of(arguments)))
