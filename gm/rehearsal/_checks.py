"""Which check the rehearsal stand-in rolls, for whom, and at what target (see `gm.rehearsal.model`).

Which check (`choose_check`): the player's words and each check's key, name and `use` are made into
sets of words: lower case, split on anything but letters and digits (so `pick_lock` is two words),
words of one letter and very common words (`COMMON_WORDS`: articles, pronouns, prepositions,
auxiliaries, "try") dropped, and crudely stemmed (`stem`: a trailing "ing" or "ed", then a doubled
final consonant, or a trailing "s" but not "ss"; then a final silent "e", so picks, picked and picking
all become pick, and hide, hides and hiding all become hid).
A check scores the number of distinct words it shares with the player's text. The highest score
wins, ties going to the check listed first in dice.json; a check that scores 0 is never rolled. If
the character cannot be rolled for with a check (it lacks the check's modifier variable), or no roll
of it could go either way for them (`gm.rules.chances.can_go_either_way`: an absolute check their modifier
puts beyond every band edge, or an over/under check certain at every target), the next best check
that scores above 0 is tried.

The catch-all (`catch_all`): when no check that shares a word can be rolled, the world's catch-all
check is rolled instead, if it has one that can be: the first check whose `use` says it covers any
action, that is, has the word "any" and later in the same sentence "action" or "actions" ("Any risky
action no other check covers: ..."). So "I sneak past the guard" in harbour-heist rolls its Risky
attempt although no word of it matches. Words that only let time pass (the round moved the story's
clock, as "I wait until nightfall" does) roll no catch-all: waiting is no risky action.

Who: the first character with the role "player"; with several, the player named in the text (the
earliest named, as a whole word, ignoring case), else the first.

Targets (`target_for`): an `absolute` (or `opposed`) check gets none. An `over` check gets a middling difficulty:
the mean of what its dice read (total, or count of successes) rounded half up, so that without a
modifier the roll meets the target about half the time (exactly half for one die: 11 for 1d20,
7 for 2d6); the character's modifier then shifts the odds as it should. An `under` check gets the
character's whole-number variable whose name shares the most words with the check's key, name and
use (the check's own modifier variable excluded; ties go to the variable listed first), so a
"medicine" check rolls under the character's "medicine"; with no such variable, the mean rounded
half down (50 for d%, the midpoint of the range for dice without keep or drop). A target at which
every roll would give the same result (`gm.rules.chances.certain`; the engine refuses such a roll) is
moved to the nearest target at which the roll can go either way (the lower on a tie), so a
character's skill of 0, or of 150 on d%, still gets a roll that can fail and succeed.

Table rules (`edge_for`, `opponent_for`): a check with advantage (or disadvantage) dice is rolled with
that edge when the player's words say "advantage" (or "disadvantage"), so a rehearsal can try each
edge. An opposed check is rolled against the character named in the text other than the actor (the
earliest named), else the first other character it can be rolled for; with none, it is passed over.
Naturals need nothing: the engine applies them, and the narration repeats what they did.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from gm import dice
from gm.errors import CharacterCannotRoll
from gm.rules.chances import can_go_either_way, certain, nearest_uncertain_target
from gm.rules.checks import Check, Edge
from gm.world.definition import Character, World, modifier_for, whole_number

ESTIMATE_SAMPLES = 20_000  # for the mean of dice too costly for exact odds; a target needs no more

_COMMON = """
    a an the and or but nor so yet if then than as at by for from in into onto of off on out over
    under up down to toward towards with without within through about above across after against
    along among around before behind below beneath beside between beyond during near past since
    until upon via i me my mine myself we us our ours you your yours he him his she her hers it its
    they them their theirs this that these those there here what which who whom whose when where why
    how is are was were be been being am do does did done doing have has had having will would can
    could shall should may might must let lets not no yes all any some each every both either neither
    other another such own same just very too also only again once more most much many few now still
    try tries tried trying get gets got go goes going went
"""
COMMON_WORDS = frozenset(_COMMON.split())

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> frozenset[str]:
    """The distinct stemmed words of `text` that carry meaning (see the module docstring)."""
    found: set[str] = set()
    for word in _WORD.findall(text.casefold()):
        if len(word) < 2 or word in COMMON_WORDS:
            continue
        stemmed = stem(word)
        if stemmed not in COMMON_WORDS:
            found.add(stemmed)
    return frozenset(found)


def stem(word: str) -> str:
    """A crude stem: "ing" (3 letters left) or "ed" (4 left) dropped, then a doubled final consonant
    (not l, s or z) halved; or else a final "s" (3 letters left, not "ss") dropped, and then a final
    "e" (3 letters left, not "ee"), so that "hide" meets "hiding" at "hid"."""
    for ending, left in (("ing", 3), ("ed", 4)):
        if word.endswith(ending) and len(word) - len(ending) >= left:
            word = word[: -len(ending)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouylsz":
                word = word[:-1]
            return word
    if word.endswith("s") and not word.endswith("ss") and len(word) - 1 >= 3:
        word = word[:-1]
    if word.endswith("e") and not word.endswith("ee") and len(word) - 1 >= 3:
        word = word[:-1]
    return word


def check_words(check: Check) -> frozenset[str]:
    """The words a check is matched by: its key, name and use."""
    return words(f"{check.key} {check.name} {check.use}")


def score(check: Check, text: str) -> int:
    """How many distinct words the player's `text` shares with the check's key, name and use."""
    return len(words(text) & check_words(check))


def ranked_checks(world: World, text: str) -> list[Check]:
    """The world's checks that share a word with `text`, best first; ties keep dice.json's order."""
    if world.rules is None:
        return []
    scored = [(score(check, text), index, check) for index, check in enumerate(world.rules.checks)]
    return [check for points, _, check in sorted(scored, key=lambda item: (-item[0], item[1])) if points > 0]


def acting_player(world: World, text: str) -> Character:
    """The player character who acts: with several players, the one named earliest in `text`, else the first."""
    players = world.players
    if len(players) == 1:
        return players[0]
    named: list[tuple[int, Character]] = []
    for player in players:
        found = re.search(rf"(?<!\w){re.escape(player.name)}(?!\w)", text, re.IGNORECASE)
        if found:
            named.append((found.start(), player))
    return min(named, key=lambda item: item[0])[1] if named else players[0]


_CATCH_ALL = re.compile(r"\bany\b[^.;:!?]*\bactions?\b", re.IGNORECASE)


def is_catch_all(check: Check) -> bool:
    """Whether `check` is a catch-all: its `use` says it covers any action (see the module docstring)."""
    return _CATCH_ALL.search(check.use) is not None


def catch_all(world: World) -> Check | None:
    """The world's catch-all check: the first whose `use` says it covers any action; None if none does."""
    if world.rules is None:
        return None
    return next((check for check in world.rules.checks if is_catch_all(check)), None)


