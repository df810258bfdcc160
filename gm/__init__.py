"""gm: a game master played by a language model, whose dice are rolled by code."""

__version__ = "0.1.0"
