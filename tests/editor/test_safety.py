"""The world editor's safety, through FastAPI's TestClient: paths, escaping, cross-site requests, body size,
bad input (never a 500), and `gm edit`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm.cli import main
from tests.support.editor_forms import BASE, form_of, post, problems_at, submit

# Safety.


@pytest.mark.parametrize(
    "path",
    [
        "/worlds/..%2F..%2Fetc/dice",
        "/worlds/..%2Fharbour-heist/dice",
        "/worlds/%2Fetc%2Fpasswd",
        "/worlds/Harbour-Heist/dice",
        "/worlds/harbour-heist%2Fdice.json/dice/raw",
        "/worlds/nowhere/dice",
    ],
)
def test_paths_outside_the_worlds_are_refused(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 404
    answer = client.post(path, data={"csrf": client.app.state.editor.csrf.token, "action": "save"})
    assert answer.status_code in {404, 405}
    assert "Traceback" not in answer.text


def test_symbolic_links_out_of_the_folder_are_not_followed(client: TestClient, worlds: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "world.json").write_text("{}")
    (worlds / "linked").symlink_to(outside)
    assert client.get("/worlds/linked").status_code == 404
    assert "linked" in client.get("/").text  # listed among the folders it cannot open
    secret = tmp_path / "secret.json"
    secret.write_text('{"checks": []}')
    (worlds / "storm-wall" / "dice.json").unlink()
    (worlds / "storm-wall" / "dice.json").symlink_to(secret)
    assert "it is a symbolic link" in client.get("/worlds/storm-wall/dice").text
    assert "it is a symbolic link" in client.get("/").text
    assert submit(client, "/worlds/storm-wall/dice", "save").status_code == 403
    assert client.get("/worlds/storm-wall/dice/raw").status_code == 403
    assert submit(client, "/worlds/storm-wall", "save").status_code == 303  # world.json itself is fine
    assert secret.read_text() == '{"checks": []}'


def test_everything_an_author_typed_is_escaped(client: TestClient) -> None:
    typed = '<script>alert("x")</script>'
    page = submit(
        client, "/worlds/harbour-heist/dice", "check", {"checks-0-name": typed, "checks-0-bands-0-label": typed}
    )
    assert "<script>alert" not in page.text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
    world = submit(client, "/worlds/harbour-heist", "check", {"title": typed})
    assert "<script>alert" not in world.text


def test_a_form_without_the_token_is_refused(client: TestClient, worlds: Path) -> None:
    before = (worlds / "harbour-heist" / "dice.json").read_bytes()
    fields = form_of(client.get("/worlds/harbour-heist/dice").text)
    fields["checks-0-name"] = "Forged"
    for token in (None, "", "not-the-token"):
        sent = {**fields, "action": "save"}
        if token is None:
            del sent["csrf"]
        else:
            sent["csrf"] = token
        answer = post(client, "/worlds/harbour-heist/dice", sent)
        assert answer.status_code == 403 and "security token" in answer.text
    assert client.post("/worlds/harbour-heist/dice", json={"action": "save"}).status_code == 403
    assert post(client, "/new", {"folder": "forged", "action": "save"}).status_code == 403
    assert (worlds / "harbour-heist" / "dice.json").read_bytes() == before
    assert not (worlds / "forged").exists()


def test_a_request_from_another_origin_is_refused(client: TestClient, worlds: Path) -> None:
    fields = {**form_of(client.get("/worlds/harbour-heist/dice").text), "action": "save"}
    answer = client.post("/worlds/harbour-heist/dice", data=fields, headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403
    answer = client.post("/worlds/harbour-heist/dice", data=fields, headers={"Origin": BASE}, follow_redirects=False)
    assert answer.status_code == 303


def test_another_host_name_is_refused(client: TestClient) -> None:
    assert client.get("/", headers={"Host": "attacker.example"}).status_code == 400
    assert client.get("/", headers={"Host": "localhost:8765"}).status_code == 200


def test_an_oversize_body_is_refused(client: TestClient, worlds: Path) -> None:
    token = client.app.state.editor.csrf.token
    big = {"csrf": token, "action": "save", "checks-0-use": "x" * 1_100_000}
    answer = client.post("/worlds/harbour-heist/dice", data=big)
    assert answer.status_code == 413 and "at most 1,000,000 bytes" in answer.text

    def chunks() -> Iterator[bytes]:
        yield f"csrf={token}&action=save&text=".encode()
        for _ in range(200):
            yield b"x" * 10_000

    answer = client.post(
        "/worlds/harbour-heist/dice/raw",
        content=chunks(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 413
    assert json.loads((worlds / "harbour-heist" / "dice.json").read_text())["checks"][0]["key"] == "attempt"


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "remove-band:9:9"},
        {"action": "add-band:x"},
        {"action": "launch"},
        {"action": "up-check:99999"},
        {"action": "check", "checks-0-reading": "sideways", "checks-0-compare": "", "checks-0-bands-0-result": "?"},
        {"action": "check", "checks-99999-key": "far", "checks-7-bands-3-min": "1e400"},
        {"action": "check", "checks-0-hit": "99999999999999999999999999", "checks-0-reading": "successes"},
        {"action": "check", "checks-0-dice": "1000d1000"},
        {"action": "save", "checks-0-bands-0-min": "-0", "checks-0-bands-0-max": "\u22125"},
    ],
)
def test_bad_input_gets_a_clear_answer_never_a_500(client: TestClient, fields: dict[str, str]) -> None:
    page = submit(client, "/worlds/harbour-heist/dice", fields.pop("action"), fields)
    assert page.status_code in {200, 303, 400, 422}, page.text
    assert "Traceback" not in page.text


def test_broken_world_files_still_give_pages(client: TestClient, worlds: Path) -> None:
    (worlds / "harbour-heist" / "world.json").write_text('{"title": 5, "characters": "none"}')
    (worlds / "storm-wall" / "world.json").write_bytes(b"\xff\xfe not text")
    (worlds / "ward-nine" / "dice.json").write_text('{"checks": [7, {"key": 1, "bands": {"a": 1}}]}')
    for path in [
        "/",
        "/worlds/harbour-heist",
        "/worlds/harbour-heist/dice",
        "/worlds/storm-wall",
        "/worlds/storm-wall/dice",
        "/worlds/ward-nine/dice",
        "/worlds/ward-nine/dice/raw",
    ]:
        assert client.get(path).status_code == 200, path
    page = submit(client, "/worlds/harbour-heist", "check")
    assert form_of(page.text)["title"] == "5"  # the form shows what it can, as text
    assert problems_at(page.text, "characters")[0] == "error: needs at least 1 entry"
    assert "world.json cannot be read (the file is not UTF-8 text" in client.get("/worlds/storm-wall/dice").text


# `gm edit`.


def test_gm_edit_serves_the_folder_on_loopback(worlds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, object] = {}

    def run(app: object, host: str, port: int, log_level: str) -> None:
        served.update(app=app, host=host, port=port)

    monkeypatch.setattr("uvicorn.run", run)
    assert main(["edit", str(worlds), "--port", "0"]) == 0
    assert served["host"] == "127.0.0.1" and served["port"] == 0
    with TestClient(served["app"], base_url=BASE) as client:
        assert "Low Water at Greyquay" in client.get("/").text


def test_gm_edit_refuses_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["edit", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"error: there is no folder '{tmp_path / 'none'}' to edit worlds in"
