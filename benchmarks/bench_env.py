"""Environment speed: oracle episodes through the env, fresh and warm, against a baseline in the same run.

Runs the oracle's actions (precomputed) through a ``CRMArenaEnv`` for two sets of instances of the org.
The fresh set (``seed`` 1, never seen) is timed *fresh* from the same starting point each time (plan
caches and the caches of values derived from literals and arguments emptied, then the default test
set, ``seed`` 0, played, as in a process that has seen some instances): with plans cached by query
text only (the baseline: the engine before plans by shape; 1,024 plans kept, one shaper generated per
plan) and with plans by shape (each per-instance query answered from the plan of its shape, IN lists of
any length included). The fresh set is then played again, *warm* (every plan cached), in turn with its
org calls run on the bare engine (same task dates) for the env's overhead. Both sides do the same org
work: the calls are recorded in a pass of their own (the timed env reads the org directly, not through
the recorder), and the bare engine makes each episode's dated view where the env makes it, at reset.

The machine is shared: every pass is timed ``--rounds`` times, the rounds alternating what is compared,
and the best kept; wall-clock and CPU seconds of this process are both reported (the CPU time does not
count the time other processes took the core). Figures are ratios within this run. The warm comparison is
also timed in slices of 30 episodes, each slice played by the env and replayed on the bare engine in turn,
``--rounds`` times, and the best of each slice summed: a busy spell then spoils one slice of one round,
not a whole pass.

With ``--phases``, the env's warm work is split by part (reading actions, argument checks and the tools'
Python, rendering, resets, the rest of the step, and the engine's calls slowed inside the env), each timed
alone over all the pass's steps; and the warm pass's steps are timed by kind: those that call the engine
(query tools and queries, with the resets that make each episode's view) against the bare engine, and
those that call none (calculation tools, submissions), which the bare engine's side has nothing for.

Usage:
    python benchmarks/bench_env.py [--per-task N] [--scale X] [--rounds 3] [--phases]

Targets: fresh instances at least 2x faster with plans by shape than the baseline; the warm env time
under 1.5x the time its calls take on the bare engine (slice by slice).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from crmarena_gym.datagen import generate_org
from crmarena_gym.envs import CRMArenaEnv, _render, parse_action
from crmarena_gym.org import LocalOrg, Org, _local, _sosl
from crmarena_gym.org.soql import _compiler, _shapes, compile_shaped, lift
from crmarena_gym.schema import _ids
from crmarena_gym.tasks import default_tasks, oracle_trace
from crmarena_gym.tools import _calculations, _common


class RecordingOrg(Org):
    """Passes every call to a LocalOrg and records (today, kind, text); a view made for an episode's date is
    recorded as (today, "view", "")."""

    def __init__(self, inner: LocalOrg, log: list[tuple[Any, str, str]]) -> None:
        self.inner = inner
        self.log = log

    def query(self, soql: str) -> dict[str, Any]:
        self.log.append((self.inner.today, "query", soql))
        return self.inner.query(soql)

    def search(self, sosl: str) -> dict[str, Any]:
        self.log.append((self.inner.today, "search", sosl))
        return self.inner.search(sosl)

    @property
    def today(self) -> dt.date | None:
        return self.inner.today

    def with_today(self, today: dt.date | str | None) -> RecordingOrg:
        view = self.inner.with_today(today)
        self.log.append((view.today, "view", ""))
        return RecordingOrg(view, self.log)


def play(env: CRMArenaEnv, instances: list[Any], traces: dict[int, list[str]]) -> tuple[float, float, int, float]:
    """Play every instance's oracle actions: (wall seconds, CPU seconds, steps, reward summed)."""
    steps, solved = 0, 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    for inst in instances:
        env.reset(options={"task_id": inst.idx})
        reward = 0.0
        for action in traces[inst.idx]:
            _, reward, *_ = env.step(action)
            steps += 1
        solved += float(reward)
    return time.perf_counter() - wall, time.process_time() - cpu, steps, solved


def replay(org: LocalOrg, log: list[tuple[Any, str, str]]) -> tuple[float, float]:
    """The logged calls on the bare engine, each on a view of its date made where the env made it (at each
    episode's reset): (wall seconds, CPU seconds)."""
    view = org
    wall, cpu = time.perf_counter(), time.process_time()
    for today, kind, text in log:
        if kind == "view":
            view = org.with_today(today)
        elif kind == "query":
            view.query(text)
        else:
            view.search(text)
    return time.perf_counter() - wall, time.process_time() - cpu


