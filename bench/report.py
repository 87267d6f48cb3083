"""Render a benchmark run as the Markdown section bench/RESULTS.md keeps."""

import sys
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TARGETS = ("service", "service_no_auth", "bare_floor", "http_floor", "db_floor")


def _fmt(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def render(run: Any) -> str:
    by_key: dict[tuple[str, str, int], dict[str, Any]] = defaultdict(dict)
    for m in run.measures:
        by_key[(m.engine, m.scenario, m.connections)][m.target] = m
    lines = [
        f"## Run of {run.started}",
        "",
        f"Command: `{run.command}`  ",
        f"Machine: {run.machine['cores']} cores ({run.machine['cpu']}), "
        f"{run.machine['memory_gb']} GiB, Linux {run.machine['kernel']}  ",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items()) + "  ",
        f"Settings: {run.settings}",
        "",
        "| engine | scenario | conns | service req/s | p50 ms | p99 ms | non-2xx | peak worker RSS MB "
        "| no auth+limit | bare handler | HTTP floor | DB floor (pgbench) "
        "| % of bare | % of HTTP | % of DB |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for (engine, scenario, connections), targets in sorted(by_key.items()):
        service = targets.get("service")
        if service is None:
            continue

        floors = {name: m.rps for name, m in targets.items()}

        def rps(name: str, floors: dict[str, float] = floors) -> float | None:
            return floors.get(name)

        def pct(name: str, floors: dict[str, float] = floors, ours: float = service.rps) -> str:
            floor = floors.get(name)
            return f"{100 * ours / floor:.0f}%" if floor else ""

        lines.append(
            f"| {engine} | {scenario} | {connections} | {_fmt(service.rps)} "
            f"| {_fmt(service.p50_ms, 2)} | {_fmt(service.p99_ms, 2)} | {service.non_2xx} "
            f"| {_fmt(service.peak_rss_mb)} | {_fmt(rps('service_no_auth'))} "
            f"| {_fmt(rps('bare_floor'))} | {_fmt(rps('http_floor'))} | {_fmt(rps('db_floor'))} "
            f"| {pct('bare_floor')} | {pct('http_floor')} | {pct('db_floor')} |"
        )
    return "\n".join(lines) + "\n"


HEADER = """# Benchmark results

Newest run first. Each section is one `python -m bench.run` (see bench/README.md);
ratios compare targets measured in the same run, interleaved, median of rounds.
"""


def record(section: str, path: Path) -> None:
    """Put the run above the earlier runs in RESULTS.md, below its hand-written
    sections (targets, history), keeping every earlier run."""
    text = path.read_text() if path.exists() else HEADER
    head, marker, runs = text.partition("\n## Run of ")
    earlier = f"## Run of {runs}" if marker else ""
    path.write_text(f"{head.rstrip()}\n\n{section}\n{earlier}")


def section(title: str, note: str, header: list[str], rows: list[str]) -> str:
    """A run of one of the kit's smaller tools (bench.sync, bench.compare) as
    a section: title, the command that ran, versions, a note, a table."""
    from bench.run import _versions

    module = Path(sys.argv[0]).stem
    versions = ", ".join(f"{k} {v}" for k, v in _versions().items())
    return "\n".join(
        [
            f"## Run of {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {title}",
            "",
            f"Command: `python -m bench.{module} {' '.join(sys.argv[1:])}`  ",
            f"Versions: {versions}  ",
            note,
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
            *rows,
            "",
        ]
    )


def publish(report: str, keep: bool) -> None:
    """Print the section and, unless told not to, put it in RESULTS.md."""
    print(report)
    if keep:
        record(report, Path(__file__).resolve().parent / "RESULTS.md")
