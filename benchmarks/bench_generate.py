"""Generation benchmark: time, file size and rows per second of ``generate_org`` at several scales.

The baseline, measured in the same run, writes the same number of rows per table into the same
empty tables with a bare ``executemany`` of constant rows (only the Id varies): the floor any
generator that goes through SQLite must pay. The ratio says how much the generator adds on top
(drawing, text rendering, hashing).

Usage:
    python benchmarks/bench_generate.py [--scales 0.1 1 10] [--seed 0]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from crmarena_gym.datagen import generate_org
from crmarena_gym.schema import OBJECTS, create_tables, quote_identifier


def baseline_seconds(path: Path, row_counts: dict[str, int]) -> float:
    """Seconds to write ``row_counts`` constant rows per table with executemany."""
    started = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    create_tables(conn)
    conn.execute("BEGIN")
    for obj in OBJECTS:
        cols = [f.column_name for f in obj.stored_fields]
        sql = (
            f"INSERT INTO {quote_identifier(obj.name)} ({', '.join(quote_identifier(c) for c in cols)}) "
            f"VALUES ({', '.join('?' * len(cols))})"
        )
        filler = ("x" * 16,) * (len(cols) - 1)
        conn.executemany(sql, ((f"{obj.key_prefix}{i:015d}", *filler) for i in range(row_counts[obj.name])))
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    header = f"{'scale':>6} {'rows':>10} {'gen s':>8} {'rows/s':>10} {'MB':>8} {'base s':>8} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales:
            out = Path(tmp) / f"org-{scale:g}.sqlite"
            started = time.perf_counter()
            manifest = generate_org(out, seed=args.seed, scale=scale)
            gen = time.perf_counter() - started
            size = out.stat().st_size / 1e6
            out.unlink()
            rows = sum(manifest.row_counts.values())
            base = baseline_seconds(Path(tmp) / "baseline.sqlite", manifest.row_counts)
            (Path(tmp) / "baseline.sqlite").unlink()
            print(
                f"{scale:>6g} {rows:>10,} {gen:>8.2f} {rows / gen:>10,.0f} {size:>8.1f} {base:>8.2f} {gen / base:>6.1f}"
            )


if __name__ == "__main__":
    main()
