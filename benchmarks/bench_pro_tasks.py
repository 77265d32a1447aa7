"""CRMArena-Pro task benchmark: generation time per category, and the baselines per category and org.

Generation: for each org kind and each category with a module, ``generate_pro_tasks`` of ``--per-task``
instances (None quotas, the 45% cap, personas, numbering), timed (wall and CPU) against a baseline measured in the
same run: the category's own ``draw`` called until it has given as many instances of each kind, with no shaping,
de-duplication or cap. The ratio is what the framework adds. Rounds alternate framework and baseline, category
after category; medians are reported beside the machine's load.

Baselines (on the generated test set, seed 0), each scored by Pro's LLM-free grading through the environment:

- random: the environment's action-space sampler (well-formed queries and submissions), up to 20 turns;
- always-None: submits ``None`` at once (PRO.md section 7: 20% on 13 categories of Pro's B2B file, 77% on
  policy_violation_identification; 0 on the confidentiality categories, where None is no refusal);
- answer-prior: submits the category's most frequent gold of a training set (seed 1), None included;
- oracle: the category's solver through the tools (``OraclePolicy``).

Beside them, the same always-None and answer-prior figures computed from Pro's B2B file (read from
``../shared/crmarena-pro/b2b_tasks.json`` when it is beside the checkout; otherwise left out).

Usage:
    python benchmarks/bench_pro_tasks.py [--kinds b2b b2c] [--per-task 100] [--rounds 3] [--random-per-task 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import crmarena_gym  # noqa: F401 - registers the environments
from crmarena_gym.datagen import generate_org
from crmarena_gym.policies import OraclePolicy, RandomPolicy
from crmarena_gym.tasks import TaskInstance, load_tasks
from crmarena_gym.tasks.pro import (
    ProFacts,
    format_pro_answer,
    generate_pro_tasks,
    get_pro_spec,
    implemented_categories,
    pro_category,
    score_instance,
)

PRO_FILE = Path(__file__).resolve().parents[2] / "shared" / "crmarena-pro" / "b2b_tasks.json"


def raw_draws(path: Path, kind: str, name: str, per_task: int, seed: int) -> None:
    """The baseline: the category's draw alone until it has given the instances of each kind."""
    import sqlite3

    spec = get_pro_spec(name)
    category = pro_category(name)
    nones = round(spec.none_rate * per_task)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        facts = ProFacts(conn, kind)
        rng = np.random.default_rng(seed)
        for want_none, count in ((False, per_task - nones), (True, nones)):
            got = 0
            for _ in range(200 * max(count, 1)):
                if got >= count:
                    break
                got += category.draw(facts, rng, want_none) is not None
    finally:
        conn.close()


