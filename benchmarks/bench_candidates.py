"""Candidate benchmark: can a discrete policy reach the answer at all? The ceiling of the candidate sets, per family.

A PPO policy over :class:`~crmarena_gym.rl.CandidateActionWrapper` can only learn a family if some
sequence of candidates ends in the right answer. For each family, on held-out generated instances
(``generate_tasks(org, seed=2, per_task=30)`` on the seed-0 org, as ``examples/train_rllib_ppo.py``
makes them), this script searches the candidate slots through :func:`~crmarena_gym.rl.make_discrete_env`
(iterative deepening, depth at most ``--depth``, at most ``--budget`` environment steps per instance;
sequences that make the same set of calls are explored once) and reports:

- ``ceiling``: the share of instances where some sequence reaches reward 1 (KQA: the mean of the best
  token F1, and the share of instances whose best F1 is at least 0.8);
- ``cands/step``: the mean number of candidates (non-empty slots) per step along the best sequence
  found (what a policy chooses among);
- ``steps``: the mean and longest number of actions of the shortest sequence reaching the best reward.

The gold answer is read only here, to score the submissions the search ends with (every best sequence
is then replayed through the environment, whose own reward must agree). Candidates never read it
(tests/rl/test_wrapper.py shows that removing it changes none).

A ceiling says a policy *can* answer; whether the candidates' features let it find the answer is
measured for PVI and KQA by a linear probe: on training instances (task seed 1, 80 per family, none
held out; as the training example makes them), a softmax over the answer candidates of one step (PVI:
after reading the chat and the emails and searching with their words, the articles found and None;
KQA: after searching with the question's words, the phrases found) is fitted on their feature vectors
alone, and scored on the held-out instances: PVI, the share answered exactly; KQA, the mean token F1
of the phrase it picks. A policy network sees the same features (and the state besides), and can pair
them: a second fit (``paired``) adds the products of the kind of question asked (a KQA phrase's row
holds it) with the scalars and the phrase traits, which a linear scorer cannot form on its own. KQA's
questions are drawn from a fixed set of facts: the script also says how many held-out questions training
asked too (none, since training excludes the held-out instances' keys, article and question).

At the ``tools`` help level a call takes one step per argument, so ``--depth`` counts those steps too: the
default depth reaches short pipelines only (raise it, with ``--budget``, for the long ones).

Usage:
    python benchmarks/bench_candidates.py                        # all nine families, 30 instances each (parsed)
    python benchmarks/bench_candidates.py --level oracle-args     # the level of the README's figures
    python benchmarks/bench_candidates.py --families PVI,KQA --per-task 10
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crmarena_gym.envs import parse_action
from crmarena_gym.org import default_org_path
from crmarena_gym.rl import QUESTION_KINDS, CandidateActionWrapper, SlotFeatures, make_discrete_env
from crmarena_gym.tasks import TaskInstance, generate_tasks, instance_key, score_answer

FAMILIES = ("HTU", "TCU", "TII", "MTA", "BRI", "NCR", "NED", "PVI", "KQA")


@dataclass
class Found:
    """The best an instance's search reached."""

    reward: float = 0.0
    path: list[int] = field(default_factory=list)
    candidates: list[int] = field(default_factory=list)  # candidates per step along ``path``
    steps: int = 0  # environment steps spent searching


class _Budget(Exception):
    pass


