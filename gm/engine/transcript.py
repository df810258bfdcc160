"""A story's transcript, read from the store in the public shapes, and its dice cards in words.

`transcript()` gives what `gm show STORY --json` prints and the web API serves; its shape is
described in `gm.transcript.shapes`. `card()` and `opened()` are the dice cards the terminal chat and `gm show`
print (the play page draws the same words in play.js).
"""

from __future__ import annotations

from gm.engine.table import Viewer, sealed_for, view_round
from gm.integrity.secret import sealed_ids, stub, visible
from gm.store import FORKED_FROM, Store, Story, TableMessage
from gm.transcript.shapes import (
    IntegrityPublic,
    PagePublic,
    RollPublic,
    RoundPublic,
    SeedPublic,
    StoryPublic,
    TranscriptPublic,
)
from gm.transcript.sheet_view import change_text, sheet_lines
from gm.transcript.sheets import ChangePublic, SheetsPublic
from gm.transcript.table import MessagePublic, TablePublic
from gm.world.definition import World, whole_number, world_from_data
from gm.world.sheet import value_text

RESULT_WORDS = {"succeeded": "success", "partial": "partial success", "failed": "failure"}


def transcript(
    store: Store,
    story_id: str,
    *,
    player: bool = False,
    viewer: Viewer | None = None,
    limit: int | None = None,
    after: int | None = None,
) -> TranscriptPublic:
    """The whole story in its public shape, with what an audit of it needs (`integrity`); with `limit`, a page
    of at most that many rounds: those numbered above `after`, or the newest (`PagePublic` says which).

    `player=True` is the player's transcript (the story token's): secret rolls not yet revealed have no
    card in their rounds, and are sealed stubs in the chain (gm.integrity.secret). The operator's sees everything.
    At a shared table, `viewer` says who reads it (gm.engine.table): a seat sees its own character's secret rolls
    and whispers, and its own Dice setting; whispers to others are there without their text.
    """
    if viewer is not None:
        player = True
    story = store.story(story_id)
    world = world_from_data(story.world_data, story.dice_data)
    unfinished = store.unfinished_attempts(story_id)
    if limit is None:
        records = store.rounds(story_id)
    else:
        records = store.rounds(story_id, last=limit) if after is None else store.rounds(story_id, after, limit=limit)
    page = None if limit is None else page_of([record.number for record in records], story.rounds, limit, after)
    rounds = [RoundPublic.from_record(record, world, unfinished) for record in records]
    changes = [ChangePublic.from_stored(change) for change in store.sheet_changes(story_id)]
    by_round: dict[int, list[ChangePublic]] = {}
    for change in changes:
        by_round.setdefault(change.round, []).append(change)
    for round_ in rounds:
        round_.changes = by_round.get(round_.number, [])
    inherited = store.inherited_rolls(story)  # a fork's chain begins with its parent's rolls (gm.store._forks)
    sealed = player_sealed(store, story, world) if player else set()
    stored_rolls = [RollPublic.from_stored(roll, world) for roll in [*inherited, *store.story_rolls(story_id)]]
    if viewer is not None:
        sealed = sealed_for(viewer, sealed, stored_rolls)
        rounds = [view_round(round_, viewer, sealed) for round_ in rounds]
    for round_ in rounds:
        round_.rolls = visible(round_.rolls, sealed)
    seeds = [SeedPublic.from_record(seed) for seed in store.seeds(story_id)]
    current = next((seed.commitment for seed in seeds if seed.epoch == story.seed_epoch), None)
    integrity = IntegrityPublic(
        fair=story.fair,
        player_seed=story.player_seed,
        seeds=seeds,
        chain_length=story.chain_length,
        chain_head=story.chain_head,
        legacy_rolls=story.legacy_rolls,
        dice=story.dice_data,
        modifiers=modifiers(world),
        forked_from=story.settings.get(FORKED_FROM),
        rolls=[stub(public) if public.id in sealed else public for public in stored_rolls],
        sheet_start=world.start_sheets if world.sheet_changes else None,
        sheet_length=story.sheet_length,
        sheet_head=story.sheet_head,
        messages=[message_public(message) for message in store.table_messages(story_id)] if story.messages else [],
        messages_length=story.messages,
        messages_head=story.messages_head,
    )
    public = story_public(store, story, current, viewer)
    if page is not None and not page.whole:  # the chain's links of the page's rounds only
        parents = {roll.id for roll in inherited}
        integrity.rolls = [roll for roll in integrity.rolls if on_page(page, roll.round, roll.id not in parents)]
        integrity.messages = [message for message in integrity.messages if on_page(page, message.round, True)]
    return TranscriptPublic(story=public, rounds=rounds, integrity=integrity, page=page)