def timed(fn: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def play(env: gym.Env, policy: Any, instances: list[TaskInstance]) -> list[float]:
    rewards = []
    for inst in instances:
        obs, info = env.reset(options={"idx": inst.idx})
        policy.reset(obs, info, seed=inst.idx)
        reward, done, truncated = 0.0, False, False
        while not (done or truncated):
            obs, reward, done, truncated, step_info = env.step(policy.act(obs))
            policy.observe(step_info)
        rewards.append(float(reward))
    return rewards


def file_figures() -> dict[str, tuple[float, float]]:
    """Per category of Pro's B2B file: the always-None score and the most frequent gold's share (PRO.md 7)."""
    if not PRO_FILE.is_file():
        return {}
    figures = {}
    tasks = load_tasks(PRO_FILE)
    for name in {i.task for i in tasks}:
        insts = [i for i in tasks if i.task == name]
        spec = get_pro_spec(name)
        if spec.reward_metric != "exact_match":
            figures[name] = (0.0, 0.0)
            continue
        nones = sum(i.answer is None for i in insts) / len(insts)
        top = Counter(format_pro_answer(i.answer) for i in insts).most_common(1)[0][1] / len(insts)
        figures[name] = (nones, top)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", choices=("b2b", "b2c"), default=["b2b", "b2c"])
    parser.add_argument("--per-task", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--random-per-task", type=int, default=20, help="random policy episodes per category")
    parser.add_argument("--seed", type=int, default=0, help="the orgs' seed")
    args = parser.parse_args()
    warnings.simplefilter("once")  # a category that runs out of distinct questions says so once
    names = implemented_categories()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"categories with a module: {len(names)} of 22 ({', '.join(get_pro_spec(n).abbrev for n in names)})")
    with tempfile.TemporaryDirectory() as tmp:
        orgs = {}
        for kind in args.kinds:
            orgs[kind] = Path(tmp) / f"{kind}.sqlite"
            generate_org(orgs[kind], kind=kind, seed=args.seed, scale=1.0)

        # Generation time, framework against bare draws, alternating.
        times: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
        for r in range(args.rounds):
            for kind in args.kinds:
                for name in names:

                    def framework(kind: str = kind, name: str = name, r: int = r) -> None:
                        generate_pro_tasks(orgs[kind], category=name, seed=r, per_task=args.per_task, allow_fewer=True)

                    def bare(kind: str = kind, name: str = name, r: int = r) -> None:
                        raw_draws(orgs[kind], kind, name, args.per_task, r)

                    times.setdefault((kind, name, "framework"), []).append(timed(framework))
                    times.setdefault((kind, name, "bare"), []).append(timed(bare))
        print(f"\nGeneration of {args.per_task} instances per category (median of {args.rounds} rounds)")
        print(f"{'kind':4s} {'category':32s} {'wall s':>8s} {'cpu s':>8s} {'bare wall':>9s} {'ratio':>6s}")
        for kind in args.kinds:
            for name in names:
                fw = times[kind, name, "framework"]
                bw = times[kind, name, "bare"]
                wall = statistics.median(t[0] for t in fw)
                cpu = statistics.median(t[1] for t in fw)
                base = statistics.median(t[0] for t in bw)
                print(f"{kind:4s} {name:32s} {wall:8.3f} {cpu:8.3f} {base:9.3f} {wall / base if base else 0:6.2f}")

        # Baselines.
        figures = file_figures()
        print("\nBaselines per category (mean reward by Pro's LLM-free grading; test set seed 0)")
        header = f"{'kind':4s} {'category':32s} {'random':>7s} {'None':>7s} {'prior':>7s} {'oracle':>7s}"
        print(header + ("   | Pro B2B file: None, prior" if figures else ""))
        summary: dict[str, list[float]] = {}
        for kind in args.kinds:
            for name in names:
                test = generate_pro_tasks(orgs[kind], category=name, seed=0, per_task=args.per_task, allow_fewer=True)
                train = generate_pro_tasks(orgs[kind], category=name, seed=1, per_task=args.per_task, allow_fewer=True)
                prior = Counter(format_pro_answer(i.answer) for i in train).most_common(1)[0][0]
                none_score = statistics.mean(score_instance("None", i).reward for i in test)
                prior_score = statistics.mean(score_instance(prior, i).reward for i in test)
                env_id = f"CRMArena-Pro-{kind.upper()}-{get_pro_spec(name).abbrev}-v0"
                env = gym.make(env_id, org=orgs[kind], tasks=test, toolset="flex", privileged=True)
                oracle = OraclePolicy()
                oracle.attach(env)
                oracle_score = statistics.mean(play(env, oracle, test))
                rand_env = gym.make(env_id, org=orgs[kind], tasks=test, toolset="soql")
                rand = RandomPolicy(seed=0)
                rand.attach(rand_env)
                random_score = statistics.mean(play(rand_env, rand, test[: args.random_per_task]))
                scores = [random_score, none_score, prior_score, oracle_score]
                for label, value in zip(("random", "None", "prior", "oracle"), scores, strict=True):
                    summary.setdefault(f"{kind}:{label}", []).append(value)
                line = f"{kind:4s} {name:32s} " + " ".join(f"{v:7.3f}" for v in scores)
                if name in figures:
                    line += f"   | {figures[name][0]:.2f}, {figures[name][1]:.2f}"
                print(line)
        print("\nMean over the categories above (Pro's file averages 17.7% for always-None and ~28% for the prior over")
        print("its 19 business categories, PRO.md section 7):")
        for key, values in summary.items():
            print(f"  {key:12s} {statistics.mean(values):.3f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(json.dumps({"per_task": args.per_task, "rounds": args.rounds, "categories": len(names)}))


if __name__ == "__main__":
    main()