class Search:
    """Iterative-deepening search over an instance's candidate slots (see the module docs)."""

    def __init__(self, env: CandidateActionWrapper, inst: TaskInstance, depth: int, budget: int) -> None:
        self.env, self.inst, self.depth, self.budget = env, inst, depth, budget
        self.spec = inst.spec
        self.found = Found()

    def reward(self, text: str) -> float:
        answer = parse_action(text, functions=True).text or ""
        score = score_answer(
            answer,
            self.inst.answer,
            metric=self.spec.reward_metric,
            kind=self.spec.answer_kind,
            mode=self.env.unwrapped.match,
        )
        return float(score.reward)

    def replay(self, path: list[int]) -> list[int]:
        """Play ``path`` from the reset; the number of candidates before each action."""
        obs, _info = self.env.reset(options={"task_id": self.inst.idx})
        counts = []
        for action in path:
            counts.append(int(obs["action_mask"].sum()))
            obs, _r, terminated, truncated, _info = self.env.step(action)
            self.found.steps += 1
            if self.found.steps > self.budget:
                raise _Budget
            assert not (terminated or truncated)
        counts.append(int(obs["action_mask"].sum()))
        return counts

    def visit(self, path: list[int], limit: int, seen: set[frozenset[str]]) -> None:
        counts = self.replay(path)
        slots = list(self.env.slots)
        for slot, text in enumerate(slots):  # submissions end the episode: score them without playing
            if text is not None and text.startswith("submit "):
                reward = self.reward(text)
                if reward > self.found.reward:
                    self.found.reward, self.found.path, self.found.candidates = reward, [*path, slot], counts
        if self.found.reward >= 1.0 or len(path) + 1 >= limit:
            return
        taken = self.env.state.actions_taken if self.env.state is not None else set()
        for slot, text in enumerate(slots):
            if text is None or text.startswith("submit "):
                continue
            key = frozenset({*taken, text})
            if key in seen:
                continue
            seen.add(key)
            self.visit([*path, slot], limit, seen)
            if self.found.reward >= 1.0:
                return

    def run(self) -> Found:
        try:
            for limit in range(1, self.depth + 1):  # the first depth that reaches reward 1 is the shortest
                self.visit([], limit, set())
                if self.found.reward >= 1.0:
                    break
        except _Budget:
            pass
        return self.found


def verify(env: CandidateActionWrapper, inst: TaskInstance, found: Found) -> None:
    """Replay the best sequence through the environment: its reward must be the one the search scored."""
    if not found.path:
        return
    env.reset(options={"task_id": inst.idx})
    reward = 0.0
    for action in found.path:
        _obs, r, _terminated, _truncated, _info = env.step(action)
        reward += float(r)
    if abs(reward - found.reward) > 1e-9:
        raise AssertionError(f"instance {inst.idx}: the search scored {found.reward}, the environment {reward}")


#: The steps before the answer of the probed families (slot names; a slot that is empty is skipped).
PROBE_STEPS = {"PVI": ("chat_transcripts", "emails", "search_conversation"), "KQA": ("search_question",)}


def probe_choices(env: CandidateActionWrapper, inst: TaskInstance) -> tuple[np.ndarray, np.ndarray] | None:
    """The feature rows of the answer candidates after the family's steps, and each one's reward."""
    names = env.generator.slot_names
    obs, _info = env.reset(options={"task_id": inst.idx})
    for name in PROBE_STEPS[inst.abbrev]:
        slot = names.index(name)
        if obs["action_mask"][slot]:
            obs, _r, _terminated, _truncated, _info = env.step(slot)
    answers = ("submit_none", "submit_article_") if inst.abbrev == "PVI" else ("submit_span_",)
    slots = [i for i, n in enumerate(names) if n.startswith(answers) and env.slots[i] is not None]
    if not slots:
        return None
    search = Search(env, inst, 0, 0)
    rewards = np.array([search.reward(env.slots[i] or "") for i in slots])
    return obs["action_features"][slots], rewards


def fit_softmax(groups: list[tuple[np.ndarray, np.ndarray]], *, l2: float = 1e-3, steps: int = 400) -> np.ndarray:
    """A linear scorer ``w`` whose softmax over each group's rows puts its mass on the best-rewarded rows."""
    w = np.zeros(groups[0][0].shape[1])
    for _ in range(steps):
        grad = l2 * w
        for x, rewards in groups:
            target = (rewards == rewards.max()).astype(float)
            target /= target.sum()
            logits = x @ w
            p = np.exp(logits - logits.max())
            p /= p.sum()
            grad += x.T @ (p - target) / len(groups)
        w -= 0.5 * grad
    return w


