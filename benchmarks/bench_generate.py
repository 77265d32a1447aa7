"""Generation benchmark: time, CPU, file size and rows per second of ``generate_org`` for every org kind.

The baseline, measured in the same run, writes the same number of rows per table into the same empty tables
of the same kind with a bare ``executemany`` of constant rows (only the Id varies): the floor any generator
that goes through SQLite must pay. The ratio says how much the generator adds on top (drawing, text
rendering, planting, hashing). Rounds alternate generator and baseline, kind after kind, and the medians are
reported beside the machine's load.

After the timings, the rows per object at scale 1 of each kind beside the figures they rebuild: the original
CRMArena org's (ORIGINAL.md section 4) for the service kind, and PRO.md's B2B figures (section 4.1, read from
``../shared/crmarena-pro/PRO.md`` when it is beside the checkout) for the Pro kinds; PRO.md gives no per-object
B2C figures (only about 54,600 records in all).

Usage:
    python benchmarks/bench_generate.py [--kinds service b2b b2c] [--scales 1] [--rounds 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from crmarena_gym.datagen import ORIGINAL_ROW_COUNTS, Manifest, generate_org
from crmarena_gym.schema import ORG_KINDS, create_tables, org_schema, quote_identifier

PRO_MD = Path(__file__).resolve().parents[2] / "shared" / "crmarena-pro" / "PRO.md"


def baseline_seconds(path: Path, kind: str, row_counts: dict[str, int]) -> float:
    """Seconds to write ``row_counts`` constant rows per table of ``kind`` with executemany."""
    started = time.perf_counter()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    create_tables(conn, kind)
    conn.execute("BEGIN")
    for obj in org_schema(kind).objects:
        cols = [f.column_name for f in obj.stored_fields]
        sql = (
            f"INSERT INTO {quote_identifier(obj.name)} ({', '.join(quote_identifier(c) for c in cols)}) "
            f"VALUES ({', '.join('?' * len(cols))})"
        )
        filler = ("x" * 16,) * (len(cols) - 1)
        conn.executemany(sql, ((f"{obj.key_prefix}{i:015d}", *filler) for i in range(row_counts.get(obj.name, 0))))
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - started


def pro_md_figures() -> dict[str, int]:
    """Object -> B2B rows, from the table of PRO.md section 4.1 (empty when PRO.md is not beside the checkout)."""
    if not PRO_MD.is_file():
        return {}
    text = PRO_MD.read_text(encoding="utf-8")
    section = text[text.index("### 4.1") : text.index("### 4.2")]
    figures: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"[\d,\s]+", cells[3]):
            continue
        names = [n.strip() for n in cells[0].split(",")]
        counts = [int(c.replace(",", "")) for c in re.findall(r"\d[\d,]*", cells[3])]
        figures.update(dict(zip(names, counts, strict=False)))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", choices=ORG_KINDS, default=list(ORG_KINDS))
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    wall: dict[tuple[str, float], list[float]] = {}
    cpu: dict[tuple[str, float], list[float]] = {}
    base: dict[tuple[str, float], list[float]] = {}
    manifests: dict[tuple[str, float], Manifest] = {}
    sizes: dict[tuple[str, float], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for scale in args.scales:
                for kind in args.kinds:
                    key = (kind, scale)
                    out = Path(tmp) / f"{kind}-{scale:g}.sqlite"
                    started, started_cpu = time.perf_counter(), time.process_time()
                    manifests[key] = generate_org(out, kind=kind, seed=args.seed, scale=scale)
                    wall.setdefault(key, []).append(time.perf_counter() - started)
                    cpu.setdefault(key, []).append(time.process_time() - started_cpu)
                    sizes[key] = out.stat().st_size / 1e6
                    out.unlink()
                    counts = {**manifests[key].row_counts}
                    base.setdefault(key, []).append(baseline_seconds(Path(tmp) / "baseline.sqlite", kind, counts))
                    (Path(tmp) / "baseline.sqlite").unlink()
    header = f"{'kind':>8} {'scale':>6} {'rows':>9} {'wall s':>7} {'cpu s':>7} {'rows/s':>9} {'MB':>6} "
    header += f"{'base s':>7} {'ratio':>6}"
    print(f"medians of {args.rounds} rounds")
    print(header)
    print("-" * len(header))
    for scale in args.scales:
        for kind in args.kinds:
            key = (kind, scale)
            rows = sum(manifests[key].row_counts.values())
            w, c, b = (statistics.median(v[key]) for v in (wall, cpu, base))
            print(
                f"{kind:>8} {scale:>6g} {rows:>9,} {w:>7.2f} {c:>7.2f} {rows / w:>9,.0f} {sizes[key]:>6.1f} "
                f"{b:>7.2f} {w / b:>6.1f}"
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if 1.0 not in args.scales:
        return
    pro = pro_md_figures()
    print()
    print("rows per object at scale 1, beside the figures rebuilt (service: ORIGINAL.md 4; b2b: PRO.md 4.1)")
    names: list[str] = []
    for kind in args.kinds:
        names += [o.name for o in org_schema(kind).objects if o.name not in names]
    kinds = list(args.kinds)
    cols = "".join(f" {k:>9} {'ref':>7}" for k in kinds)
    print(f"{'object':<27}{cols}")
    for name in names:
        line = f"{name:<27}"
        for kind in kinds:
            got = manifests[(kind, 1.0)].row_counts.get(name)
            ref = ORIGINAL_ROW_COUNTS.get(name) if kind == "service" else pro.get(name) if kind == "b2b" else None
            line += f" {got if got is not None else '':>9} {ref if ref is not None else '-':>7}"
        print(line)
    references = {"service": sum(ORIGINAL_ROW_COUNTS.values()), "b2b": sum(pro.values()) if pro else "-"}
    totals = "".join(f" {sum(manifests[(k, 1.0)].row_counts.values()):>9} {references.get(k, '-'):>7}" for k in kinds)
    print(f"{'total':<27}{totals}")
    if "b2b" in kinds and not pro:
        print(f"(PRO.md not found at {PRO_MD}: no B2B reference figures)")


if __name__ == "__main__":
    main()
