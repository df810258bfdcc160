"""`gm model check` against the fake endpoint: what it prints, its exit code, and the one line saying what to change."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gm.testing import Request, Step, call, fake_model, http_error, raw, reply
from gm.testing.endpoint import endpoint_script
from tests.support.command_line import Ran, gm
from tests.support.paths import OPENAI_SCHEMAS

SCHEMA = OPENAI_SCHEMAS / "chat-completion-request.schema.json"


def check(script: object, *flags: str) -> Ran:
    with fake_model(script, request_schema=SCHEMA, check=False) as fake:  # type: ignore[arg-type]
        ran = gm("model", "check", "--base-url", fake.base_url, "--model", fake.model, *flags)
        assert fake.failures == [] or all("ran out" not in failure for failure in fake.failures), fake.failures
    return ran


def rows(ran: Ran) -> dict[str, str]:
    found = {}
    for line in ran.stdout.splitlines()[1:]:
        label, _, value = line.strip().partition(":")
        found[label] = value.strip()
    return found


def test_a_server_with_tool_calls_is_played_natively() -> None:
    ran = check(endpoint_script("native"))
    assert ran.returncode == 0 and ran.stderr == "", ran
    found = rows(ran)
    assert found["reachable"].startswith("yes, ") and found["reachable"].endswith(" ms")
    assert found["models listed"] == "fake-model" and found["native tool calls"] == "work"
    assert found["prompted tool calls"] == "not needed" and found["structured output"] == "works (json_schema)"
    assert found["reasoning blocks"] == "none seen"
    assert found["gm will use"] == "--tools auto (native); the judge asks by json_schema"
    assert ran.stdout.rstrip().endswith("gm can play on this endpoint.")


def test_a_server_refusing_tools_is_played_prompted() -> None:
    ran = check(endpoint_script("prompted"))
    assert ran.returncode == 0, ran
    found = rows(ran)
    assert found["native tool calls"] == (
        "refused by the server (registry.ollama.ai/library/served-model does not support tools)"
    )
    assert found["prompted tool calls"] == "work" and found["reasoning blocks"] == "seen (gm drops them)"
    assert found["gm will use"] == "--tools auto (prompted); the judge asks by json_schema"


def test_tools_native_on_a_server_refusing_tools_says_to_prompt() -> None:
    ran = check(endpoint_script("prompted"), "--tools", "native")
    assert ran.returncode == 1 and ran.stdout.rstrip().endswith("gm cannot play on this endpoint yet.")
    assert (
        ran.stderr == "error: tool calls do not work natively here; use --tools prompted (or GM_TOOLS=prompted), "
        "or --tools auto\n"
    )


def native_only(request: Request) -> Step:
    """A server whose model calls tools natively but never writes a call in text."""
    if "tools" in request:
        return call("roll_dice", {"notation": "1d20", "reason": "a test"})
    return reply('{"answer": "yes"}') if "response_format" in request else reply("Hello.")


def test_tools_prompted_is_probed_even_where_native_works() -> None:
    ran = check(native_only, "--tools", "prompted")
    assert ran.returncode == 1 and "wrote no usable tool call in text; use --tools native" in ran.stderr
    assert rows(ran)["prompted tool calls"] == "the model did not call the tool (answered: 'Hello.')"
    assert check(native_only).returncode == 0


def test_a_model_that_never_calls_a_tool_cannot_play() -> None:
    ran = check(lambda request: reply('{"answer": "yes"}') if "response_format" in request else reply("No."))
    assert ran.returncode == 1 and rows(ran)["native tool calls"].startswith("the model did not call the tool")
    assert (
        ran.stderr.startswith("error: the model made no tool call, natively or in text;")
        and ran.stderr.count("\n") == 1
    )


def test_an_unknown_model_is_named_with_the_ones_listed() -> None:
    ran = check([http_error(404, "model 'fake-model' not found, try pulling it first")])
    assert ran.returncode == 1
    assert (
        ran.stderr == "error: the server refused model 'fake-model' (it lists fake-model); set --model (or GM_MODEL) "
        "to one it serves\n"
    )


def test_an_unreachable_server_says_where_to_point() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ran = gm("model", "check", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--timeout", "5")
    assert ran.returncode == 1 and rows(ran)["reachable"].startswith("no")
    assert ran.stderr.startswith(f"error: the server at http://127.0.0.1:{port}/v1 cannot be reached (")
    assert "point --base-url (or OPENAI_BASE_URL) at where it listens" in ran.stderr


def test_what_a_server_says_reaches_the_terminal_without_control_characters() -> None:
    noisy = raw({"error": {"message": "no \x1b[31mtools\x07 here", "type": "x"}}, status=400)
    ran = check(lambda request: noisy if "tools" in request else reply("\x1b[2Jplain"))
    assert "\x1b" not in ran.stdout + ran.stderr and "\x07" not in ran.stdout
    assert ran.returncode == 1


@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_a_timeout_must_be_positive(timeout: str) -> None:
    ran = gm("model", "check", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--timeout", timeout)
    assert ran.returncode == 2 and ran.stderr == f"error: --timeout must be more than 0 seconds, not {timeout}\n"


def test_no_model_configured_is_one_error_line() -> None:
    ran = gm("model", "check", "--base-url", "http://127.0.0.1:1/v1", env={"GM_MODEL": ""})
    assert ran.returncode == 2 and ran.stderr.startswith("error: The model is not configured: set GM_MODEL")


def test_a_model_that_fails_to_answer_is_told_apart_from_one_without_tools() -> None:
    ran = check(lambda request: http_error(500, "CUDA out of memory"))
    assert ran.returncode == 1 and rows(ran)["native tool calls"].startswith("failed (")
    assert ran.stderr.startswith("error: the model did not answer the probe (") and "its log says why" in ran.stderr


def test_tools_is_checked_on_every_command_that_talks_to_a_model(tmp_path: Path) -> None:
    for command in (["play", str(tmp_path)], ["serve"], ["model", "check"]):
        ran = gm(*command, "--tools", "sometimes")
        assert ran.returncode == 2 and "argument --tools: invalid choice: 'sometimes'" in ran.stderr, ran
    ran = gm("model", "check", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", env={"GM_TOOLS": "often"})
    assert ran.returncode == 2 and ran.stderr == "error: GM_TOOLS must be native, prompted or auto, not 'often'.\n"
