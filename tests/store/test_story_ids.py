"""Story ids as a person types them: a unique start of 6 or more characters stands for the whole id
wherever one is typed (`gm show`, `gm play --story`, `gm audit`, `gm reveal`), an ambiguous start says so;
and `gm stories` counts rounds in words and dates stories with their timezone. SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from gm.errors import AmbiguousStory, StoryNotFound
from gm.store import Store, Story
from tests.support.command_line import gm
from tests.support.worlds import HARBOR_DICE, HARBOR_WORLD

TWINS = ("abcdef0123" + "0" * 22, "abcdef0199" + "0" * 22)
LONER = "123456789a" + "0" * 22


def add(store: Store, story_id: str, rounds: int = 0) -> None:
    story = Story(
        id=story_id,
        title="The Harbour Job",
        world_data=HARBOR_WORLD,
        dice_data=HARBOR_DICE,
        settings={"dice": "shown"},
        rounds=rounds,
    )
    store.create_story(story)


@pytest.fixture
def stories(store: Store) -> Store:
    for story_id in (*TWINS, LONER):
        add(store, story_id, rounds=1 if story_id == LONER else 2)
    return store


def test_a_unique_start_of_six_or_more_characters_finds_the_story(stories: Store) -> None:
    assert stories.find_story_id(LONER) == LONER
    assert stories.find_story_id("123456") == LONER
    assert stories.find_story_id("  123456789A ") == LONER  # as pasted: spaces and case do not matter
    assert stories.find_story_id("abcdef012") == TWINS[0]


def test_an_ambiguous_or_short_start_is_refused(stories: Store) -> None:
    with pytest.raises(AmbiguousStory, match=rf"'abcdef' is the start of more than one story's id \({TWINS[0]}, "):
        stories.find_story_id("abcdef")
    for typed in ("12345", "", "abcdef%", "abcdef_", "zzzzzzzz", "123456789b"):
        with pytest.raises(StoryNotFound):
            stories.find_story_id(typed)


def test_an_id_no_story_can_have_is_not_found_and_shown_escaped(stories: Store, database_url: str) -> None:
    """A NUL, or half a surrogate pair (bytes that were not UTF-8 on the command line), is one sentence."""
    for typed in ("123456\x00", "\udcff\udcfe", "\x00" * 7):
        with pytest.raises(StoryNotFound) as refused:
            stories.find_story_id(typed)
        assert "\\x00" in str(refused.value) or "\\udcff" in str(refused.value)
    shown = gm("show", "\udcff\udcfe1234", env={"GM_DATABASE_URL": database_url})
    assert shown.returncode == 2, shown.stderr
    assert shown.stderr.startswith("error: there is no story '\\udcff\\udcfe1234'"), shown.stderr


def test_commands_take_a_shortened_id(stories: Store, database_url: str) -> None:
    env = {"GM_DATABASE_URL": database_url}
    shown = gm("show", "123456", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["story"]["id"] == LONER
    audited = gm("audit", "1234567", env=env)  # found (its made-up round count does not check out: exit 1)
    assert audited.stdout.startswith(f"story {LONER} ") and audited.stderr == ""
    ambiguous = gm("show", "abcdef", env=env)
    assert ambiguous.returncode == 2
    assert ambiguous.stderr.startswith("error: 'abcdef' is the start of more than one story's id")
    assert ambiguous.stderr.count("\n") == 1
    unset = {**env, "OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "GM_MODEL": ""}
    played = gm("play", "--story", "123456", "--model", "rehearsal", stdin="I look around.\n", env=unset)
    assert played.returncode == 0, played.stderr
    assert "(rehearsal)" in played.stdout
    for command in (("show", "abcdef"), ("audit", "abcdef"), ("reveal", "abcdef"), ("play", "--story", "abcdef")):
        refused = gm(*command, env=unset)
        assert refused.returncode == 2 and "more than one story" in refused.stderr, command


def test_stories_count_rounds_in_words_and_carry_their_timezone(stories: Store, database_url: str) -> None:
    listed = gm("stories", env={"GM_DATABASE_URL": database_url}).stdout.splitlines()
    by_id = {line.split()[0]: line for line in listed}
    assert re.search(r"  \d{4}-\d\d-\d\d \d\d:\d\d UTC +1 round  The Harbour Job$", by_id[LONER])
    assert re.search(r" 2 rounds  The Harbour Job$", by_id[TWINS[0]])
    listed_json = json.loads(gm("stories", "--json", env={"GM_DATABASE_URL": database_url}).stdout)
    moments = [datetime.fromisoformat(story["created_at"]) for story in listed_json]
    assert moments and all(str(moment.utcoffset()) == "0:00:00" for moment in moments)


def test_a_typed_id_in_an_error_is_not_echoed_raw(tmp_path: Path) -> None:
    ran = gm("show", "abc\x1b[2Jdef")
    assert ran.returncode == 2 and "\x1b" not in ran.stderr