def page_of(numbers: list[int], rounds: int, limit: int, after: int | None) -> PagePublic:
    """The page of a story of `rounds` rounds that holds the rounds `numbered` (above `after`, or the newest)."""
    if after is None:
        after = numbers[0] - 1 if numbers else rounds
    last = numbers[-1] if numbers else None
    earlier, later = min(after, rounds) > 0, (last if last is not None else after) < rounds
    first = numbers[0] if numbers else None
    whole = not earlier and not later
    return PagePublic(
        rounds=rounds, after=after, limit=limit, first=first, last=last, earlier=earlier, later=later, whole=whole
    )


def on_page(page: PagePublic, round_number: int | None, own: bool) -> bool:
    """Whether a link of the chain (a roll, a table's message) of this round belongs on a page that is not whole:
    its round is on the page, or not yet accepted (null, or after the last) on the newest page. A roll of a
    story's parent (not `own`) is before every round of the fork."""
    if not own:
        return not page.earlier
    if round_number is None or round_number > (page.last or page.after):
        return not page.later
    return round_number > page.after


def player_sealed(store: Store, story: Story, world: World) -> set[int]:
    """The ids of the rolls the story's player may not see yet: its own sealed secret rolls, and an inherited
    secret roll as long as it is sealed in the story it was rolled in (gm.integrity.secret). Every route
    that shows a player dice (the transcript, a chat's `/open`) leaves these out."""
    sealed = sealed_ids(store, story.id, world)
    for rolled_in in {roll.story_id for roll in store.inherited_rolls(story)}:
        sealed |= sealed_ids(store, rolled_in, world)
    return sealed


def sheets(store: Store, story_id: str) -> SheetsPublic:
    """The story's sheets now, in words too, and every change its accepted rounds made (`SheetsPublic`)."""
    story = store.story(story_id)
    current = story.sheet
    shown = {
        name: {key: value_text(entry) for key, entry in entries.items()} for name, entries in (current or {}).items()
    }
    changes = [ChangePublic.from_stored(change) for change in store.sheet_changes(story_id)]
    return SheetsPublic(story=story_id, sheet=current, shown=shown, changes=changes)


def story_public(
    store: Store, story: Story, commitment: str | None = None, viewer: Viewer | None = None
) -> StoryPublic:
    """A story in its public shape, with a fair story's current commitment (and, at a shared table, who sits
    there and who is looking: `viewer`)."""
    if story.fair and commitment is None:
        commitment = store.current_seed(story.id).commitment
    public = StoryPublic.from_record(story, commitment)
    public.asking = store.question(story.id)  # a round waiting for the player's dice (gm.engine.typed_dice)
    if viewer is not None:
        public.table = TablePublic(seats=sorted(viewer.seated), seat=viewer.seat, character=viewer.character)
        if viewer.dice is not None:
            public.settings.dice = "hidden" if viewer.dice == "hidden" else "shown"
    return public


def message_public(message: TableMessage) -> MessagePublic:
    """A link of the table's message chain in its public shape."""
    return MessagePublic(
        seq=message.seq,
        seat=message.seat_id,
        character=message.character,
        text=message.text,
        round=message.round_number,
        prev_hash=message.prev_hash,
        hash=message.hash,
    )


def modifiers(world: World) -> dict[str, dict[str, int]]:
    """Each character's number variables that some check adds to its rolls (what an audit needs of the world)."""
    named = {check.modifier for check in world.rules.checks if check.modifier} if world.rules else set()
    found: dict[str, dict[str, int]] = {}
    for character in world.characters:
        numbers = {
            name: number
            for name, value in character.variables.items()
            if name in named and (number := whole_number(value)) is not None
        }
        if numbers:
            found[character.name] = numbers
    return found


def card(roll: RollPublic) -> str:
    """The one-line dice card of a roll: "Lockpicking - Mara: Partial success" ("Mara vs Tomas" opposed)."""
    who = roll.character or "the game master"
    if roll.kind == "check":
        if roll.opponent:
            who = f"{who} vs {roll.opponent}"
        told = "void (no band)" if roll.void else str(roll.band)
        return f"{roll.check_name or roll.check} - {who}: {told}"
    if roll.kind == "player":
        purpose = f" for {roll.reason}" if roll.reason else ""
        return f"Roll - {who}: {roll.notation}{purpose} = {roll.total}"
    purpose = f" ({roll.reason})" if roll.reason else ""
    return f"Dice{purpose}: {roll.notation} = {roll.total}"


