"""A story's transcript as the one asking reads it (gm.web.api): whole for an audit, or a page of its rounds.

`GET /api/stories/{id}` answers a page: the newest `PAGE_ROUNDS` rounds unless `after` and `limit` ask for
others (`gm.transcript.shapes.PagePublic` says which, and whether earlier or later rounds exist), so a long
story's answer stays bounded (issue 40, hole 6). `GET .../audit`, `gm show` and `gm audit` read it whole.
"""

from __future__ import annotations

from gm.engine.table import OWNER, Viewer
from gm.engine.transcript import transcript
from gm.transcript.shapes import TranscriptPublic
from gm.web.service import Service

PAGE_ROUNDS = 200  # a transcript page's rounds unless the request asks for fewer or more
MOST_PAGE_ROUNDS = 1000
MOST_ROUND = 2**31 - 1  # `after` past any round a story can have, and within every database's integers
AFTER = "the rounds of the page are those numbered above this; without it, the newest rounds"
LIMIT = f"at most this many rounds, 1 to {MOST_PAGE_ROUNDS}"


def viewed_transcript(
    app: Service, story_id: str, viewer: Viewer, limit: int | None = None, after: int | None = None
) -> TranscriptPublic:
    """The transcript as `viewer` reads it (whole, or a page of `limit` rounds: `transcript`); the owner's of a
    story without seats is today's player transcript."""
    if viewer.is_owner:
        seated = app.seated(story_id)
        viewer = Viewer(seated=seated) if seated else viewer
    seen = None if viewer is OWNER else viewer
    return transcript(app.game.store, story_id, player=True, viewer=seen, limit=limit, after=after)
