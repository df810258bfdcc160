"""The world editor: a small FastAPI app (`create_app`) that edits world.json and dice.json as forms."""

from .app import create_app

__all__ = ["create_app"]
