"""The story API's integrity endpoints: reveal a fair story's seed, and audit a story's dice.

Both need the story's token, as every request about a story does. A reveal takes the story's round
lease, so it answers 409 while a round is being played, and 409 for a story without fair dice.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from gm.integrity.audit import audit
from gm.integrity.seeds import reveal
from gm.web._transcript_page import viewed_transcript
from gm.web.api import ServiceDep, TokenDep
from gm.web.schemas import errors

router = APIRouter(prefix="/api")


@router.post("/stories/{story_id}/reveal", responses=errors(401, 403, 404, 409))
def reveal_seed(story_id: str, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """Publish the seed a fair story's rolls were derived from so far, and commit a fresh one for the next."""
    app.story(story_id, token)
    revealed = reveal(app.game.store, story_id)
    return {"revealed": revealed.revealed.model_dump(mode="json"), "next": revealed.next.model_dump(mode="json")}


@router.get("/stories/{story_id}/audit", responses=errors(401, 404))
async def audit_story(story_id: str, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """Check the story's dice as `gm audit` does; `ok` is false, with every mismatch, when anything is off.
    Over the transcript the token reads (a seat's view at a shared table: docs/table.md)."""
    viewer = await app.viewer(story_id, token)
    read = await app.game.store.off_loop(viewed_transcript, app, story_id, viewer)
    return audit(read).to_json()  # sealed secret rolls as stubs
