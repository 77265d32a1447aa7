"""The hidden (latent) variables that shape the synthetic org, and how they are drawn.

Each latent is a parameter of the generator that the org never stores as data; an agent has to
infer it from the records. All of them are saved in the ``crmarena_latent`` table (outside the 16
object tables, so queries cannot read them) for task generators and analyses.

``agent_skill`` (agents x issues)
    How likely a new case of an issue is routed to an agent, and where transfers go. For every
    issue three distinct experts get large weights, the rest small ones, so a few experts handle
    (and close) most cases of each issue: the case-routing task's "agent with most closed cases on
    the issue" follows from it.
``agent_speed`` (agents)
    A factor on the handle time (closed minus created) of the cases an agent closes; below 1 is fast.
``agent_transfer_rate`` (agents)
    The chance that an agent transfers a case it holds. Most agents rarely transfer, a few often;
    rates are scaled so that about 11% of cases see a transfer, as in the original org.
``agent_violation_rate`` (agents)
    The chance that an agent breaks a policy rule in a case's chat or emails.
``account_complaint`` (accounts)
    How likely a customer's purchases turn into cases: heavily skewed, so a few customers open many
    cases and most open none or one.
``account_order_rate`` and ``account_habit`` (accounts)
    How much a customer buys, and when: "holiday" shoppers buy mostly in November and December,
    "spring" shoppers in March, "steady" shoppers all year. Cases follow purchases within days, so
    case volume peaks in December and March.
``product_popularity`` (products)
    How often a product is bought (and so how many cases it can draw).
``product_issue_propensity`` (products x issues)
    Which issues a product's cases are about: each product has one to three dominant issues.
``state_closure_speed`` (states)
    A factor on handle time for customers shipping to a state: some regions close cases faster.
Policy violations
    Not a single number but a consequence: which cases break which policy article, with the
    offending sentence, saved as ``violations``; transcript-bearing cases that break nothing are
    saved as ``clean_cases``.

With ``latent=False`` the same code draws every latent flat (equal weights, constant rates,
factors of 1), so their effect on the data vanishes while everything else stays the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_ISSUES = 10
HABITS = ("steady", "holiday", "spring")
HABIT_SHARES = (0.3, 0.4, 0.3)
TRANSFER_TARGET = 0.097  # chance that a case's first owner transfers it (a few chained ones add ~1%)
VIOLATION_MEAN = 0.28
EXPERT_WEIGHTS = (10.0, 6.0, 3.0)
NON_EXPERT_WEIGHT = 0.08


@dataclass
class Latents:
    """Every latent array, indexed like the generator's entity arrays."""

    month_profiles: np.ndarray  # (habits, 12) relative weight of each month for each habit
    account_habit: np.ndarray  # (accounts,) index into HABITS
    account_order_rate: np.ndarray  # (accounts,)
    account_complaint: np.ndarray  # (accounts,)
    product_popularity: np.ndarray  # (products,), 0 for inactive products
    product_issue: np.ndarray  # (products, issues), rows sum to 1
    agent_skill: np.ndarray  # (agents, issues)
    experts: np.ndarray  # (issues, 3) agent indexes, strongest first
    agent_speed: np.ndarray  # (agents,)
    agent_transfer: np.ndarray  # (agents,)
    agent_violation: np.ndarray  # (agents,)
    state_speed: np.ndarray  # (states,)


def _month_profiles(strength: float) -> np.ndarray:
    prof = np.ones((len(HABITS), 12))
    # holiday: November and (most of all) December; spring: March and a little April.
    prof[1, 10] += 1.0 * strength
    prof[1, 11] += 6.0 * strength
    prof[2, 2] += 5.0 * strength
    prof[2, 3] += 0.5 * strength
    return prof


def draw_latents(
    rng: np.random.Generator,
    *,
    latent: bool,
    n_accounts: int,
    active: np.ndarray,
    category_issue_prior: np.ndarray,
    n_agents: int,
    n_states: int,
) -> Latents:
    """Draw every latent variable.

    Args:
        rng: The latent stream of the org.
        latent: False draws everything flat (same code path, zero strength).
        n_accounts: Number of customer accounts.
        active: (products,) booleans: which products can be ordered.
        category_issue_prior: (products, issues) prior weights of issues given the product's category.
        n_agents: Number of agents (users).
        n_states: Number of shipping states.
    """
    s = 1.0 if latent else 0.0
    n_products = len(active)

    habit = rng.choice(len(HABITS), size=n_accounts, p=HABIT_SHARES)
    order_rate = np.exp(s * 0.8 * rng.standard_normal(n_accounts))
    # Gamma with a small shape: a long tail of heavy complainers. Flat: all ones.
    complaint = rng.gamma(0.35, 1.0 / 0.35, size=n_accounts)
    complaint = (1.0 - s) + s * complaint

    popularity = np.exp(s * 1.0 * rng.standard_normal(n_products)) * active

    # A product's issues: a sparse Dirichlet draw (one to three dominant issues) tilted by category.
    sparse = rng.gamma(0.25, 1.0, size=(n_products, N_ISSUES)) + 1e-6
    sparse = sparse * category_issue_prior
    sparse /= sparse.sum(axis=1, keepdims=True)
    uniform = np.full((n_products, N_ISSUES), 1.0 / N_ISSUES)
    product_issue = s * (0.9 * sparse + 0.1 * uniform) + (1.0 - s) * uniform

    experts = rng.permutation(n_agents)[: N_ISSUES * len(EXPERT_WEIGHTS)].reshape(N_ISSUES, len(EXPERT_WEIGHTS))
    base = NON_EXPERT_WEIGHT * np.exp(0.5 * rng.standard_normal((n_agents, N_ISSUES)))
    boost = np.zeros((n_agents, N_ISSUES))
    for issue in range(N_ISSUES):
        for rank, agent in enumerate(experts[issue]):
            boost[agent, issue] = EXPERT_WEIGHTS[rank]
    skill = s * (base + boost) + (1.0 - s)

    speed = np.exp(s * 0.7 * rng.standard_normal(n_agents))

    raw_transfer = rng.beta(0.6, 4.0, size=n_agents)
    raw_transfer = s * raw_transfer + (1.0 - s) * np.full(n_agents, raw_transfer.mean())
    # Scale so the expected rate over cases (agents weighted by their share of new cases) hits the target.
    issue_share = (product_issue * popularity[:, None]).sum(axis=0)
    issue_share /= issue_share.sum()
    agent_share = (skill / skill.sum(axis=0, keepdims=True) * issue_share).sum(axis=1)
    transfer = np.clip(raw_transfer * TRANSFER_TARGET / float(agent_share @ raw_transfer), 0.0, 0.6)

    raw_violation = rng.beta(0.7, 1.8, size=n_agents)
    violation = s * raw_violation * VIOLATION_MEAN / raw_violation.mean() + (1.0 - s) * VIOLATION_MEAN
    violation = np.clip(violation, 0.0, 0.9)

    state_speed = np.exp(s * 0.7 * rng.standard_normal(n_states))

    return Latents(
        month_profiles=_month_profiles(s),
        account_habit=habit,
        account_order_rate=order_rate,
        account_complaint=complaint,
        product_popularity=popularity,
        product_issue=product_issue,
        agent_skill=skill,
        experts=experts,
        agent_speed=speed,
        agent_transfer=transfer,
        agent_violation=violation,
        state_speed=state_speed,
    )
