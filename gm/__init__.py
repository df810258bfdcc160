"""gm: a game master played by a language model, whose dice are rolled by code.

The front door: everything a program that plays stories needs, by name.

    from gm import Game, ModelClient, ModelSettings

    game = Game(ModelClient(ModelSettings.from_env()))
    story_id = game.start_story("worlds/harbour-heist")
    result = await game.play(story_id, "I pick the lock of the harbour office.")
    print(result.narration)
    await game.settle()  # let the memory keeper finish before the program exits

Each name is imported on first use, so `import gm` costs next to nothing: a program that only rolls
dice (`from gm import dice`) never loads the model client, the database or the web server. Fake
models for tests are in `gm.testing`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Each public name, and the module that defines it.
_EXPORTS = {
    # playing stories
    "Game": "gm.engine.game",
    "RoundSettings": "gm.engine.settings",
    "RoundResult": "gm.engine.results",
    "RoundPaused": "gm.engine.results",
    "PlayerRoll": "gm.engine.results",
    "RoundEvents": "gm.engine.results",
    # models
    "ChatModel": "gm.models.client",
    "ModelClient": "gm.models.client",
    "ModelSettings": "gm.models.client",
    "Completion": "gm.models.completion",
    "ToolCall": "gm.models.completion",
    "RehearsalModel": "gm.rehearsal.model",
    # worlds and their dice
    "World": "gm.world.definition",
    "world_from_data": "gm.world.definition",
    "load_world": "gm.world.loading",
    "load_rules": "gm.world.loading",
    "check_world": "gm.world.loading",
    "Rules": "gm.rules.checks",
    "Check": "gm.rules.checks",
    "Band": "gm.rules.checks",
    "resolve": "gm.rules.checks",
    "check_odds": "gm.rules.chances",
    "certain": "gm.rules.chances",
    "uncertain_targets": "gm.rules.chances",
    "Problem": "gm.problems",
    # the database
    "Store": "gm.store",
    # what a story looks like from outside, and its audit
    "TranscriptPublic": "gm.transcript.shapes",
    "StoryPublic": "gm.transcript.shapes",
    "RoundPublic": "gm.transcript.shapes",
    "RollPublic": "gm.transcript.shapes",
    "OutcomePublic": "gm.transcript.shapes",
    "QuestionPublic": "gm.transcript.shapes",
    "ChangePublic": "gm.transcript.sheets",
    "SheetsPublic": "gm.transcript.sheets",
    "audit": "gm.integrity.audit",
    "AuditReport": "gm.integrity.audit",
    # errors (every one of them is in gm.errors)
    "GmError": "gm.errors",
    "ModelRetry": "gm.errors",
    "PlayError": "gm.errors",
    "RoundFailed": "gm.errors",
    "LeaseLost": "gm.errors",
    "StoryBusy": "gm.errors",
    "UsageError": "gm.errors",
    "NotFound": "gm.errors",
    "Conflict": "gm.errors",
    "StoryEnded": "gm.errors",
    "RoundWaiting": "gm.errors",
    "OperatorError": "gm.errors",
    "SettingsError": "gm.errors",
    "ModelError": "gm.errors",
    "StoryNotFound": "gm.errors",
    "ProblemsError": "gm.errors",
    # the settings, every GM_* and OPENAI_* variable
    "Settings": "gm.config",
    # the dice engine itself, a package
    "dice": "gm.dice",
}

__all__ = [
    "AuditReport",
    "Band",
    "ChangePublic",
    "ChatModel",
    "Check",
    "Completion",
    "Conflict",
    "Game",
    "GmError",
    "LeaseLost",
    "ModelClient",
    "ModelError",
    "ModelRetry",
    "ModelSettings",
    "NotFound",
    "OperatorError",
    "OutcomePublic",
    "PlayError",
    "PlayerRoll",
    "Problem",
    "ProblemsError",
    "QuestionPublic",
    "RehearsalModel",
    "RollPublic",
    "RoundEvents",
    "RoundFailed",
    "RoundPaused",
    "RoundPublic",
    "RoundResult",
    "RoundSettings",
    "RoundWaiting",
    "Rules",
    "Settings",
    "SettingsError",
    "SheetsPublic",
    "Store",
    "StoryBusy",
    "StoryEnded",
    "StoryNotFound",
    "StoryPublic",
    "ToolCall",
    "TranscriptPublic",
    "UsageError",
    "World",
    "__version__",
    "audit",
    "certain",
    "check_odds",
    "check_world",
    "dice",
    "load_rules",
    "load_world",
    "resolve",
    "uncertain_targets",
    "world_from_data",
]

if TYPE_CHECKING:
    from gm import dice
    from gm.config import Settings
    from gm.engine.game import Game
    from gm.engine.results import PlayerRoll, RoundEvents, RoundPaused, RoundResult
    from gm.engine.settings import RoundSettings
    from gm.errors import (
        Conflict,
        GmError,
        LeaseLost,
        ModelError,
        ModelRetry,
        NotFound,
        OperatorError,
        PlayError,
        ProblemsError,
        RoundFailed,
        RoundWaiting,
        SettingsError,
        StoryBusy,
        StoryEnded,
        StoryNotFound,
        UsageError,
    )
    from gm.integrity.audit import AuditReport, audit
    from gm.models.client import ChatModel, ModelClient, ModelSettings
    from gm.models.completion import Completion, ToolCall
    from gm.problems import Problem
    from gm.rehearsal.model import RehearsalModel
    from gm.rules.chances import certain, check_odds, uncertain_targets
    from gm.rules.checks import Band, Check, Rules, resolve
    from gm.store import Store
    from gm.transcript.shapes import (
        OutcomePublic,
        QuestionPublic,
        RollPublic,
        RoundPublic,
        StoryPublic,
        TranscriptPublic,
    )
    from gm.transcript.sheets import ChangePublic, SheetsPublic
    from gm.world.definition import World, world_from_data
    from gm.world.loading import check_world, load_rules, load_world


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gm' has no attribute {name!r}")
    value = importlib.import_module(module) if name == "dice" else getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