def opened(roll: RollPublic) -> str:
    """The card opened: the full dice line, and for a check how the value was read."""
    earlier = ", rolled in an earlier attempt" if roll.from_earlier_attempt else ""
    earlier += ", typed at the table" if roll.typed else ""  # faces the player rolled and typed (gm.engine.typed_dice)
    if roll.kind != "check":
        return f"{card(roll)}  [{roll.dice}{earlier}]"
    reading = f"with {roll.edge}: {roll.dice}" if roll.edge else roll.dice
    if roll.opponent:
        reading += f", {roll.modifier:+d} against {roll.opponent} {roll.opponent_modifier or 0:+d}"
    elif roll.modifier:
        reading += f", {roll.modifier:+d}"
    if roll.target is not None:
        reading += f", target {roll.target}"
    reading += f" -> {roll.value}"
    result = "" if roll.void else f", {RESULT_WORDS.get(str(roll.result), roll.result)}"
    critical = ", critical" if roll.critical else ""
    natural = f"; {roll.natural}" if roll.natural else ""
    return f"{card(roll)}  [{reading}{result}{critical}{natural}{earlier}]"


def opened_lines(roll: RollPublic) -> list[str]:
    """The opened card as the terminal shows it: `opened()`, then, for a check, the odds of each band
    at the moment of the roll on a line of its own (the play page's second line)."""
    return [opened(roll), f"  odds {odds_text(roll)}"] if roll.chances else [opened(roll)]


def percent(probability: str) -> str:
    """A fraction in text ("9/20") as a percentage with one decimal, halves rounded up ("45.0%");
    integer arithmetic, so the play page (play.js) writes the same digits."""
    top, _, bottom = probability.partition("/")
    numerator, denominator = int(top), int(bottom or 1)
    tenths = (numerator * 2000 + denominator) // (2 * denominator)
    return f"{tenths // 10}.{tenths % 10}%"


def odds_text(roll: RollPublic) -> str:
    """Each band's chance at the moment of the roll: "Failure 45.0%, Success 50.0%, ..."; "about" for an estimate."""
    chances = roll.chances or []
    about = "" if all(chance.exact for chance in chances) else "about "
    return about + ", ".join(f"{chance.label} {percent(chance.probability)}" for chance in chances)


def render_transcript(data: TranscriptPublic) -> str:
    """The transcript as text for `gm show`."""
    story = data.story
    lines = [f"{story.title} ({story.id}), {story.rounds} rounds, dice {story.settings.dice}"]
    lines += [f"Note: {notice}." for notice in story.notices]
    if story.time is not None:
        lines.append(f"Now: {story.time}")
    if story.sheet is not None:  # the characters' sheets now, as the database holds them (gm.transcript.sheet_view)
        lines += ["Sheets now:", *(f"  {line}" for line in sheet_lines(story.sheet))]
    if story.fair:
        lines.append(f"Fair dice: the next rolls' seed has the commitment {story.commitment}")
        integrity = data.integrity
        for seed in integrity.seeds if integrity else []:
            if seed.seed is not None:
                lines.append(f"  seed {seed.epoch} (rolls {seed.first_roll}-{seed.last_roll}) revealed: {seed.seed}")
        if integrity and integrity.player_seed is not None:
            lines.append(f"  mixed with the player's seed {integrity.player_seed!r}")
    for record in data.rounds:
        lines += ["", f"## Round {record.number}", f"> {record.player_text}", "", record.narration]
        if record.time is not None:
            lines.append(f"  [time] {record.time}")
        for roll in record.rolls:
            first, *more = opened_lines(roll)
            lines.append(f"  [dice] {first}")
            lines += [f"        {line}" for line in more]
        for outcome in record.outcomes:
            via = f" (roll {outcome.roll})" if outcome.roll is not None else ""
            lines.append(f"  [outcome] {outcome.character}: {outcome.result}{via}")
        lines += [f"  [sheet] {change_text(change)}" for change in record.changes]
        if record.judge is not None:
            for verdict in record.judge.verdicts:
                quote = f" ('{verdict.quote}')" if verdict.quote else ""
                lines.append(
                    f"  [judged by {record.judge.model}] {verdict.character}: told as {verdict.told_as}{quote}"
                )
        for refusal in record.refusals:
            lines.append(f"  [refused] {refusal}")
    return "\n".join(lines)
