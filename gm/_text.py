"""Untrusted text: whether a story can store it, and how to show it on a terminal.

Text from a model, a player, a world file or an HTTP client may hold anything JSON can carry. Two
things in it need care, and each has one function here:

- `unstorable`: a NUL character (U+0000), which PostgreSQL's text cannot hold, and half of a
  surrogate pair (`"\\ud800"` in JSON), which is no character at all and cannot be encoded as
  UTF-8 for either database. Such text is refused where it comes in, with a sentence its sender can
  act on, so SQLite and PostgreSQL behave alike.
  Where refusing would help nobody (the memory keeper's notes, a finish reason), `storable` puts
  U+FFFD in their place instead.
- `visible`: control characters, which a terminal obeys (`\\x1b]0;...\\x07` retitles it,
  `\\x1b[2J` clears it). Everything a model or a world file wrote is passed through it before it is
  printed: C0 controls become their Unicode control pictures (ESC is shown as U+241B, NUL as
  U+2400), DEL as U+2421, and C1 controls (U+0080 to U+009F, which have no pictures) as `\\x9b`.
  Line breaks and tabs stay; a carriage return is shown, except in a Windows line ending.

>>> unstorable("hi\\x00"), unstorable("caf\\u00e9"), unstorable("\\ud800")
('holds a NUL character (U+0000) at position 3', None, 'holds half of a surrogate pair (U+D800) at position 1')
>>> storable("a\\x00b")
'a\ufffdb'
>>> visible("\\x1b]0;PWNED\\x07\\x1b[2J ok\\r\\nnext\\x9b")
'\u241b]0;PWNED\u2407\u241b[2J ok\\nnext\\\\x9b'
"""

from __future__ import annotations

import re

from gm.errors import UnstorableText

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

_PICTURES = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"}
_PICTURES[0x7F] = "\u2421"
_PICTURES.update({code: f"\\x{code:02x}" for code in range(0x80, 0xA0)})
_SHOWN = str.maketrans(_PICTURES)


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored in a story (a NUL character or half a surrogate pair), or None if it can.

    The reason is the end of a sentence naming the text, such as "the text holds a NUL character ...".
    """
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    code = ord(found.group())
    what = "a NUL character" if code == 0 else "half of a surrogate pair"
    return f"holds {what} (U+{code:04X}) at position {found.start() + 1}"


def require_storable(what: str, text: str) -> None:
    """Raise `UnstorableText` when `text` (described by `what`, such as "the player's text") cannot be stored."""
    if problem := unstorable(text):
        raise UnstorableText(f"{what} {problem}, which a story cannot store; remove it")


def storable(text: str) -> str:
    """`text` with each character a story cannot store replaced by U+FFFD (the replacement character)."""
    return _UNSTORABLE.sub("\ufffd", text)


def visible(text: str) -> str:
    """`text` with every control character but line breaks and tabs shown as a visible symbol, for a terminal."""
    return text.replace("\r\n", "\n").translate(_SHOWN)


_RAW_IN_JSON = re.compile("[\x7f-\x9f]")


def visible_json(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with DEL and C1 controls escaped too.

    json.dumps escapes C0 controls itself; these it leaves raw. Escaped, the JSON means the same data.

    >>> print(visible_json('"a' + chr(0x9B) + 'b"'))
    "a\\u009bb"
    """
    return _RAW_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def counted(number: int, noun: str) -> str:
    """A number with its noun, singular for one: "1 round", "3 rounds".

    >>> counted(1, "round"), counted(0, "round"), counted(3, "attempt")
    ('1 round', '0 rounds', '3 attempts')
    """
    return f"{number} {noun}{'' if number == 1 else 's'}"
