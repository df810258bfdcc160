"""What the web app serves from: one Game (store and model), the worlds folder, and the tokens."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gm._lru import LRU
from gm._text import unstorable
from gm.engine.game import Game
from gm.engine.table import OWNER, Viewer
from gm.errors import BrokenWorld, Forbidden, NotFound, ProblemsError, StoryNotFound, Unauthorized
from gm.store import Story
from gm.web._live import Hub
from gm.world.definition import DICE_FILE, WORLD_FILE, World
from gm.world.loading import LoadedWorlds

WORLD_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
CACHED_TOKENS = 4096  # stories whose token hash is kept (about 300 bytes each), so their rounds skip a database read


def hash_token(token: str) -> str:
    return hashlib.sha256(wire_bytes(token)).hexdigest()


def wire_bytes(header_text: str) -> bytes:
    """A token from a header as the bytes the client sent: HTTP headers arrive decoded as Latin-1, so a UTF-8
    token such as `tokén` is encoded back to its bytes and compares equal to the same token set on the server."""
    try:
        return header_text.encode("latin-1")
    except UnicodeEncodeError:  # not from a header after all (a caller of the library)
        return header_text.encode("utf-8", "surrogatepass")


@dataclass
class Service:
    """The app's state, injected into routes as a dependency."""

    game: Game
    worlds_dir: Path
    api_token: str | None = None  # GM_API_TOKEN: when set, needed to create stories
    # A story's token hash never changes, so a hash once read stays true until the story is deleted (`forget`).
    _tokens: LRU[str, str] = field(default_factory=lambda: LRU(CACHED_TOKENS), repr=False)
    _worlds: LoadedWorlds = field(default_factory=LoadedWorlds, repr=False)  # checked once per content, not per story
    hub: Hub = field(init=False, repr=False)  # the live streams of this process's stories (gm.web._live)

    def __post_init__(self) -> None:
        self.hub = Hub(self.game.store)

    def world_names(self) -> list[str]:
        """The worlds: folders directly in the worlds folder, with a world.json, none reached through a symbolic
        link that leads out of it (`inside`)."""
        if not self.worlds_dir.is_dir():
            return []
        root = self.worlds_dir.resolve()
        return sorted(
            entry.name
            for entry in self.worlds_dir.iterdir()
            if WORLD_NAME.match(entry.name) and (entry / WORLD_FILE).is_file() and inside(root, entry)
        )

    def world(self, name: str) -> World:
        """A world of the worlds folder by name; names and links are checked so nothing outside it is read.

        A broken world's sentence names its files relative to the worlds folder: a client never sees a path."""
        if not WORLD_NAME.match(name) or name not in self.world_names():
            raise NotFound(f"there is no world '{name}'")
        try:
            return self._worlds.load(self.worlds_dir / name)
        except ProblemsError as error:
            where = error.problems[0] if error.problems else None
            said = str(error).removeprefix(f"{error.source}: ") if where is not None else "it cannot be read"
            raise BrokenWorld(self.without_paths(f"the world '{name}' fails its check: {said}")) from None

    def without_paths(self, text: str) -> str:
        """`text` with the worlds folder's absolute path taken out, whichever way it was spelled."""
        for spelled in {str(self.worlds_dir.resolve()), str(self.worlds_dir.absolute())}:
            text = text.replace(spelled + "/", "").replace(spelled, "the worlds folder")
        return text

    def start(
        self,
        world_name: str,
        dice: str,
        judge: str | None = None,
        *,
        fair: bool = False,
        player_seed: str | None = None,
        dice_from: str = "engine",
        extra: dict[str, Any] | None = None,
    ) -> tuple[str, str]:
        """Start a story; returns its id and its secret token (shown once, stored only as a hash).

        `extra` settings are kept with the story's own (the chat endpoint's `chat_opening` and `chat_hint`)."""
        world = self.world(world_name)
        token = secrets.token_urlsafe(32)
        settings: dict[str, Any] = {"dice": dice} if judge is None else {"dice": dice, "judge": judge}
        settings |= extra or {}
        if dice_from != "engine":
            settings["dice_from"] = dice_from
        token_hash = hash_token(token)
        story_id = self.game.begin(world, settings=settings, token_hash=token_hash, fair=fair, player_seed=player_seed)
        self._tokens.put(story_id, token_hash)
        return story_id, token

    async def forget(self, story_id: str, *, force: bool = False) -> None:
        """Delete the story (`Game.delete`), and the token hash kept of it."""
        await self.game.delete(story_id, force=force)
        self._tokens.pop(story_id)

    def check_api_token(self, given: str | None) -> None:
        if self.api_token is None:
            return
        if given is None:
            raise Unauthorized("creating a story needs the server's API token (Authorization: Bearer ...)")
        # Compared as bytes: compare_digest refuses str holding anything but ASCII (a TypeError, so a 500).
        if not hmac.compare_digest(wire_bytes(given), self.api_token.encode("utf-8")):
            raise Unauthorized("the API token is wrong")

    def story(self, story_id: str, token: str | None) -> Story:
        """The story, if the token opens it; an unknown id and a wrong token look the same from outside.

        Reads the database: async code calls `open_story` or `check_token` instead."""
        if token is None:
            raise Unauthorized(NEEDS_TOKEN)
        try:
            story = self.game.store.story(story_id)
        except StoryNotFound:
            raise NotFound(f"there is no story '{story_id}' for this token") from None
        if story.token_hash is not None:
            self._tokens.put(story_id, story.token_hash)
        if not _matches(story.token_hash, token) and self.game.store.seat_by_token(hash_token(token), story_id):
            raise Forbidden(OWNER_ONLY)  # a seat of this story: it knows the story, and may not do this
        _opens(story.token_hash, story_id, token)
        return story

    async def open_story(self, story_id: str, token: str | None) -> Story:
        """`story`, read in a worker thread (Store.off_loop), so the event loop never waits on the database."""
        if token is None:
            raise Unauthorized(NEEDS_TOKEN)
        return await self.game.store.off_loop(self.story, story_id, token)

    async def check_token(self, story_id: str, token: str | None) -> None:
        """That the token opens the story (as `story`), without a database read for a story seen before."""
        if token is None:
            raise Unauthorized(NEEDS_TOKEN)
        known = self._tokens.get(story_id)
        if known is None or not _matches(known, token):
            await self.open_story(story_id, token)  # reads the story, and tells a seat's token (403) from a wrong one

    async def viewer(self, story_id: str, token: str | None) -> Viewer:
        """Who the token is at this story's table (gm.engine.table): its owner (`OWNER`, without a database read for
        a story seen before), or one of its live seats; `Unauthorized` without a token, `NotFound` for any other.

        Seats are read from the database each time, so a revoked seat opens nothing, in every process, at once."""
        if token is None:
            raise Unauthorized(NEEDS_TOKEN)
        known = self._tokens.get(story_id)
        if known is not None and _matches(known, token):
            return OWNER
        return await self.game.store.off_loop(self._viewer, story_id, token)

    def _viewer(self, story_id: str, token: str) -> Viewer:
        store = self.game.store
        seat = store.seat_by_token(hash_token(token), story_id) if not unstorable(story_id) else None
        if seat is None:
            self.story(story_id, token)  # the owner's token of a story not seen before, or NotFound
            return OWNER
        seated = frozenset(other.character for other in store.seats(story_id, live=True))
        return Viewer(seat.id, seat.character, seated, seat.dice)

    def seated(self, story_id: str) -> frozenset[str]:
        """The characters with a live seat at the story's table (reads the database)."""
        return frozenset(seat.character for seat in self.game.store.seats(story_id, live=True))


NEEDS_TOKEN = "this story needs its token (Authorization: Bearer ...)"
WORLD_FILES = (WORLD_FILE, DICE_FILE)


def inside(root: Path, folder: Path) -> bool:
    """Whether the world `folder` and its files stay inside `root` (the worlds folder, resolved) once symbolic
    links are followed: a link to a world elsewhere, or to a file such as /etc/passwd, is not served."""
    resolved = folder.resolve()
    if resolved.parent != root:
        return False
    return all((folder / name).resolve().is_relative_to(resolved) for name in WORLD_FILES if (folder / name).exists())


OWNER_ONLY = "only the story's owner may do this; a seat's token plays its own character"


def _matches(token_hash: str | None, token: str) -> bool:
    return token_hash is not None and hmac.compare_digest(token_hash, hash_token(token))


def _opens(token_hash: str | None, story_id: str, token: str) -> None:
    """`NotFound` unless `token` is the one whose hash the story keeps (a local story has none, and opens to none)."""
    if token_hash is None or not hmac.compare_digest(token_hash, hash_token(token)):
        raise NotFound(f"there is no story '{story_id}' for this token")
