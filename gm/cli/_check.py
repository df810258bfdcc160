"""`gm check PATH...`: every problem in one or more worlds (or dice.json files), listed at once.

A path is a world folder, its world.json, a dice.json file, or a folder of worlds (a folder holding
neither file whose subfolders are worlds: each is checked). Several paths, as a shell glob such as
`gm check worlds/*` gives, are checked in turn. Exit 1 when any has an error. A file that cannot be
read or parsed is one `error:` line (exit 2) when it is all that was asked for; among several worlds,
it is that world's error and the others are still checked.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gm._text import counted, visible
from gm.errors import ProblemsError
from gm.problems import Problem
from gm.world.definition import DICE_FILE, WORLD_FILE
from gm.world.loading import check_world, world_files


def checked_paths(paths: list[Path]) -> list[Path]:
    """The worlds and files meant by `paths`: a folder of worlds stands for each world in it."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir() and not (path / WORLD_FILE).exists() and not (path / DICE_FILE).exists():
            inside = sorted(child for child in path.iterdir() if child.is_dir() and _is_world(child))
            if inside:
                found.extend(inside)
                continue
        found.append(path)
    return found


def _is_world(folder: Path) -> bool:
    return (folder / WORLD_FILE).exists() or (folder / DICE_FILE).exists()


def run_check(arguments: argparse.Namespace) -> int:
    paths = checked_paths(arguments.paths)
    reports: list[dict[str, Any]] = []
    for path in paths:
        try:
            files = world_files(path)
            problems = check_world(path)
            checked = " and ".join(files.names) + ("" if files.dice else f" (no {DICE_FILE}, so no checks)")
        except ProblemsError as error:
            if len(paths) == 1 and not arguments.json:
                raise  # one line on stderr, exit 2: nothing else was asked for (--json reports it as JSON, exit 1)
            problems, checked = error.problems, "nothing it could read"
        reports.append({"path": path, "problems": problems, "checked": checked})
    failed = [report for report in reports if _errors(report["problems"])]
    if arguments.json:
        print(json.dumps(_as_json(reports), indent=2))
        return 1 if failed else 0
    for report in reports:
        problems = report["problems"]
        errors = _errors(problems)
        verdict = "has problems" if errors else "is fine"
        counts = f"{counted(len(errors), 'error')}, {counted(len(problems) - len(errors), 'warning')}"
        print(visible(f"{report['path']}: {verdict}: checked {report['checked']}; {counts}"))
        for problem in problems:
            print(visible(f"  {problem}"))  # a problem may quote the file
    if len(reports) > 1:
        print(f"{counted(len(reports), 'world')} checked: {len(failed)} with errors")
    return 1 if failed else 0


def _as_json(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """`{"ok", "problems"}` as for one world (each problem naming its `world`), and `worlds`, one entry each."""
    return {
        "ok": not any(_errors(report["problems"]) for report in reports),
        "problems": [
            {**_problem_json(problem), "world": str(report["path"])}
            for report in reports
            for problem in report["problems"]
        ],
        "worlds": [
            {"path": str(report["path"]), "ok": not _errors(report["problems"]), "checked": report["checked"]}
            for report in reports
        ],
    }


def _errors(problems: list[Problem]) -> list[Problem]:
    return [problem for problem in problems if problem.severity == "error"]


def _problem_json(problem: Problem) -> dict[str, Any]:
    return {"severity": problem.severity, "file": problem.file, "path": problem.path, "message": problem.message}