def paired(env: CandidateActionWrapper, x: np.ndarray) -> np.ndarray:
    """``x`` with the products of its question-kind features and its scalars and phrase traits appended.

    A linear scorer cannot pair the kind of question asked with a phrase's traits ("how often" with a
    phrase starting with "every"); a policy network can (its candidate network reads both from the row,
    its state network reads the question's words). These products give the probe that reach.
    """
    featurizer = env.featurizer
    if not isinstance(featurizer, SlotFeatures):
        return x
    start = featurizer.phrase_offset
    kinds = x[:, start : start + len(QUESTION_KINDS)]
    traits = np.concatenate(
        [x[:, featurizer.scalar_offset : featurizer.context_offset], x[:, start + len(QUESTION_KINDS) :]], axis=1
    )
    return np.concatenate([x, np.einsum("ki,kj->kij", kinds, traits).reshape(len(x), -1)], axis=1)


def probe(
    train_env: CandidateActionWrapper,
    env: CandidateActionWrapper,
    train: list[TaskInstance],
    held_out: list[TaskInstance],
) -> dict[str, Any]:
    """Fit :func:`fit_softmax` per family on ``train`` (in ``train_env``) and score its choices on ``held_out``,
    on the answer candidates' features alone and with :func:`paired` products."""
    out: dict[str, Any] = {}
    for family in PROBE_STEPS:
        fit = [g for g in (probe_choices(train_env, i) for i in train if i.abbrev == family) if g is not None]
        test = [probe_choices(env, i) for i in held_out if i.abbrev == family]
        if not fit or not test:
            continue
        picks = []
        for expand in (lambda x: x, lambda x: paired(env, x)):
            w = fit_softmax([(expand(x), rewards) for x, rewards in fit])
            chosen = [float(g[1][int(np.argmax(expand(g[0]) @ w))]) if g is not None else 0.0 for g in test]
            picks.append(float(np.mean(chosen)))
        first = [float(g[1][0]) if g is not None else 0.0 for g in test]
        best = [float(g[1].max()) if g is not None else 0.0 for g in test]
        out[family] = (len(fit), *picks, float(np.mean(first)), float(np.mean(best)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated task families")
    parser.add_argument("--per-task", type=int, default=30, help="held-out instances per family")
    parser.add_argument("--seed", type=int, default=2, help="task seed of the held-out instances")
    parser.add_argument(
        "--task-distribution",
        choices=("discriminating", "legacy"),
        default="discriminating",
        help="the instances' distribution (legacy: task generator version 2's, of the README's figures)",
    )
    parser.add_argument("--org-seed", type=int, default=0, help="seed of the generated org (scale 1)")
    parser.add_argument("--depth", type=int, default=8, help="the longest sequence searched")
    parser.add_argument("--budget", type=int, default=3000, help="environment steps per instance")
    parser.add_argument("--train-seed", type=int, default=1, help="task seed of the probe's training instances")
    parser.add_argument("--train-per-task", type=int, default=80, help="probe training instances per family")
    parser.add_argument("--no-probe", action="store_true", help="skip the linear probe of PVI and KQA")
    parser.add_argument(
        "--level",
        default="parsed",
        choices=("tools", "parsed", "oracle-args"),
        help="help level of the candidates (default parsed; the README's figures before the levels: oracle-args)",
    )
    args = parser.parse_args()
    families = [f.strip() for f in args.families.split(",") if f.strip()]

    org = default_org_path(seed=args.org_seed, scale=1.0)
    drawn = {"tasks": families, "distribution": args.task_distribution}
    instances = generate_tasks(org, seed=args.seed, per_task=args.per_task, **drawn)
    env = make_discrete_env(org=str(org), tasks=instances, level=args.level)
    print(f"help level {args.level}; {args.task_distribution} instances; org seed {args.org_seed}; ", end="")
    print(f"{len(instances)} held-out instances (task seed {args.seed}); ", end="")
    print(f"{env.action_space.n} slots, {env.featurizer.size} features per slot; depth <= {args.depth}")
    print()
    header = f"{'family':7s} {'n':>3s} {'ceiling':>8s} {'F1>=0.8':>8s} {'cands/step':>10s} {'steps':>6s} {'max':>4s}"
    print(header + f" {'unsolved':>8s} {'s/inst':>7s}")
    rows: dict[str, Any] = {}
    for family in families:
        chosen = [inst for inst in instances if inst.abbrev == family]
        started = time.perf_counter()
        results = []
        for inst in chosen:
            found = Search(env, inst, args.depth, args.budget).run()
            verify(env, inst, found)
            results.append(found)
        seconds = (time.perf_counter() - started) / max(len(chosen), 1)
        rewards = np.array([f.reward for f in results])
        solved = [f for f in results if f.reward >= (0.8 if family == "KQA" else 1.0)]
        counts = [c for f in results if f.path for c in f.candidates[: len(f.path)]]
        lengths = [len(f.path) for f in solved]
        ceiling = float(rewards.mean()) if family == "KQA" else float((rewards >= 1.0).mean())
        rows[family] = ceiling
        print(
            f"{family:7s} {len(chosen):3d} {ceiling:8.3f} {float((rewards >= 0.8).mean()):8.3f} "
            f"{float(np.mean(counts)) if counts else 0.0:10.1f} {float(np.mean(lengths)) if lengths else 0.0:6.2f} "
            f"{max(lengths, default=0):4d} {len(chosen) - len(solved):8d} {seconds:7.2f}",
            flush=True,
        )
    print()
    print("ceiling: share of instances some candidate sequence answers exactly (KQA: mean best token F1);")
    print("F1>=0.8: share whose best reward is at least 0.8; cands/step: mean candidates per step on the best")
    print("sequence; steps/max: actions of the shortest solving sequence (KQA: reaching F1 >= 0.8).")
    probed = [f for f in families if f in PROBE_STEPS]
    if probed and not args.no_probe:
        exclude = {instance_key(inst.task, inst.params) for inst in instances}
        train = generate_tasks(
            org,
            seed=args.train_seed,
            per_task=args.train_per_task,
            tasks=probed,
            exclude=exclude,
            allow_fewer=True,
            distribution=args.task_distribution,
        )
        train_env = make_discrete_env(org=str(org), tasks=train, level=args.level)
        results = probe(train_env, env, train, [i for i in instances if i.abbrev in probed])
        print()
        print(f"linear probe on the answer step's candidate features (fitted on task seed {args.train_seed}):")
        print(f"{'family':7s} {'train':>5s} {'probe':>7s} {'paired':>7s} {'first':>7s} {'best':>7s}")
        for family, (n, chosen, pair, first, best) in results.items():
            print(f"{family:7s} {n:5d} {chosen:7.3f} {pair:7.3f} {first:7.3f} {best:7.3f}")
        if "KQA" in results:  # KQA questions are drawn from a fixed set of facts: say which held-out ones training saw
            asked = {(i.params.get("article_id"), i.params.get("question")) for i in train if i.abbrev == "KQA"}
            articles = {article for article, _question in asked}
            held = [i for i in instances if i.abbrev == "KQA"]
            seen = sum((i.params.get("article_id"), i.params.get("question")) in asked for i in held)
            near = sum(i.params.get("article_id") in articles for i in held)
            print(f"KQA: {seen} of {len(held)} held-out questions were asked in training (the same fact); ", end="")
            print(f"{near} come from an article other training questions come from")
        print("probe: held-out reward of the candidate the fitted scorer picks (PVI: exact; KQA: token F1);")
        print("paired: the same with the products of the question kind and the scalars and phrase traits;")
        print("first: of the first answer slot (PVI: None; KQA: the best-scored phrase); best: of the")
        print("best candidate of that step (the step's ceiling).")


if __name__ == "__main__":
    main()
