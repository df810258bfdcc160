"""Folders of the repository the tests read: the sample worlds, OpenAI's schemas, the front ends' requests, and the
root itself."""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SAMPLE_WORLDS = REPOSITORY / "worlds"
OPENAI_SCHEMAS = REPOSITORY / "tests" / "openai"  # OpenAI's chat-completion request and response schemas
FRONT_END_FIXTURES = REPOSITORY / "tests" / "fixtures" / "front_ends"  # what Open WebUI and SillyTavern really sent
ARTIFACTS = REPOSITORY / "tests" / "artifacts"  # screenshots the browser tests leave (ignored by git)