def choose_check(world: World, text: str, *, catch_all_ok: bool = True) -> tuple[Check, Character] | None:
    """The best-matching check that can be rolled for the acting player, and go either way for them,
    and that player; else (unless `catch_all_ok` is False) the world's catch-all, if it can be; None if neither."""
    character = acting_player(world, text)
    for check in ranked_checks(world, text):
        if why_not_rolled(check, character) is None and (
            not check.opposed or opponent_for(world, check, character, text) is not None
        ):
            return check, character
    fallback = catch_all(world) if catch_all_ok else None
    if fallback is not None and why_not_rolled(fallback, character) is None:
        return fallback, character
    return None


def edge_for(check: Check, text: str) -> Edge | None:
    """The edge the player's words ask for, if the check declares dice for it."""
    said = words(text)
    for edge in ("disadvantage", "advantage"):
        if stem(edge) in said and check.dice_for(edge) is not None:  # `words` stems: "disadvantag"
            return edge
    return None


def opponent_for(world: World, check: Check, actor: Character, text: str) -> Character | None:
    """Who resists an opposed check: the other character named earliest in `text`, else the first
    other character the check can be rolled for."""
    others = [character for character in world.characters if character.name != actor.name]
    able = []
    for character in others:
        try:
            modifier_for(check, character)
        except CharacterCannotRoll:
            continue
        able.append(character)
    named = [
        (found.start(), character)
        for character in able
        if (found := re.search(rf"(?<!\w){re.escape(character.name)}(?!\w)", text, re.IGNORECASE))
    ]
    if named:
        return min(named, key=lambda item: item[0])[1]
    return able[0] if able else None


def why_not_rolled(check: Check, character: Character) -> str | None:
    """Why the rehearsal never rolls `check` for `character`, in words; None when it can."""
    try:
        modifier = modifier_for(check, character)
    except CharacterCannotRoll:
        return f"{check.name} cannot be rolled for {character.name}, who lacks its modifier variable"
    if can_go_either_way(check, modifier):
        return None
    if check.needs_target:
        return f"{check.name} can only end one way for {character.name}, whatever the target"
    settled = certain(check, None, modifier)
    assert settled is not None  # an absolute check that cannot go either way is certain
    return f"{settled.every_roll(character.name)}, so its outcome is certain"


def target_for(check: Check, character: Character) -> int | None:
    """The target the rehearsal gives a roll of `check` for `character` (see the module docstring)."""
    if not check.needs_target:
        return None
    wanted = _preferred_target(check, character)
    try:
        modifier = modifier_for(check, character)
    except CharacterCannotRoll:
        return wanted  # never rolled for them (see choose_check); the target is only for show
    if certain(check, wanted, modifier) is None:
        return wanted
    nearest = nearest_uncertain_target(check, modifier, wanted)
    return wanted if nearest is None else nearest


def _preferred_target(check: Check, character: Character) -> int:
    """The middling target, before any move away from a certain one."""
    mean = _mean(check)
    if check.compare == "over":
        return math.floor(mean + Fraction(1, 2))
    wanted = check_words(check)
    best: tuple[int, int] | None = None  # (shared words, value)
    for name, value in character.variables.items():
        number = whole_number(value)
        if number is None or name == check.modifier:
            continue
        shared = len(words(name) & wanted)
        if shared > 0 and (best is None or shared > best[0]):
            best = (shared, number)
    return best[1] if best is not None else math.ceil(mean - Fraction(1, 2))


def _mean(check: Check) -> Fraction:
    """The mean of what the check's dice read: the total, or the count of successes."""
    return _mean_of(check.dice.text, check.hit if check.reading == "successes" else None)


@functools.lru_cache(maxsize=256)
def _mean_of(notation: str, hit: int | None) -> Fraction:
    # Kept by notation: exact odds of big dice can take a second or two, and a check is rolled every round.
    return dice.odds(notation, hit, samples=ESTIMATE_SAMPLES).mean