#: Episodes in a slice of the warm comparison (:func:`in_slices`).
SLICE = 30


def by_episode(log: list[tuple[Any, str, str]]) -> list[list[tuple[Any, str, str]]]:
    """The logged calls cut into episodes: each starts with the view its reset made."""
    episodes: list[list[tuple[Any, str, str]]] = []
    for entry in log:
        if entry[1] == "view":
            episodes.append([])
        episodes[-1].append(entry)
    return episodes


def in_slices(
    env: CRMArenaEnv,
    org: LocalOrg,
    instances: list[Any],
    traces: dict[int, list[str]],
    log: list[tuple[Any, str, str]],
    rounds: int,
    size: int = SLICE,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The warm env and the bare engine on the same calls, slice by slice: ((wall, CPU) of the env, (wall, CPU)
    of the engine), each the sum over slices of ``size`` episodes of the least time of that slice in ``rounds``.

    Each slice is played by the env and replayed on the bare engine one after the other (which goes first
    alternates), so that a busy spell of the shared machine spoils one slice of one round, not a whole pass."""
    episodes = by_episode(log)
    if len(episodes) != len(instances):
        raise SystemExit(f"the log holds {len(episodes)} episodes for {len(instances)} instances")
    inf = float("inf")
    starts = range(0, len(instances), size)
    env_best = {start: [inf, inf] for start in starts}
    engine_best = {start: [inf, inf] for start in starts}
    for round_ in range(rounds):
        for k, start in enumerate(starts):
            chunk = instances[start : start + size]
            chunk_log = [entry for episode in episodes[start : start + size] for entry in episode]
            for side in (0, 1) if (round_ + k) % 2 == 0 else (1, 0):
                times = play(env, chunk, traces)[:2] if side == 0 else replay(org, chunk_log)
                best_of = env_best if side == 0 else engine_best
                best_of[start] = [min(old, new) for old, new in zip(best_of[start], times, strict=True)]

    def total(best_of: dict[int, list[float]]) -> tuple[float, float]:
        return sum(times[0] for times in best_of.values()), sum(times[1] for times in best_of.values())

    return total(env_best), total(engine_best)


#: Caches of values derived from a query's literals or a tool's arguments (ids, datetimes, patterns) or
#: results (the repr of long texts):
#: emptied before each fresh pass, so that both start from what the seen set left, whichever runs first.
VALUE_CACHES = (
    _ids._valid_id_text,
    _shapes._spellings,
    _compiler._canonical_id,
    _sosl._wildcard_regex,
    _sosl._parsed_under,
    _local._lift_short,
    _common._argument_datetime,
    _common._row_datetime,
    _common._text_id_problem,
    _common._ACCEPTED_IDS,
    _calculations._span_seconds,
    _render._REPRS,
)


class KeptAnswers(Org):
    """The org's answers to the warm pass's calls, kept: the env's own work timed without the engine's."""

    def __init__(self, answers: dict[tuple[Any, str, str], dict[str, Any]], today: dt.date | None = None) -> None:
        self.answers = answers
        self._today = today

    def query(self, soql: str) -> dict[str, Any]:
        return self.answers[(self._today, "query", soql)]

    def search(self, sosl: str) -> dict[str, Any]:
        return self.answers[(self._today, "search", sosl)]

    @property
    def today(self) -> dt.date | None:
        return self._today

    def with_today(self, today: dt.date | str | None) -> KeptAnswers:
        return KeptAnswers(self.answers, dt.date.fromisoformat(today) if isinstance(today, str) else today)


def cpu_best(rounds: int, work: Any) -> float:
    """The least CPU seconds ``work()`` took over ``rounds`` runs."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return min(times)


def phases(
    env: CRMArenaEnv, org: LocalOrg, instances: list[Any], traces: dict[int, list[str]], log: list[Any], rounds: int
) -> list[tuple[str, float]]:
    """CPU seconds of each part of the env's work on the warm pass, each timed alone over all its steps.

    The parts: reading the actions; the tools' calls (argument checks and the tools' own Python) on the
    org's answers kept from the warm pass; rendering the results; resets; the rest of the env's step (the
    env played on the kept answers, less the parts); and what the engine's calls cost more inside the env
    than alone (the warm pass, less the env on kept answers and the bare engine: caches shared with the env's
    work)."""
    answers: dict[tuple[Any, str, str], dict[str, Any]] = {}
    view: Org = org
    for today, kind, text in log:
        if kind == "view":
            view = org.with_today(today)
        else:
            answers[(today, kind, text)] = view.query(text) if kind == "query" else view.search(text)
    kept = KeptAnswers(answers)
    kept_env = CRMArenaEnv(org=kept, tasks=instances, toolset="flex")
    actions = [a for i in instances for a in traces[i.idx]]
    calls: list[tuple[str, dict[str, Any], Org]] = []  # (function, arguments, the episode's view) of each call
    results = []
    for inst in instances:
        kept_view = kept.with_today(inst.today)
        kept_env.reset(options={"task_id": inst.idx})
        for action in traces[inst.idx]:
            parsed = parse_action(action, functions=True)
            if parsed.kind == "call" and parsed.name != "submit":
                calls.append((parsed.name or "", parsed.arguments, kept_view))
            info = kept_env.step(action)[-1]
            if "result" in info:
                results.append(info["result"].value)
    tools = env.tools
    parts = [
        ("read the actions (JSON)", cpu_best(rounds, lambda: [parse_action(a, functions=True) for a in actions])),
        ("argument checks and the tools' Python", cpu_best(rounds, lambda: [tools.call(*c) for c in calls])),
        ("render the results", cpu_best(rounds, lambda: [env.render_result(r, query=False) for r in results])),
        ("resets", cpu_best(rounds, lambda: [env.reset(options={"task_id": i.idx}) for i in instances])),
    ]
    # The three passes in turn, round after round, so that a busy spell falls on all alike.
    own_runs, together_runs, alone_runs = [], [], []
    for _ in range(rounds):
        own_runs.append(play(kept_env, instances, traces)[1])
        together_runs.append(play(env, instances, traces)[1])
        alone_runs.append(replay(org, log)[1])
    own, together, alone = min(own_runs), min(together_runs), min(alone_runs)
    parts.append(("the rest of the step (dispatch, info, submit)", own - sum(t for _, t in parts)))
    parts.append(("the engine's calls, inside the env less alone", together - own - alone))
    return parts


def step_kinds(env: CRMArenaEnv, instances: list[Any], traces: dict[int, list[str]]) -> dict[str, str]:
    """Each action's kind: "engine" (a query, or a call of a tool that reads the org), "calculation" (a call of
    a pure tool), "submit", or "invalid" (an action that cannot be read, or a call of no tool)."""
    kinds = {}
    for action in (a for i in instances for a in traces[i.idx]):
        parsed = parse_action(action, functions=True)
        kind = "submit" if parsed.name == "submit" else parsed.kind
        if kind == "call":
            tool = env.tools.get(parsed.name or "")
            kind = "invalid" if tool is None else "engine" if tool.kind == "query" else "calculation"
        kinds[action] = "engine" if kind == "query" else kind
    return kinds


def by_kind(
    env: CRMArenaEnv, instances: list[Any], traces: dict[int, list[str]], kinds: dict[str, str]
) -> dict[str, float]:
    """CPU seconds of the env's resets and of its steps by kind (:func:`step_kinds`) over one pass."""
    clock = time.process_time
    spent = dict.fromkeys(("reset", "engine", "calculation", "submit", "invalid"), 0.0)
    for inst in instances:
        started = clock()
        env.reset(options={"task_id": inst.idx})
        spent["reset"] += clock() - started
        for action in traces[inst.idx]:
            started = clock()
            env.step(action)
            spent[kinds[action]] += clock() - started
    return spent


def best(*runs: tuple[float, ...]) -> tuple[float, ...]:
    """The least of each figure over several runs (the machine is shared: slower runs were interrupted)."""
    return tuple(min(figures) for figures in zip(*runs, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", type=int, default=130)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3, help="each pass is timed this many times (the best kept)")
    parser.add_argument("--phases", action="store_true", help="also time each part of the env's warm work alone")
    args = parser.parse_args()

    path = Path(tempfile.mkdtemp()) / "org.sqlite"
    generate_org(path, seed=0, scale=args.scale)
    seen = default_tasks(path, per_task=args.per_task)
    fresh = default_tasks(path, seed=1, per_task=args.per_task)
    org = LocalOrg(path)
    backend = org._live()

    def traces_of(instances: list[Any]) -> dict[int, list[str]]:
        return {
            i.idx: [c.to_action() for c in oracle_trace(i, org.with_today(i.params["today"])).actions]
            for i in instances
        }

    seen_traces, fresh_traces = traces_of(seen), traces_of(fresh)
    seen_keys = {(i.params["today"], a) for i in seen for a in seen_traces[i.idx]}
    repeated = sum((i.params["today"], a) in seen_keys for i in fresh for a in fresh_traces[i.idx])
    log: list[tuple[Any, str, str]] = []
    # The timed envs read the org itself; one more env records the fresh set's calls for the bare engine.
    seen_env = CRMArenaEnv(org=org, tasks=seen, toolset="flex")
    fresh_env = CRMArenaEnv(org=org, tasks=fresh, toolset="flex")
    recording_env = CRMArenaEnv(org=RecordingOrg(org, log), tasks=fresh, toolset="flex")

    shaper = _compiler._generate_shaper

    def fresh_pass(by_shape: bool) -> tuple[float, float]:
        """The fresh set played from the same starting point: plan caches and value caches emptied, then
        the seen set played."""
        backend.plans.clear()
        shaper.cache_clear()
        for cache in VALUE_CACHES:
            cache.cache_clear()
        index = backend.cache.get(_sosl._CACHE_KEY)
        if isinstance(index, _sosl.SearchIndex):  # the ids each search found (the index itself stays built)
            index._hits.clear()
            index._hit_ids = 0
        # The baseline is the engine before plans by shape: 1,024 plans by text, a shaper per plan.
        backend.by_shape = by_shape
        backend.plans.max_entries = _local.PLAN_CACHE_SIZE if by_shape else 1024
        _compiler._generate_shaper = shaper if by_shape else shaper.__wrapped__  # type: ignore[attr-defined]
        try:
            play(seen_env, seen, seen_traces)
            wall, cpu, _, solved = play(fresh_env, fresh, fresh_traces)
        finally:
            backend.by_shape, backend.plans.max_entries = True, _local.PLAN_CACHE_SIZE
            _compiler._generate_shaper = shaper
        if solved != len(fresh):
            raise SystemExit(f"the oracle solved {solved:.0f} of {len(fresh)} fresh instances (by_shape={by_shape})")
        return wall, cpu

    # The rounds alternate the baseline and plans by shape, so that a busy spell falls on both alike.
    fresh_runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for _ in range(args.rounds):
        for by_shape in (False, True):
            fresh_runs[by_shape].append(fresh_pass(by_shape))
    base_wall, base_cpu = best(*fresh_runs[False])
    shaped_wall, shaped_cpu = best(*fresh_runs[True])

    compiled = 0

    def counting(*a: Any, **k: Any) -> Any:
        nonlocal compiled
        compiled += 1
        return compile_shaped(*a, **k)

    _local.compile_shaped, _local.compile_query = counting, counting  # type: ignore[assignment]
    _, _, steps, solved = play(recording_env, fresh, fresh_traces)  # every plan cached from here on
    warm_log = list(log)
    warm_runs, engine_runs = [], []
    for _ in range(args.rounds):  # the env and the bare engine in turn
        warm_runs.append(play(fresh_env, fresh, fresh_traces)[:2])
        engine_runs.append(replay(org, warm_log))
    warm_wall, warm_cpu = best(*warm_runs)
    engine_wall, engine_cpu = best(*engine_runs)
    (slice_wall, slice_cpu), (slice_engine_wall, slice_engine_cpu) = in_slices(
        fresh_env, org, fresh, fresh_traces, warm_log, args.rounds
    )
    reset_times = []
    for inst in fresh:
        started = time.perf_counter()
        fresh_env.reset(options={"task_id": inst.idx})
        reset_times.append(time.perf_counter() - started)

    n = len(fresh)
    calls = [(k, t) for _, k, t in warm_log if k != "view"]
    queries = [t for k, t in calls if k == "query"]
    shapes = {lift(t).key if lift(t) is not None else t for t in queries}
    print(f"org scale {args.scale}; {len(seen)} instances seen first, then {n} fresh ones (task seed 1)")
    print(
        f"fresh set: {steps} env steps, {len(calls)} org calls, "
        f"{len(set(queries))} distinct queries of {len(shapes)} shapes"
    )
    print(f"  actions also played in the seen set (same text and date): {repeated}/{steps}")
    print(f"oracle solved {solved:.0f}/{n}")
    print(f"each pass timed {args.rounds} times, the best kept; wall-clock and CPU seconds (this process)")
    print(f"{'':44} {'wall s':>8} {'CPU s':>8} {'wall ms/ep':>11}")
    rows = [
        ("fresh, plans by text (the engine before)", base_wall, base_cpu),
        ("fresh, plans by shape", shaped_wall, shaped_cpu),
        ("warm (the fresh set again)", warm_wall, warm_cpu),
        ("engine alone on the warm pass's calls", engine_wall, engine_cpu),
    ]
    for label, wall, cpu in rows:
        print(f"{label:44} {wall:8.3f} {cpu:8.3f} {wall / n * 1e3:11.2f}")
    print(
        f"  speedup on fresh instances: {base_wall / shaped_wall:.2f}x wall, {base_cpu / shaped_cpu:.2f}x CPU "
        "(target >= 2x)"
    )
    print(f"  queries compiled in the warm pass: {compiled} (every plan cached: 0)")
    print(f"  fresh by shape / warm: {shaped_wall / warm_wall:.2f}x wall, {shaped_cpu / warm_cpu:.2f}x CPU")
    print(f"  engine calls per second: {len(calls) / engine_wall:,.0f}")
    print(
        f"  env time / engine time on the same calls (warm): {warm_wall / engine_wall:.2f}x wall, "
        f"{warm_cpu / engine_cpu:.2f}x CPU"
    )
    print(
        f"  the same in slices of {SLICE} episodes, each the best of {args.rounds}: env {slice_cpu:.3f} s, engine "
        f"{slice_engine_cpu:.3f} s CPU: {slice_wall / slice_engine_wall:.2f}x wall, "
        f"{slice_cpu / slice_engine_cpu:.2f}x CPU (target < 1.5x)"
    )
    print(
        f"reset: median {statistics.median(reset_times) * 1e3:.3f} ms, max {max(reset_times) * 1e3:.3f} ms"  # type: ignore[type-var]
    )
    if args.phases:
        parts = phases(fresh_env, org, fresh, fresh_traces, warm_log, args.rounds)
        total = sum(t for _, t in parts)
        print(f"the env's warm work by part (CPU, each the best of {args.rounds}; {steps} steps):")
        for label, seconds in parts:
            print(f"  {label:48} {seconds:7.3f} s {seconds / steps * 1e6:7.1f} us/step")
        print(f"  {'all (the warm pass less the bare engine)':48} {total:7.3f} s {total / steps * 1e6:7.1f} us/step")
        kinds = step_kinds(fresh_env, fresh, fresh_traces)
        kind_runs, alone_runs = [], []
        for _ in range(args.rounds):  # in turn with the bare engine, the least of each kept
            kind_runs.append(tuple(by_kind(fresh_env, fresh, fresh_traces, kinds).values()))
            alone_runs.append(replay(org, warm_log)[1])
        reset, engine, calculation, submit, invalid = best(*kind_runs)
        alone = min(alone_runs)
        count = collections.Counter(kinds[a] for i in fresh for a in fresh_traces[i.idx])
        print(f"the warm pass's steps by kind (CPU, the best of {args.rounds}), against the bare engine:")
        print(
            f"  {count['engine']} steps that call the engine, with the {n} resets: {engine + reset:.3f} s, "
            f"{(engine + reset) / alone:.2f}x the bare engine's {alone:.3f} s"
        )
        print(
            f"  {count['calculation']} calculation steps, {count['submit']} submissions and {count['invalid']} "
            f"unreadable actions (no engine call): {calculation + submit + invalid:.3f} s, "
            f"{(calculation + submit + invalid) / alone:.2f} of the bare engine's time"
        )


if __name__ == "__main__":
    main()
