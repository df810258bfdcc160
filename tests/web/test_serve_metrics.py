"""`gm serve --workers 2` with metrics and JSON logs (issue 40): one scrape counts every worker's rounds.

The workers count into one folder (prometheus-client's multiprocess mode), made by the parent and removed as
it stops; whichever worker answers /metrics reads them all. `--log-format json` writes one object per line,
in the parent and in each worker. On PostgreSQL (several workers need it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gm.testing import Request, Step, reply
from tests.support.databases import POSTGRES_URL
from tests.support.rounds import fake
from tests.support.servers import Server, free_port, send, wait_until_up

pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="--workers 2 serves on PostgreSQL: set GM_TEST_POSTGRES_URL")

TOKEN = "metrics-token-of-the-test"
ROUNDS = 6


def script(request: Request) -> Step:
    return reply("The harbour answers." if "tools" in request else "Something happened.")


def rounds_counted(server: Server) -> float:
    import urllib.request

    asked = urllib.request.Request(server.url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(asked, timeout=30) as answer:
        exposition = answer.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == "gm_rounds_total" and sample.labels == {"outcome": "accepted"}
    )


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_two_workers_count_into_one_scrape_and_log_json_lines(tmp_path: Path, worlds: Path, database_url: str) -> None:
    model = fake(script).start()
    port, log = free_port(), tmp_path / "server.log"
    env = {
        **os.environ,
        "GM_DATABASE_URL": database_url,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "test-key",
        "GM_MODEL": model.model,
        "GM_METRICS_TOKEN": TOKEN,
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(tmp_path),  # where the parent makes the workers' metrics folder
    }
    env.pop("GM_METRICS_DIR", None)
    command = [sys.executable, "-m", "gm.cli", "serve", "--worlds", str(worlds), "--port", str(port)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, "--workers", "2", "--log-format", "json"], env=env, stdout=output, stderr=subprocess.STDOUT
        )
    server = Server("workers", process, port, log)
    try:
        wait_until_up(server)
        [folder] = list(tmp_path.glob("gm-metrics-*"))
        # Both workers count in the folder: each makes its files as it builds its metrics, which the second may
        # do after the first already answers (on a loaded machine, seconds later).
        deadline = time.monotonic() + 60
        while len(list(folder.glob("histogram_*.db"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(list(folder.glob("histogram_*.db"))) == 2, server.output()
        for _ in range(ROUNDS):  # each on a new connection: the kernel hands them to either worker
            status, made = send(server, "POST", "/api/stories", {"world": "harbour"})
            assert status == 201, made
            story, token = made["story"]["id"], made["token"]
            status, played = send(server, "POST", f"/api/stories/{story}/messages", {"text": "I look."}, token)
            assert status == 200, played
        # Every scrape sums both workers' files, whichever worker answers it.
        assert len(list(folder.glob("histogram_*.db"))) == 2
        assert [rounds_counted(server) for _ in range(4)] == [ROUNDS] * 4  # whichever worker answers
    finally:
        server.stop()
        model.close()
        sys.stderr.write(server.output() + "\n")
    assert not folder.exists()  # removed as the server stopped
    logged = [line for line in log.read_text().splitlines() if line.startswith("{")]
    assert logged, server.output()
    for line in logged:
        assert {"time", "level", "logger", "message"} <= set(json.loads(line))
