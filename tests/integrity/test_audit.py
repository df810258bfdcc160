"""`gm audit`: a story whose database was tampered with does not check out, on SQLite and PostgreSQL,
and an exported transcript is checked with no database at all.

The story: a fair story (the player's seed mixed in) of three rounds in the harbour world. Round 1
rolls `attempt` for Mara; round 2 fails once after rolling `notice` for Jon, then its retry gets that
roll back; round 3 rolls plain dice and `attempt` for Mara again. Its seed is then revealed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, update
from sqlmodel import col, select

from gm import dice
from gm.cli import main
from gm.engine.transcript import transcript
from gm.errors import OperatorError
from gm.integrity.audit import audit
from gm.integrity.seeds import dice_for, reveal, stamped
from gm.rules.checks import band_for, read_value
from gm.store import RollRecord, RoundRecord, Store, Story
from gm.testing import Request, Step, call, http_error
from gm.transcript.chain import genesis, roll_hash
from gm.transcript.shapes import RollPublic, TranscriptPublic
from gm.world.definition import world_from_data
from tests.support.rounds import narrate_roll, roll_mara, table, tool_results

NOTICE = call("roll_check", {"check": "notice", "character": "Jon", "reason": "the guards"})


def narrate_all(request: Request) -> Step:
    rolled = [r for r in tool_results(request) if "band" in r]
    outcomes = [{"character": r["character"], "result": r["result"], "roll": r["roll"]} for r in rolled]
    return call("narrate", {"narration": "It is done.", "outcomes": outcomes})


def play_story(store: Store, harbor: Path, fair: bool = True) -> str:
    script = [
        roll_mara(),
        narrate_roll(),
        NOTICE,
        http_error(400, "Bad request."),
        NOTICE,
        narrate_all,
        call("roll_dice", {"notation": "2d6", "reason": "the fall"}),
        roll_mara(9),
        narrate_all,
    ]

    async def play() -> str:
        async with table(store, script, transport="http") as t:
            story = t.game.start_story(harbor, fair=fair, player_seed="coin" if fair else None)
            await t.game.play(story, "I pick the lock.")
            with pytest.raises(OperatorError):
                await t.game.play(story, "Jon watches.")
            await t.game.play(story, "Jon watches, again.")
            await t.game.play(story, "I climb down.")
            return story

    story = asyncio.run(play())
    if fair:
        reveal(store, story)
    return story


def rolls(store: Store, story: str) -> list[RollRecord]:
    return store.story_rolls(story)


def set_roll(store: Store, roll_id: int | None, **values: Any) -> None:
    with store.session() as session:
        session.execute(update(RollRecord).where(col(RollRecord.id) == roll_id).values(**values))
        session.commit()


def change_a_face(store: Store, story: str) -> None:
    first = rolls(store, story)[0]
    set_roll(store, first.id, faces=[[first.faces[0][0] % 20 + 1]])


def delete_a_roll(store: Store, story: str) -> None:
    with store.session() as session:
        session.execute(delete(RollRecord).where(col(RollRecord.id) == rolls(store, story)[1].id))
        session.commit()


def delete_the_newest_roll(store: Store, story: str) -> None:
    with store.session() as session:
        session.execute(delete(RollRecord).where(col(RollRecord.id) == rolls(store, story)[-1].id))
        session.commit()


def change_a_band(store: Store, story: str) -> None:
    first = rolls(store, story)[0]
    if first.band == "Critical success":
        set_roll(store, first.id, band="Failure", result="failed", critical=False)
    else:
        set_roll(store, first.id, band="Critical success", result="succeeded", critical=True)


def swap_an_outcomes_result(store: Store, story: str) -> None:
    with store.session() as session:
        first = session.exec(select(RoundRecord).where(RoundRecord.story_id == story, RoundRecord.number == 1)).one()
        flipped = {"partial": "succeeded", "succeeded": "failed", "failed": "partial"}
        outcomes = [{**outcome, "result": flipped[outcome["result"]]} for outcome in first.outcomes]
        session.execute(update(RoundRecord).where(col(RoundRecord.id) == first.id).values(outcomes=outcomes))
        session.commit()


def roll_a_check_again(store: Store, story: str) -> None:
    """What retrying used to do: round 1's check for Mara rolled afresh, from the story's own fair dice,
    and written as the engine writes rolls (so its chain link and its faces are sound)."""
    first = rolls(store, story)[0]
    check = world_from_data(store.story(story).world_data, store.story(story).dice_data).check("attempt")
    source = dice_for(store, store.story(story), None)
    rolled = dice.roll("1d20", dice.for_one_roll(source))
    value = read_value(check, rolled.total, first.target, first.modifier)
    band = band_for(check, value)
    assert band is not None
    data = first.model_dump(exclude={"id", "seq", "prev_hash", "seed_epoch", "created_at"})
    again = {"faces": [list(rolled.faces[0])], "total": rolled.total, "line": str(rolled), "value": value}
    again |= {"band": band.label, "result": band.result, "critical": band.critical}
    store.record_roll(stamped(source, RollRecord(**{**data, **again})))


def forge_a_roll_and_its_chain(store: Store, story: str) -> None:
    """A careful forger: a roll's face, total, line, value and band changed consistently, and every hash
    after it recomputed. Only the fair dice's seed can tell."""
    chain = rolls(store, story)
    first = chain[0]
    face = 20 if first.faces != [[20]] else 1
    value = face + first.modifier - (first.target or 0)
    band = "Critical success" if value >= 10 else "Failure"
    result = "succeeded" if value >= 10 else "failed"
    set_roll(store, first.id, faces=[[face]], total=face, line=f"1d20 ({face}) = {face}", value=value, band=band)
    set_roll(store, first.id, result=result, critical=value >= 10)
    with store.session() as session:
        copy = session.exec(select(RoundRecord).where(RoundRecord.story_id == story, RoundRecord.number == 1)).one()
        forged = RollRecord.model_validate(session.get(RollRecord, first.id)).model_dump(mode="json")
        forged.pop("story_id"), forged.pop("created_at")
        outcomes = [{**outcome, "result": result} for outcome in copy.outcomes]
        session.execute(
            update(RoundRecord).where(col(RoundRecord.id) == copy.id).values(rolls=[forged], outcomes=outcomes)
        )
        session.commit()
    head = genesis(story)
    for roll in rolls(store, story):
        set_roll(store, roll.id, prev_hash=head)
        stored = store.rolls_by_id([roll.id or 0])[0]
        head = roll_hash(RollPublic.from_stored(stored).model_dump(mode="json"))
    with store.session() as session:
        session.execute(update(Story).where(col(Story.id) == story).values(chain_head=head))
        session.commit()


