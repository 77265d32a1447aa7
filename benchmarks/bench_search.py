"""Knowledge search: the per-call CPU time of ``search_knowledge_articles`` against an older commit.

The searches are the oracle's over the default instances (260 calls, 45 distinct terms, collected with
this checkout's oracle). Each round runs, in fresh processes, this checkout, this checkout with its hits
fetched the old way (the ``Id IN (...)`` query written out and parsed again: ``text path``) and the older
commit (default c0821b3, checked out into a temporary git worktree), the order alternating between rounds.
All search the same org file (default: this checkout's default org). In each process, after one untimed
search of a term not among them (the search index built, the fetch's plan compiled), each distinct term is
searched once (its *first* call), then ``--reps`` times in a row (*again*: CPU time per call,
``time.process_time``), then the oracle's 260 calls are played in order. Medians over the rounds are
compared term by term. This checkout keeps each statement parsed and each search's hits (the index never
changes): a term searched again costs the fetch of its records only.

The older commit searches articles with AND between words where Salesforce (and this checkout) use OR,
so it finds fewer articles per search; the records returned per call are printed beside the times.

Target (issue 32): every search within 1.2x of the older commit's per-call time.

Usage:
    python benchmarks/bench_search.py [--rounds 5] [--reps 20] [--org PATH] [--commit c0821b3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from _old_commit import OLD_COMMIT, REPO_ROOT, Sides, alternating, load_line, old_checkout

TARGET_RATIO = 1.2

_CHILD = """
import json, sys, time
from crmarena_gym.org import LocalOrg
from crmarena_gym.tools import search_knowledge_articles
org_path, terms_file, reps, text_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
if text_path:
    LocalOrg._query_in_list = lambda self, soql, at, raws: None
org = LocalOrg(org_path)
calls = json.loads(open(terms_file).read())
distinct = list(dict.fromkeys(calls))
search_knowledge_articles(org, "untimed warm up")  # the index built, the fetch's plan compiled
first = {}
for term in distinct:
    started = time.process_time()
    hits = search_knowledge_articles(org, term)
    first[term] = time.process_time() - started
hits = {t: len(search_knowledge_articles(org, t)) for t in distinct}
per_term = {}
for term in distinct:
    started = time.process_time()
    for _ in range(reps):
        search_knowledge_articles(org, term)
    per_term[term] = (time.process_time() - started) / reps
started = time.process_time()
for term in calls:
    search_knowledge_articles(org, term)
sequence = (time.process_time() - started) / len(calls)
print(json.dumps({"first": first, "per_term": per_term, "sequence": sequence, "hits": hits}))
"""


def _oracle_searches() -> list[str]:
    from crmarena_gym.org import LocalOrg, default_org_path
    from crmarena_gym.tasks import default_tasks, oracle_trace

    path = default_org_path()
    org = LocalOrg(path)
    terms = []
    for instance in default_tasks(path):
        for call in oracle_trace(instance, org).calls:
            if call.name == "search_knowledge_articles":
                terms.append(call.arguments["search_term"])
    return terms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--reps", type=int, default=20, help="calls of each term in a row (default 20)")
    parser.add_argument("--org", default=None, help="the org file every side searches (default: the default org)")
    parser.add_argument("--commit", default=OLD_COMMIT, help=f"the older commit (default {OLD_COMMIT})")
    args = parser.parse_args()

    from crmarena_gym.org import default_org_path

    org = str(Path(args.org) if args.org else default_org_path())
    calls = _oracle_searches()
    print(f"{len(calls)} searches, {len(set(calls))} distinct terms; org {org}")
    print(f"before: {load_line()}")
    names = ("new", "text path", "old")
    results: dict[str, list[dict]] = {n: [] for n in names}
    with old_checkout(args.commit) as old_root, tempfile.TemporaryDirectory(prefix="bench_search_") as tmp:
        workdir = Path(tmp)
        terms_file = workdir / "terms.json"
        terms_file.write_text(json.dumps(calls))
        sides = Sides({"new": REPO_ROOT, "text path": REPO_ROOT, "old": old_root}, workdir)
        for side in names:
            sides.check(side)
        for n, side in alternating(names, args.rounds):
            flag = "1" if side == "text path" else "0"
            run = sides.run(side, ["-c", _CHILD, org, str(terms_file), str(args.reps), flag])
            results[side].append(json.loads(run.stdout))
            print(
                f"round {n + 1} {side}: {results[side][-1]['sequence'] * 1e6:.0f} us per call over the 260 "
                f"({run.cpu:.2f} s CPU, {run.wall:.2f} s wall); {load_line()}"
            )

    distinct = list(dict.fromkeys(calls))
    per_term = {
        side: {t: statistics.median(r["per_term"][t] for r in results[side]) for t in distinct} for side in names
    }
    first = {side: {t: statistics.median(r["first"][t] for r in results[side]) for t in distinct} for side in names}
    sequence = {side: statistics.median(r["sequence"] for r in results[side]) for side in names}
    hits = {side: results[side][0]["hits"] for side in names}
    print()
    label = {"new": "this checkout", "text path": "this checkout, text path", "old": f"commit {args.commit}"}
    print(
        f"medians of {args.rounds} rounds (CPU per call)   260 in order   term, first call   term, again"
        "   records per call"
    )
    for side in names:
        mean_hits = sum(hits[side][t] for t in calls) / len(calls)
        print(
            f"{label[side]:<36} {sequence[side] * 1e6:9.0f} us {statistics.median(first[side].values()) * 1e6:14.0f} us"
            f" {statistics.median(per_term[side].values()) * 1e6:10.0f} us {mean_hits:13.1f}"
        )
    worst_of: dict[str, float] = {}
    for other in ("old", "text path"):
        print(f"this checkout / {label[other]}: 260 in order {sequence['new'] / sequence[other]:.2f}x")
        for kind, times in (("first call", first), ("again", per_term)):
            ratios = {t: times["new"][t] / times[other][t] for t in distinct}
            worst = max(ratios, key=ratios.__getitem__)
            worst_of[f"{other} {kind}"] = ratios[worst]
            print(
                f"  by term, {kind}: median {statistics.median(ratios.values()):.2f}x, best "
                f"{min(ratios.values()):.2f}x, worst {ratios[worst]:.2f}x ({worst!r}: {hits['new'][worst]} "
                f"against {hits[other][worst]} records)"
            )
    for kind in ("first call", "again"):
        worst = worst_of[f"old {kind}"]
        print(
            f"target every search within {TARGET_RATIO}x of {args.commit}'s per call ({kind}): worst {worst:.2f}x "
            f"-> {'met' if worst <= TARGET_RATIO else 'NOT met'}"
        )
    print(f"after: {load_line()}")


if __name__ == "__main__":
    main()
