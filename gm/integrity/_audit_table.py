"""The audit of a shared table's messages (docs/table.md): who sent each message is chained like the rolls.

Each message's hash is recomputed from its place, seat, character, text and the hash before it
(gm.transcript.chain.message_hash); the first links to the story's message genesis, and the last must be the
story's head, so an edited, removed, inserted or reattributed message is seen. Each round a seat played must
name messages of the chain, with their seat, character and words. Pure: no I/O.
"""

from __future__ import annotations

from gm.integrity._audit_report import AuditReport, Mismatch
from gm.transcript.chain import message_genesis, message_hash
from gm.transcript.shapes import TranscriptPublic


def check_messages(transcript: TranscriptPublic, report: AuditReport) -> None:
    """Add every mismatch of the message chain, and of the rounds' actions against it, to `report`."""
    integrity = transcript.integrity
    if integrity is None:
        return
    previous = message_genesis(transcript.story.id)
    for place, message in enumerate(integrity.messages, 1):
        where = f"message {message.seq}"
        if message.seq != place:
            report.mismatches.append(Mismatch(where, f"it is number {message.seq} but comes {place}"))
        if message.prev_hash != previous:
            report.mismatches.append(Mismatch(where, "its prev_hash is not the hash of the message before it"))
        linked = {"seq": message.seq, "seat": message.seat, "character": message.character, "text": message.text}
        if message_hash({**linked, "prev_hash": message.prev_hash}) != message.hash:
            report.mismatches.append(Mismatch(where, "its hash is not its contents': its seat or words were changed"))
        previous = message.hash
    if len(integrity.messages) != integrity.messages_length or (
        integrity.messages and previous != integrity.messages_head
    ):
        report.mismatches.append(
            Mismatch(
                "messages",
                f"the story says it has {integrity.messages_length} messages ending in {integrity.messages_head}, "
                f"but there are {len(integrity.messages)} ending in {previous}: the newest were changed or removed",
            )
        )
    by_seq = {message.seq: message for message in integrity.messages}
    for round_ in transcript.rounds:
        for action in round_.actions or []:
            sent = by_seq.get(action.message)
            where = f"round {round_.number}"
            if sent is None:
                report.mismatches.append(Mismatch(where, f"it names message {action.message}, which is not chained"))
            elif (sent.seat, sent.character) != (action.seat, action.character) or action.text.strip() not in sent.text:
                report.mismatches.append(
                    Mismatch(where, f"its action from message {action.message} is not what that message's seat sent")
                )