TAMPERING: list[tuple[Callable[[Store, str], None], str]] = [
    (change_a_face, "its faces add up to"),
    (delete_a_roll, "it is number 3 in the chain but comes 2"),
    (delete_the_newest_roll, "the story says it has 4 rolls"),
    (change_a_band, "by dice.json, but it says value"),
    (swap_an_outcomes_result, "Mara's outcome says"),
    (roll_a_check_again, "check 'attempt' was already rolled for Mara in round 1"),
    (forge_a_roll_and_its_chain, "are not those seed 0 derives for roll 1"),
]


@pytest.mark.parametrize(("tamper", "caught"), TAMPERING, ids=[tamper.__name__ for tamper, _ in TAMPERING])
def test_tampering_with_the_database_is_caught(
    store: Store, harbor: Path, tamper: Callable[[Store, str], None], caught: str
) -> None:
    story = play_story(store, harbor)
    honest = audit(transcript(store, story))
    assert honest.ok, honest.mismatches
    assert (honest.rolls, honest.derived, honest.outcomes) == (4, 4, 3)
    tamper(store, story)
    report = audit(transcript(store, story))
    assert not report.ok
    assert any(caught in str(mismatch) for mismatch in report.mismatches), report.mismatches


@pytest.mark.slow
def test_the_command_line_says_the_verdict_and_the_first_mismatch(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    story = play_story(store, harbor)
    monkeypatch.setenv("GM_DATABASE_URL", str(store.engine.url.render_as_string(hide_password=False)))
    assert main(["audit", story]) == 0
    assert capsys.readouterr().out.startswith(f"story {story} checks out: 4 rolls in an unbroken chain")
    assert main(["show", story, "--json"]) == 0
    exported = tmp_path / "story.json"
    exported.write_text(capsys.readouterr().out)

    change_a_band(store, story)
    assert main(["audit", story, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["first_mismatch"] == report["mismatches"][0]
    count = len(report["mismatches"])  # the roll, the next roll's link, round 1's copy (and outcome, if it differs)
    assert [m["where"].split(" (")[0] for m in report["mismatches"][:3]] == ["roll 1", "roll 2", "round 1"]
    assert main(["audit", story]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"story {story} does NOT check out: {count} mismatches"
    assert out[1].startswith("first mismatch: roll 1 (id ") and "by dice.json, but it says value" in out[1]
    assert out[2] == f"and {count - 1} more (--json lists them all)" and len(out) == 3

    # The file exported before the tampering still checks out, with no database at all.
    monkeypatch.setenv("GM_DATABASE_URL", "sqlite:////nonexistent/folder/gm.db")
    assert main(["audit", "--file", str(exported)]) == 0
    data = json.loads(exported.read_text())
    # a change, whatever was rolled
    forged = [[1, 1]] if data["integrity"]["rolls"][2]["faces"] != [[1, 1]] else [[2, 2]]
    data["integrity"]["rolls"][2]["faces"] = forged
    data["rounds"][2]["rolls"][0]["faces"] = forged
    exported.write_text(json.dumps(data))
    assert main(["audit", "--file", str(exported)]) == 1
    assert "first mismatch: roll 3 (id " in capsys.readouterr().out


def test_without_fair_dice_a_careful_forgery_shows_only_against_an_earlier_copy(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What docs/integrity.md says the chain cannot do alone: whoever can write the database can rewrite every
    hash. A transcript saved before (`--since`) still shows it."""
    story = play_story(store, harbor, fair=False)
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(transcript(store, story).model_dump(mode="json")))
    forge_a_roll_and_its_chain(store, story)
    assert audit(transcript(store, story)).ok  # consistent all the way through: the audit alone cannot tell
    monkeypatch.setenv("GM_DATABASE_URL", str(store.engine.url.render_as_string(hide_password=False)))
    assert main(["audit", story, "--since", str(earlier)]) == 1
    out = capsys.readouterr().out
    assert "first mismatch: roll 1: it is not the roll the earlier transcript had" in out
    assert "and 3 more" in out  # every hash after the forged roll changed with it


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "there is no file"),
        ("{not json", "is not JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ('{"story": {}}', "is not a gm transcript (gm show STORY --json): story.id: Field required"),
        ('{"story": {"id": "x\\u001b[31m"}}', "story.title: Field required"),
    ],
)
def test_a_file_that_is_not_a_transcript_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, words: str
) -> None:
    path = tmp_path / "story.json"
    if content is not None:
        path.write_text(content)
    assert main(["audit", "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "\x1b" not in err, err


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ([], "name a story (gm audit STORY) or a transcript file (gm audit --file FILE)\n"),
        (["abcdef123456", "--file", "story.json"], "(gm audit --file FILE), not both\n"),
    ],
    ids=["neither", "both"],
)
def test_the_command_line_needs_a_story_or_a_file(
    arguments: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", *arguments]) == 2
    assert capsys.readouterr().err.endswith(said)


def test_what_a_transcript_file_says_reaches_the_terminal_escaped(
    store: Store, harbor: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = transcript(store, play_story(store, harbor)).model_dump(mode="json")
    data["rounds"][0]["outcomes"][0]["character"] = "Mara\x1b[2J"
    path = tmp_path / "story.json"
    path.write_text(json.dumps(data))
    assert main(["audit", "--file", str(path)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "Mara\\u001b[2J" in out


def test_the_api_audits_a_story(store: Store, harbor: Path, tmp_path: Path) -> None:
    import shutil

    from tests.support.web import served_app

    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copytree(harbor, worlds / "harbour")
    with served_app(store, worlds, [roll_mara(), narrate_roll()], faces=[11]) as (client, _):
        answer = client.post("/api/stories", json={"world": "harbour"})
        story, auth = answer.json()["story"]["id"], {"Authorization": f"Bearer {answer.json()['token']}"}
        assert client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=auth).is_success
        assert client.get(f"/api/stories/{story}/audit").status_code == 401
        checked = client.get(f"/api/stories/{story}/audit", headers=auth).json()
        assert checked["ok"] is True and checked["fair"] is False and checked["rolls"] == 1
        change_a_band(store, story)
        checked = client.get(f"/api/stories/{story}/audit", headers=auth).json()
        assert checked["ok"] is False and "band 'Critical success'" in checked["first_mismatch"]["message"]  # 11


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One honest story's transcript, as JSON, for the fuzzing below (SQLite only: it is about the file)."""
    from tests.support.worlds import write_world

    folder = tmp_path_factory.mktemp("fuzz")
    store = Store(f"sqlite:///{folder / 'gm.db'}")
    data = transcript(store, play_story(store, write_world(folder / "harbor"))).model_dump(mode="json")
    store.engine.dispose()
    return data


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value that holds a number, a string, a boolean or null."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in paths(item, (*at, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in paths(item, (*at, index))]
    return [at]


LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=12), st.just(""), st.just([[1]])
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
@pytest.mark.slow
def test_the_audit_never_breaks_on_a_changed_transcript(exported: dict[str, Any], data: st.DataObject) -> None:
    """Whatever a transcript file says, the audit answers with a verdict: never an exception."""
    changed = json.loads(json.dumps(exported))
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(paths(changed)))
        if not where:
            continue
        parent = changed
        for part in where[:-1]:
            parent = parent[part]
        parent[where[-1]] = json.loads(json.dumps(data.draw(LEAVES)))  # a fresh value, never one shared
    try:
        parsed = TranscriptPublic.model_validate(changed)
    except ValueError:
        return  # refused as not a transcript: one sentence, tested above
    report = audit(parsed)
    if changed != exported:
        assert report.ok in (True, False)  # an edit in a field the audit does not read may still check out


def test_a_story_whose_count_of_rounds_was_changed_does_not_check_out(store: Store, harbor: Path) -> None:
    story = play_story(store, harbor, fair=False)
    data = transcript(store, story).model_dump(mode="json")
    assert data["story"]["rounds"] == len(data["rounds"]) == 3 and audit(TranscriptPublic.model_validate(data)).ok
    data["story"]["rounds"] = 1
    report = audit(TranscriptPublic.model_validate(data))
    assert [str(m) for m in report.mismatches] == ["story: it says 1 round, but there are 3"]
