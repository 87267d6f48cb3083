"""CPU per post of the intake alone (submission/intake.py), no HTTP: N
concurrent posters into the benchmark form for a few seconds, in one process,
against PostgreSQL. Prints posts/s and the CPU milliseconds a post cost this
process and PostgreSQL's backends (read from /proc), for each concurrency:
how much of a batch's cost is per batch, and how much per post.

    .venv/bin/python -m bench.intake_cpu --postgres postgresql://postgres@127.0.0.1/bench

Needs the data set (bench/dataset.py). Run on a quiet machine; VACUUM ANALYZE
runs before each concurrency (autovacuum is off on CI machines).
"""

import argparse
import asyncio
import os
import time

import uvloop

from bench.compare import vacuum
from bench.dataset import ORG_ID
from bench.run import BIG_FORM, POST_BODIES
from formsapi.db.engine import create_engine
from formsapi.db.session import create_read_sessionmaker, create_write_sessionmaker
from formsapi.submission.intake import Intake

_HZ = os.sysconf("SC_CLK_TCK")


def postgres_cpu() -> float:
    """CPU seconds used so far by every PostgreSQL process of this machine."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if not cmdline.read().startswith(b"postgres"):
                    continue
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        total += (int(fields[11]) + int(fields[12])) / _HZ
    return total


async def measure(url: str, posters: int, seconds: float) -> str:
    engine = create_engine(url)
    intake = Intake(create_write_sessionmaker(engine), create_read_sessionmaker(engine))
    answers = POST_BODIES["post_submission"]["answers"]
    done = 0
    stop = False

    async def poster() -> None:
        nonlocal done
        while not stop:
            await intake.submit(ORG_ID, BIG_FORM, dict(answers))
            done += 1

    tasks = [asyncio.create_task(poster()) for _ in range(posters)]
    await asyncio.sleep(1.5)  # the form compiled, the pool filled
    start = (done, time.process_time(), postgres_cpu(), time.monotonic())
    await asyncio.sleep(seconds)
    end = (done, time.process_time(), postgres_cpu(), time.monotonic())
    stop = True
    await asyncio.gather(*tasks)
    await engine.dispose()
    posts = end[0] - start[0]
    return (
        f"| {posters} | {posts / (end[3] - start[3]):,.0f} "
        f"| {1000 * (end[1] - start[1]) / posts:.3f} | {1000 * (end[2] - start[2]) / posts:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/bench")
    parser.add_argument("--posters", nargs="+", type=int, default=[4, 8, 16, 32])
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    print("| posters | posts/s | Python ms/post | PostgreSQL ms/post |")
    print("|---|---|---|---|")
    for posters in args.posters:
        vacuum(args.postgres)
        print(uvloop.run(measure(args.postgres, posters, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
