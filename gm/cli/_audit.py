"""`gm audit` and `gm reveal`: check a story's dice, from the database or from an exported transcript,
and publish a fair story's seed.

`gm audit STORY` and `gm audit --file TRANSCRIPT.json` print a verdict and the first mismatch (with
`--json`, the whole report) and exit 1 when anything does not check out; `--since EARLIER.json`
also checks that the story still holds what a transcript saved before held. A transcript file is
untrusted: a file that is not a transcript is one `error:` line (exit 2), and nothing read from it
reaches the terminal with its control characters.
"""

from __future__ import annotations

import argparse
import json
import unicodedata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gm.cli._settings import store_of
from gm.engine.transcript import transcript
from gm.errors import AuditCommandError, StoryNotFound
from gm.integrity.audit import AuditReport, audit, since
from gm.integrity.seeds import reveal
from gm.transcript.shapes import TranscriptPublic

MAX_FILE_BYTES = 256 * 1024 * 1024


def add_audit_subcommands(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add `gm audit` and `gm reveal` to the command line."""
    checking = subcommands.add_parser(
        "audit",
        help="check a story's dice: the roll chain, every total and band, outcomes, fair seeds",
        description="gm audit STORY checks a story in the database; gm audit --file TRANSCRIPT.json checks an "
        "exported transcript (gm show STORY --json) with no database. Exit 1 on any mismatch.",
    )
    checking.add_argument("story", nargs="?", help="the story's id, or a unique start of it (6+ characters)")
    checking.add_argument("--file", type=Path, help="a transcript exported with gm show STORY --json")
    checking.add_argument(
        "--since",
        type=Path,
        metavar="EARLIER.json",
        help="a transcript of the story saved before: its rolls and commitments must be unchanged",
    )
    checking.add_argument("--json", action="store_true", help="print the whole report as JSON")
    checking.set_defaults(run=run_audit)

    revealing = subcommands.add_parser(
        "reveal",
        help="publish a fair story's seed so far, and commit a fresh one for the rolls that follow",
    )
    revealing.add_argument("story", help="the story's id, or a unique start of it (6+ characters)")
    revealing.add_argument("--json", action="store_true", help="print the revealed seed and the new commitment as JSON")
    revealing.set_defaults(run=run_reveal)


def run_audit(arguments: argparse.Namespace) -> int:
    if arguments.story is None and arguments.file is None:
        raise AuditCommandError("name a story (gm audit STORY) or a transcript file (gm audit --file FILE)")
    if arguments.story is not None and arguments.file is not None:
        raise AuditCommandError("name a story (gm audit STORY) or a transcript file (gm audit --file FILE), not both")
    if arguments.file is not None:
        checked = read_transcript(arguments.file)
    else:
        store = store_of(arguments)
        try:
            checked = transcript(store, store.find_story_id(arguments.story))
        except StoryNotFound as error:
            raise AuditCommandError(f"{error}; gm stories lists them") from None
    report = audit(checked)
    if arguments.since is not None:
        report.mismatches += since(read_transcript(arguments.since), checked)
    if arguments.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render_report(report))
    return 0 if report.ok else 1


def render_report(report: AuditReport) -> str:
    """The verdict, and the first mismatch with how many more there are."""
    lines = [plain(report.verdict())]
    if report.mismatches:
        lines.append(f"first mismatch: {plain(str(report.mismatches[0]))}")
        more = len(report.mismatches) - 1
        if more:
            lines.append(f"and {more} more (--json lists them all)")
    return "\n".join(lines)


def read_transcript(path: Path) -> TranscriptPublic:
    """A transcript file, or one sentence saying why it cannot be audited."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise AuditCommandError(f"{path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; is it a transcript?")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AuditCommandError(f"there is no file '{path}'") from None
    except (OSError, UnicodeDecodeError) as error:
        raise AuditCommandError(f"{path} cannot be read: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise AuditCommandError(
            f"{path} is not JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from None
    try:
        return TranscriptPublic.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise AuditCommandError(
            plain(f"{path} is not a gm transcript (gm show STORY --json): {where}: {first['msg']}")
        ) from None


def run_reveal(arguments: argparse.Namespace) -> int:
    store = store_of(arguments)
    try:
        story_id = store.find_story_id(arguments.story)
    except StoryNotFound as error:
        raise AuditCommandError(f"{error}; gm stories lists them") from None
    revealed = reveal(store, story_id)
    if arguments.json:
        print(json.dumps({"revealed": revealed.revealed.model_dump(), "next": revealed.next.model_dump()}, indent=2))
        return 0
    seed = revealed.revealed
    last = f"rolls {seed.first_roll} to {seed.last_roll}" if (seed.last_roll or 0) >= seed.first_roll else "no rolls"
    print(f"Revealed seed {seed.epoch} ({last}): {seed.seed}")
    print(f"  its commitment was {seed.commitment}")
    print(f"The rolls from {revealed.next.first_roll} on use a fresh seed, committed as {revealed.next.commitment}")
    print(f"Check the story with: gm audit {story_id}  (or gm show {story_id} --json, then gm audit --file)")
    return 0


def plain(text: str) -> str:
    """Text for a terminal: control and format characters shown as escapes, never sent raw."""
    return "".join(f"\\u{ord(char):04x}" if unicodedata.category(char) in ("Cc", "Cf", "Cs") else char for char in text)
