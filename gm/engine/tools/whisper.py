"""The `whisper` tool: the game master tells one seated character something only that character's seat reads
(gm.engine.table). Offered only in a round played at a shared table; the other seats see that something was
whispered, and to whom, but not what."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from gm.engine.referee import MAX_NARRATION as MAX_NARRATION_TEXT
from gm.engine.tools.offered import ArgumentCheck, read_arguments
from gm.errors import ModelRetry

WHISPER = "whisper"
MAX_WHISPERS = 8  # whispers in one round


def whisper_schema(characters: list[str]) -> dict[str, Any]:
    """The tool's schema, naming the characters that have a seat."""
    parameters = {
        "type": "object",
        "properties": {
            "character": {"type": "string", "enum": characters, "description": "The seated character told."},
            "text": {"type": "string", "maxLength": MAX_NARRATION_TEXT, "description": "What only they learn."},
        },
        "required": ["character", "text"],
        "additionalProperties": False,
    }
    description = (
        "Tell one player's character something privately (what only they notice, hear or know); the other "
        "players see only that something was whispered. Call it before narrate; never put the whisper in the narration."
    )
    return {"type": "function", "function": {"name": WHISPER, "description": description, "parameters": parameters}}


def whisper(seated_characters: frozenset[str], whispers: list[dict[str, Any]], raw: Any) -> dict[str, Any]:
    """Check a whisper call, keep the whisper in `whispers`, and return the tool's answer."""
    schema = whisper_schema(sorted(seated_characters))["function"]["parameters"]
    arguments = read_arguments(WHISPER, raw, ArgumentCheck(Draft202012Validator(schema), None))
    character, text = str(arguments["character"]), str(arguments["text"])
    if not text.strip():
        raise ModelRetry("whisper: text: say something; the whisper is empty")
    seated = {name.casefold(): name for name in seated_characters}
    if character.casefold() not in seated:
        raise ModelRetry(
            f"'{character}' has no seat at this table; whisper to one of {', '.join(sorted(seated_characters))}"
        )
    if len(text) > MAX_NARRATION_TEXT:
        raise ModelRetry(f"a whisper is at most {MAX_NARRATION_TEXT} characters")
    if len(whispers) >= MAX_WHISPERS:
        raise ModelRetry(f"a round holds at most {MAX_WHISPERS} whispers")
    whispers.append({"character": seated[character.casefold()], "text": text.strip()})
    return {"whispered": True, "character": seated[character.casefold()]}
