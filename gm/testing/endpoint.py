"""A whole fake endpoint for `gm model check` and offline trials: it answers any request sensibly.

`endpoint_script("native")` is a server that takes tools and answers with native calls;
`endpoint_script("prompted")` is one that refuses tools as Ollama does for a model without them
("... does not support tools"), so gm describes the tools in the prompt, and answers those with a
`<think>` block and a `<tool_call>` written as text. Both answer `json_schema` requests with JSON
and anything else with a line of text.

    python -m gm.testing.endpoint prompted   # prints the base URL, serves until interrupted
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from typing import Any, Literal

from gm.testing.script import Request, Step, StepFunction, call, reply
from gm.testing.shapes import no_tools

_DESCRIBED = re.compile(r'\{"name": "([^"]+)", "description"')


def endpoint_script(mode: Literal["native", "prompted"]) -> StepFunction:
    """A script answering every request the way a server of this kind would (see the module docstring)."""

    def step(request: Request) -> Step:
        tools = request.get("tools") or []
        if tools:
            if mode == "prompted":
                return no_tools("ollama")
            return call(tools[0]["function"]["name"], _arguments(tools[0]["function"].get("parameters", {})))
        if request.get("response_format", {}).get("type") == "json_schema":
            return reply(json.dumps({"answer": "yes"}))
        system = str(request["messages"][0].get("content", "")) if request.get("messages") else ""
        described = _DESCRIBED.search(system)
        if described and "# Tools" in system:
            written = json.dumps({"name": described.group(1), "arguments": {"notation": "1d20", "reason": "a test"}})
            return reply(f"<think>The user wants a roll; I call the tool.</think>\n<tool_call>{written}</tool_call>")
        return reply("Hello from the fake endpoint.")

    return step


def _arguments(parameters: dict[str, Any]) -> dict[str, Any]:
    """Arguments filling each required string parameter, enough for a probe."""
    return {name: "1d20" if name == "notation" else "a test" for name in parameters.get("required", [])}


def main(argv: list[str]) -> int:
    """Serve the fake endpoint in the given mode until interrupted; print its base URL first."""
    from gm.testing.server import FakeModel

    mode = argv[0] if argv else "native"
    if mode not in ("native", "prompted"):
        print("usage: python -m gm.testing.endpoint [native|prompted]", file=sys.stderr)
        return 2
    with FakeModel(endpoint_script(mode)) as fake:  # type: ignore[arg-type]
        print(fake.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it is meant to stop
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
