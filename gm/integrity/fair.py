"""Provably fair dice: every face derived from a committed secret seed, so anyone can check it once revealed.

The recipe (a player can redo it with nothing but SHA-256 and HMAC):

- The story's seed is 32 bytes from the system's random source, kept as 64 hex digits. Its
  commitment, published when the seed is drawn, is the hex SHA-256 of those 32 bytes.
- The key is the seed's bytes; if the player gave a seed of their own when the story started, the key
  is HMAC-SHA256(seed bytes, "gm-player-seed:" + the player's seed in UTF-8) instead.
- Roll number R of the story (1, 2, 3...: its place in the story's chain, `seq` in the transcript) and
  die I of that roll (0, 1, 2...: its dice in the order the notation writes them, dropped dice too;
  within a term, one face for every die, then each reroll and each explosion in the order rolled, as
  docs/dice-notation.md says; a Fudge die is derived as a d3 whose faces 1, 2, 3 read -, 0, +)
  read HMAC-SHA256(key, "gm-dice:" story id ":" R ":" I ":" B) for B = 0, 1, 2...: each digest is
  eight 32-bit big-endian words, and the first word w below 2^32 - (2^32 mod S) gives the face
  w mod S + 1 of an S-sided die. Words at or above that limit are skipped (rejection sampling), so
  every face has exactly the same chance; for any die gm allows, a skip is rarer than one in four million.
- A check rolled with an edge rolls its edge's notation (`2d20kh1`), and an opposed check's roll is
  one notation, the actor's dice then the opponent's (`1d20-1d20`): their dice are numbered as written.

Revealing a seed (`gm reveal`) publishes it and commits a fresh one for the rolls that follow
(the next *epoch*), so the rolls after a reveal stay as unpredictable as those before it.
Pure: the seed is drawn with `secrets`; nothing here reads or writes anything else.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata

from gm import dice
from gm.errors import PlayerSeedError

SEED_BYTES = 32
MAX_PLAYER_SEED = 200
_WORDS = tuple(range(0, 32, 4))


def new_seed() -> str:
    """A fresh secret seed from the system's random source, as 64 hex digits."""
    return secrets.token_hex(SEED_BYTES)


def commitment(seed: str) -> str:
    """The published commitment to a seed: the hex SHA-256 of its bytes."""
    return hashlib.sha256(bytes.fromhex(seed)).hexdigest()


def check_player_seed(text: str) -> str:
    """A player's seed as given, or `PlayerSeedError` if it is empty, too long or holds control characters."""
    if not text or not text.strip():
        raise PlayerSeedError("the player's seed is empty; leave it out, or give some words or digits")
    if len(text) > MAX_PLAYER_SEED:
        raise PlayerSeedError(
            f"the player's seed is {len(text)} characters long, at most {MAX_PLAYER_SEED} are allowed"
        )
    for column, char in enumerate(text, 1):
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            raise PlayerSeedError(
                f"the player's seed has a control character (U+{ord(char):04X}) at column {column}; "
                "use letters, digits, spaces and punctuation"
            )
    return text


def key_for(seed: str, player_seed: str | None) -> bytes:
    """The HMAC key the faces are derived with: the seed, with the player's seed mixed in if there is one."""
    raw = bytes.fromhex(seed)
    if player_seed is None:
        return raw
    return hmac.digest(raw, b"gm-player-seed:" + player_seed.encode("utf-8"), "sha256")


def face(key: bytes, story_id: str, roll: int, die: int, sides: int) -> int:
    """The face of die `die` of roll `roll` of a story, from 1 to `sides`, derived as the module says."""
    return _face(key, f"gm-dice:{story_id}:{roll}:{die}:".encode(), sides)


def _face(key: bytes, prefix: bytes, sides: int) -> int:
    limit = (1 << 32) - (1 << 32) % sides
    block = 0
    while True:
        digest = hmac.digest(key, prefix + str(block).encode(), "sha256")
        for start in _WORDS:
            word = int.from_bytes(digest[start : start + 4], "big")
            if word < limit:
                return word % sides + 1
        block += 1


def derive_faces(key: bytes, story_id: str, roll: int, notation: str | dice.Expression) -> list[list[int]]:
    """All the faces of one roll of `notation`, term by term, as a roll stores them: the roll made again
    with the derived faces, so rerolls and explosions take their faces exactly as the roll did."""
    expression = notation if isinstance(notation, dice.Expression) else dice.parse(notation)
    rolled = dice.roll(expression, FairDice(key, story_id, roll, 0).start_roll())
    return [list(faces) for faces in rolled.faces]


class FairDice:
    """The dice source of a fair story's attempt: faces derived from the current seed, roll by roll.

    `start_roll` begins the next roll (the store then writes it as roll number `next_roll` of the
    story, and refuses it under any other number); `take_number` gives that number and the seed's
    epoch to the roll's record when it is written, and moves on to the next.
    """

    def __init__(self, key: bytes, story_id: str, next_roll: int, epoch: int) -> None:
        self.key = key
        self.story_id = story_id
        self.next_roll = next_roll
        self.epoch = epoch
        self._die = 0

    def start_roll(self) -> FairDice:
        """Begin a roll: its dice are numbered from 0 again."""
        self._die = 0
        return self

    def __call__(self, count: int, sides: int) -> list[int]:
        roll = f"gm-dice:{self.story_id}:{self.next_roll}:"
        faces = [_face(self.key, f"{roll}{self._die + index}:".encode(), sides) for index in range(count)]
        self._die += count
        return faces

    def take_number(self) -> tuple[int, int]:
        """The roll number and seed epoch of the roll just rolled, as it is written; the next roll gets the next."""
        taken = (self.next_roll, self.epoch)
        self.next_roll += 1
        return taken
