"""Render a benchmark run as the Markdown section bench/RESULTS.md keeps."""

from collections import defaultdict
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
