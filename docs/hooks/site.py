"""MkDocs hook: the pages' generated parts, made from the repository at every build.

- The machine-readable contract (`schemas/asyncapi.yaml`, `schemas/json/`) is served with the site
  under `contract/`, so the contract page links to the files the code exports.
- `<!-- generated:NAME -->` markers in a page are replaced: `channels` and `rejection-codes` from
  the AsyncAPI document, `example:MESSAGE:NAME` with an example record it holds (folded by the
  rules worker's own code), `bench` with the newest full benchmark report's table and plots.
- The game diagrams (`diagrams.py`) are drawn from the games' code.

Nothing generated is written into the repository: a clean clone builds the same site.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

sys.path.insert(0, str(Path(__file__).parent))

from diagrams import all_diagrams  # a sibling module: MkDocs loads hooks by path, not as a package

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MARKER = re.compile(r"<!-- generated:([a-z-]+)(?::([A-Za-z]+):([A-Za-z]+))? -->")


@cache
def asyncapi() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "schemas" / "asyncapi.yaml").read_text())


def newest_full_report() -> tuple[Path, dict[str, Any]] | None:
    """The newest report of a full `plylog bench` of every scenario (a `make bench`)."""
    with warnings.catch_warnings():  # kafka-python, imported on the way, uses a deprecated importlib call
        warnings.simplefilter("ignore", DeprecationWarning)
        from bench.runner import SCENARIOS

    for path in sorted(RESULTS.glob("*.json"), reverse=True):
        report = json.loads(path.read_text())
        if report.get("mode") == "full" and set(SCENARIOS) <= set(report["scenarios"]):
            return path, report
    return None


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in [*sorted((ROOT / "schemas").glob("json/**/*.json")), ROOT / "schemas" / "asyncapi.yaml"]:
        site_path = "contract/" + str(path.relative_to(ROOT / "schemas"))
        files.append(File.generated(config, site_path, abs_src_path=str(path)))
    for site_path, svg in all_diagrams().items():
        files.append(File.generated(config, site_path, content=svg))
    found = newest_full_report()
    if found is not None:
        for plot in found[1].get("plots", []):
            files.append(File.generated(config, f"benchmarks/{plot}", abs_src_path=str(RESULTS / plot)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return MARKER.sub(lambda m: _generated(m.group(1), m.group(2), m.group(3), page), markdown)


def _generated(name: str, message: str | None, example: str | None, page: Page) -> str:
    if name == "channels":
        return channels_table()
    if name == "rejection-codes":
        codes = asyncapi()["channels"]["results"]["x-plylog-rejection-codes"]
        return "| code | when |\n|---|---|\n" + "\n".join(f"| `{c}` | {text} |" for c, text in codes.items())
    if name == "example" and message and example:
        return example_block(message, example)
    if name == "bench":
        return bench_section(page)
    if name == "game-records":
        return game_records_table()
    raise ValueError(f"{page.file.src_uri}: unknown generated block {name!r}")


def channels_table() -> str:
    rows = ["| topic | key | written by | read by | retention | access |", "|---|---|---|---|---|---|"]
    for channel in asyncapi()["channels"].values():
        kafka = channel.get("bindings", {}).get("kafka", {})
        config = kafka.get("topicConfiguration", {})
        retention = config.get("x-plylog-retention") or {-1: "forever"}.get(config.get("retention.ms"), "")
        if "compact" in config.get("cleanup.policy", []):
            retention = "compacted"
        rows.append(
            f"| `{channel['address']}` | {channel['x-plylog-key']} | {', '.join(channel['x-plylog-writers'])} | "
            f"{', '.join(channel['x-plylog-readers'])} | {retention} | {channel['x-plylog-access']} |"
        )
    return "\n".join(rows)


def _types_and_fields(schema_file: Path) -> list[str]:
    schema = json.loads(schema_file.read_text())
    out = []
    for definition in schema.get("$defs", {}).values():
        properties = definition.get("properties", {})
        kind = properties.get("type", {}).get("const")
        if kind:
            fields = ", ".join(name for name in properties if name != "type")
            out.append(f"`{kind}`" + (f" {{{fields}}}" if fields else ""))
    return sorted(out)


def game_records_table() -> str:
    """Every game's actions and public events with their fields, from `schemas/json/<game>/`."""
    rows = ["| game | actions | public events |", "|---|---|---|"]
    game_dirs = (p for p in (ROOT / "schemas" / "json").iterdir() if (p / "actions.json").is_file())
    for game_dir in sorted(game_dirs):  # a folder of other records (matchmaking) has no actions.json
        actions = " · ".join(_types_and_fields(game_dir / "actions.json"))
        events = " · ".join(_types_and_fields(game_dir / "events.json"))
        rows.append(f"| `{game_dir.name}` | {actions} | {events} |")
    return "\n".join(rows)


def example_block(message: str, name: str) -> str:
    examples = asyncapi()["components"]["messages"][message].get("examples", [])
    for example in examples:
        if example["name"] == name:
            summary = example.get("summary", "")
            payload = json.dumps(example["payload"], indent=1, ensure_ascii=False)
            return f"*{summary}*\n\n```json\n{payload}\n```"
    known = ", ".join(e["name"] for e in examples)
    raise ValueError(f"no example {name!r} of {message} in schemas/asyncapi.yaml (it has: {known})")


def bench_section(page: Page) -> str:
    from bench.report import markdown_table

    found = newest_full_report()
    if found is None:
        return "*No full benchmark report is in `bench/results/` yet: run `make bench`.*"
    path, report = found
    lines = [markdown_table(report, path.name), ""]
    for plot in report.get("plots", []):
        kind = "throughput over time" if "throughput" in plot else "latency CDFs"
        lines.append(f"![{kind}, report {path.stem}](benchmarks/{plot})")
        lines.append("")
    return "\n".join(lines)
