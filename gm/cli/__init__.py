"""`gm`: the command line, a thin layer over the library.

Exit codes: 0 success; 1 when `gm check` finds errors, when `gm model check` finds gm cannot play on
the endpoint, or when a round of `gm play` could not be played; 2 bad input, with one `error:` line on
stderr; 3 an internal failure, also one line. Never a traceback, and never a control character from a
model or a world file (`gm._text.visible`).

The parser (`gm.cli._parser`) knows every subcommand's arguments and nothing of what runs them; the
subcommand that runs imports its own machinery, so `gm --version`, `gm roll` and `gm check` start
about as fast as Python itself.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gm._text import visible
from gm.cli._parser import build_parser
from gm.errors import GmError

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code."""
    try:
        arguments = build_parser().parse_args(argv)
        code: int = arguments.run.load()(arguments)
        return code
    except GmError as error:  # bad input, a broken world file, a model that is not configured...
        return _fail(str(error), 2)
    except KeyboardInterrupt:
        return _fail("interrupted", 2)
    except BrokenPipeError:
        return 0
    except Exception as error:  # the promise is one line, never a traceback, even for our own bugs
        return _fail(f"internal error ({type(error).__name__}: {error}); please report it", 3)


def _fail(message: str, code: int) -> int:
    # An error may quote what was typed or read (an id, a world file): never a control character raw.
    print(f"error: {visible(message)}", file=sys.stderr)
    return code
