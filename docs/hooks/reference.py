"""An mkdocs hook: the reference pages that are generated when the site is built, so they cannot drift.

- `reference/dice-json.md` and `reference/world-json.md`: every field of `gm/schemas/dice.schema.json`
  and `gm/schemas/world.schema.json`, with its type, bounds, default and description, read from the
  schema itself (the schema the files are checked against).
- `reference/cli.md`: `gm --help` and each subcommand's `--help`, from the command line's own parser.

tests/test_docs.py builds these pages too, and fails when a schema field has no description.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = {
    "dice-json": ROOT / "gm" / "schemas" / "dice.schema.json",
    "world-json": ROOT / "gm" / "schemas" / "world.schema.json",
}
GUIDES = {"dice-json": "../dice-json.md", "world-json": "../world-json.md"}


# ---- the schemas ----


def schema_page(name: str) -> str:
    """The reference page of one schema: each object it defines as a table of its fields."""
    schema = json.loads(SCHEMAS[name].read_text(encoding="utf-8"))
    title = schema.get("title", name)
    lines = [
        f"# {title} reference",
        "",
        f"Every field of `{title}`, generated from the JSON Schema gm checks the file against"
        f" (`gm/schemas/{SCHEMAS[name].name}`, which editors can use too) when this site is built."
        f" The [{title} guide]({GUIDES[name]}) explains how the fields work together.",
        "",
        f"{schema.get('description', '')}",
        "",
    ]
    lines += _object_section(title, schema, level=2, describe=False)
    for key, definition in schema.get("$defs", {}).items():
        lines += _object_section(key, definition, level=2)
    return "\n".join(lines) + "\n"


def fields(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every field the schema defines, as (the object it is in, its name, its schema), nested objects included."""
    found: list[tuple[str, str, dict[str, Any]]] = []

    def walk(where: str, node: dict[str, Any]) -> None:
        for member, definition in node.get("properties", {}).items():
            found.append((where, member, definition))
            if "properties" in definition:
                walk(f"{where}.{member}", definition)
            if isinstance(definition.get("items"), dict) and "properties" in definition["items"]:
                walk(f"{where}.{member}[]", definition["items"])

    walk(schema.get("title", "root"), schema)
    for key, definition in schema.get("$defs", {}).items():
        walk(key, definition)
    return found


def _object_section(name: str, node: dict[str, Any], level: int, describe: bool = True) -> list[str]:
    heading = "#" * level
    lines = [f"{heading} {name}", ""]
    if describe and node.get("description"):
        lines += [node["description"], ""]
    properties = node.get("properties")
    if not properties:
        lines += [f"A value: {_kind(node)}.", ""]
        return lines
    required = set(node.get("required", []))
    extra = []
    if node.get("additionalProperties") is False:
        extra.append("No other field is allowed.")
    if "oneOf" in node and all(set(branch) == {"required"} for branch in node["oneOf"]):
        choices = [" and ".join(f"`{field}`" for field in branch["required"]) for branch in node["oneOf"]]
        extra.append(f"Exactly one of {_either(choices)} is given.")
    lines += ["| field | required | type and bounds | what it is |", "| --- | --- | --- | --- |"]
    for member, definition in properties.items():
        need = "yes" if member in required else "no"
        lines.append(
            f"| `{member}` | {need} | {_cell(_kind(definition))} | {_cell(definition.get('description', ''))} |"
        )
    lines.append("")
    lines += [" ".join(extra), ""] if extra else []
    for member, definition in properties.items():
        if "properties" in definition:
            lines += _object_section(f"{name}.{member}", definition, min(level + 1, 6))
        items = definition.get("items")
        if isinstance(items, dict) and "properties" in items:
            lines += _object_section(f"{name}.{member}[]", items, min(level + 1, 6))
    return lines


def _kind(node: dict[str, Any]) -> str:
    """A schema's type and bounds in words: `integer, from 1 to 1000`, `list of [band](#band), 1 to 20`."""
    if "$ref" in node:
        target = node["$ref"].rsplit("/", 1)[-1]
        return f"[{target}](#{target.lower().replace('_', '-')})"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in node["enum"]) + _default(node)
    kinds = node.get("type")
    if kinds is None and "properties" in node:
        kinds = "object"
    parts: list[str] = []
    if isinstance(kinds, list):
        parts.append(" or ".join(_TYPE_WORDS.get(kind, kind) for kind in kinds))
    elif kinds == "array":
        items = node.get("items", {})
        parts.append(f"list of {_kind(items) if isinstance(items, dict) else 'anything'}")
    elif kinds is not None:
        parts.append(_TYPE_WORDS.get(kinds, kinds))
    else:
        parts.append("any value")
    parts += _bounds(node)
    return ", ".join(parts) + _default(node)


_TYPE_WORDS = {
    "string": "text",
    "integer": "whole number",
    "number": "number",
    "boolean": "true or false",
    "object": "object",
    "null": "null",
}


def _bounds(node: dict[str, Any]) -> list[str]:
    bounds = []
    for low, high, unit in (
        ("minLength", "maxLength", "characters"),
        ("minItems", "maxItems", "items"),
        ("minProperties", "maxProperties", "members"),
    ):
        if low in node or high in node:
            bounds.append(_range(node.get(low), node.get(high), unit))
    if "minimum" in node or "maximum" in node:
        bounds.append(_range(node.get("minimum"), node.get("maximum"), ""))
    if "pattern" in node:
        bounds.append(f"matching `{node['pattern']}`")
    if isinstance(node.get("not"), dict) and set(node["not"]) == {"const"}:
        bounds.append(f"not {json.dumps(node['not']['const'])}")
    if isinstance(node.get("propertyNames"), dict):
        bounds.append(f"names: {', '.join(_bounds(node['propertyNames'])) or 'any'}")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "properties" not in node:
        bounds.append(f"each value: {_kind(extra)}")
    if "if" in node or "oneOf" in node or "anyOf" in node:
        bounds.append("more rules in the schema")
    return bounds


def _range(low: Any, high: Any, unit: str) -> str:
    unit = f" {unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low:,} to {high:,}{unit}" if low != high else f"exactly {low:,}{unit}"
    if low is not None:
        return f"at least {low:,}{unit}"
    return f"at most {high:,}{unit}"


def _default(node: dict[str, Any]) -> str:
    return f"; default `{json.dumps(node['default'])}`" if "default" in node else ""


def _either(choices: list[str]) -> str:
    return ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# ---- the command line ----


def cli_page() -> str:
    """`gm --help` and every subcommand's help, as the command prints them (at 100 columns)."""
    from gm.cli import build_parser

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width; the page has one width
    try:
        parser = build_parser()
        lines = [
            "# Command line flags",
            "",
            "Every command and flag, as `gm COMMAND --help` prints it (generated from the command line's own"
            " parser when this site is built). The [command line guide](../cli.md) tells what the commands are for.",
            "",
            "## gm",
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
            "",
        ]
        for name, command in _subcommands(parser):
            lines += [f"## gm {name}", "", "```text", command.format_help().rstrip(), "```", ""]
        return "\n".join(lines)
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns


def _subcommands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:  # argparse lists its subparsers nowhere else
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((prefix + name, sub))
                found += _subcommands(sub, prefix + name + " ")
    return found


# ---- the hook ----

PAGES = {
    "reference/dice-json.md": lambda: schema_page("dice-json"),
    "reference/world-json.md": lambda: schema_page("world-json"),
    "reference/cli.md": cli_page,
}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site, as if they were files in docs/."""
    from mkdocs.structure.files import File

    for path, page in PAGES.items():
        files.append(File.generated(config, path, content=page()))
    return files
