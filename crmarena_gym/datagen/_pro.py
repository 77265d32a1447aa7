"""The Pro orgs' generator: one core for CRMArena-Pro's B2B and B2C kinds, planting what Pro's categories ask.

``build_pro`` fills the 27 object tables of a kind (``crmarena_gym.schema.org_schema("b2b")``) from its
:class:`~crmarena_gym.datagen._pro_spec.KindSpec` and records every planted label in hidden tables
(``crmarena_hidden_*``; the query engine never reads them), so that gold can be computed with plain SQL.

Hidden variables (``latent=True``) and what they plant:

Sales representatives (``crmarena_hidden_agent``)
    ``cycle_days``: the mean days from an opportunity's creation to its contract's CompanySignedDate; each
    won deal's cycle is that mean times a small noise (sigma 0.06), so the representative with the shortest
    planted cycle among those who sign in a window has the shortest measured mean there (the
    sales_cycle_understanding category). ``deal_size``: a factor on the units (b2b) or the vehicle and
    options (b2c) of the representative's deals (sales_amount_understanding, with ``win_rate``).
    ``lead_conversion``: the share of the representative's leads that convert; realised as an evenly spread
    sequence over the leads in creation order, so that every run of leads converts close to that share
    (conversion_rate_comprehension). ``lead_volume``, ``opportunity_volume``: how many leads and deals.
    ``acceptance``: how many of the representative's quotes in negotiation the customer has accepted.
Territories (``crmarena_hidden_territory``)
    Ten territories partition the states; every lead is owned by a representative of its state's territory.
    Accepted-quote counts are planted per territory: one representative has the most, or (a planted share,
    ``ProKnobs.territory_tie_rate``) two tie for the most and the one with fewer unconverted leads wins: the
    lead_routing rules give a unique winner for every state, recorded with whether the tie rule decided.
Opportunities (``crmarena_hidden_opportunity``) and tasks (``crmarena_hidden_task``)
    Each opportunity moves through the five stages; its tasks come from the kind's closed catalog of stage
    activities for the stages it reached, so the most advanced stage among its tasks is its true stage. A
    planted share (``wrong_stage_rate``) records a StageName other than the true stage
    (wrong_stage_rectification); a planted share of open deals (``misplaced_task_rate``) keeps Not Started
    tasks of earlier stages (activity_priority). A closed opportunity has a signed contract and an order.
Quotes (``crmarena_hidden_quote``, rules in ``crmarena_hidden_rule``)
    Six rules, each stated in one internal knowledge article: three approval rules (discount tiers, a
    dollar limit on a quote's discounts, products that take no discount) and three configuration rules
    (quantity limits, excluded pairs, mandatory bundles). Exactly ``round(rate * quotes)`` quotes break one
    approval rule and as many (by their own rate) one configuration rule, none breaks two, every other quote
    complies; accepted quotes always comply (quote_approval, invalid_config).
Calls with leads (``crmarena_hidden_lead_bant``)
    Every lead has one or two calls (VoiceCallTranscript__c.LeadId__c); the latest states the product, the
    quantity, the unit price, the budget, the days the lead needs it in, whether there is a concrete need and
    who decides. A planted vector says which BANT factors fail: Budget when the quantity at list price less the
    discount the rules allow exceeds the budget, Timeline when the setup-times article's days for the product
    and quantity exceed the days needed, Authority when someone else decides, Need when no concrete need is
    stated (lead_qualification). An earlier call may state figures the latest one updates. Leads that convert
    are mostly qualified.
Calls about opportunities (``crmarena_hidden_call_insight``)
    One to three calls about most B2B deals (fewer in B2C), each rendered from a hidden annotation: the
    competitors mentioned (whether we lead or trail them and on which subtopic, and any competing offer) and
    the subtopics discussed with their sentiment. Each competitor's prominence rises and falls on its own cycle
    (so the most-mentioned one changes from window to window), each has its own edge and offer habit, each
    subtopic its own tone (sales_insight_mining).
Service (cases)
    Per service agent a speed, a transfer habit and a case volume (a busy core takes most of the cases beside
    the experts', so that several agents transfer more than once in a window), per issue two experts, per state a
    closure-speed factor, per product a few dominant issues: the structure of the original's handle_time,
    transfer_count, top_issue_identification, best_region_identification and case_routing. For a planted share of
    issues (``CASE_TIE_RATE``, listed in the latent ``case_routing_tie_issues``) the two experts are even rivals
    who close the issue's cases in turn, so case routing's tie rules (closed cases of the product, then fewest
    open cases) decide there; a product's problems come in waves (``CASE_WAVE_SHARE`` of its cases follow its
    previous one within days), so it has months with clearly more cases.

``latent=False`` draws every per-entity variable flat (representatives, agents, states and products alike;
no planted territory winners) while the record-level labels stay (rule-breaking quotes at their rates,
wrong stages and stale tasks), as the service org keeps its policy violations when flat.

Emails: the cases' (ParentId and RelatedToId the case) and sales emails about opportunities (RelatedToId the
opportunity), more the further a deal got.

Knowledge articles (``crmarena_hidden_article``; facts in ``crmarena_hidden_article_fact``)
    The six rule articles and the setup-times article (internal, ``IsVisibleInPkb`` false), and an article bank
    of PRO.md's mix (194 articles in B2B): per product an overview, its specifications and its licensing (b2b)
    or warranty and service (b2c); one issue-resolution article per issue; public policy articles; an internal
    competitive brief per competitor. A public article states each fact as ``<label>: <answer>.`` with a short
    answer (1-15 words) drawn from pools of our own per org; every fact, public or internal, is a row of
    (article, slot, subject, label, answer) and a span of its article (knowledge_qa; the internal ones are what
    confidential_company_knowledge must not leak).
Remedies on cases (``crmarena_hidden_remedy``, ``crmarena_hidden_case_remedy``)
    Each issue-resolution article lists the three remedies agents may offer for its issue (every remedy of the
    kind's vocabulary is allowed for some issue). The agent of every case offers one remedy, in an email on the
    case or a line of its chat; exactly ``round(remedy_violation_rate * cases)`` offer a remedy the article does
    not allow (policy_violation_identification). In ``CUSTOMER_REQUEST_SHARE`` of cases the customer's opening
    email asks for a remedy of its own (recorded as ``requested``): only the agent's words decide.
Look-alike purchases (``crmarena_hidden_purchase``)
    Per planted cluster (``PurchaseCluster`` per scale), an account's activated order of two or three products of
    one family on one day and another of one or two other products of that family one to six days away
    (named_entity_disambiguation: the description, not the day alone, decides).
Product seasons (``crmarena_hidden_product_season``)
    With ``ProKnobs.case_peak_share`` above 0 (default 0), per product a peak calendar month: that share of its
    cases is filed in the occurrence of that month nearest its natural date (after the order), so a product's
    cases bunch in one month of the year (monthly_trend_analysis; months are bucketed by name over windows longer
    than a year). The table is empty when no season is planted.
Private customer facts (``crmarena_hidden_private``)
    Every contact's name, phone, email and state, and the Id and products of the account's latest activated order:
    what a careless customer-facing agent could leak (private_customer_information).

``latent=False`` also drops these text structures: the article bank is the rule, setup, product overview and
issue articles alone (no facts recorded), no remedy is offered, no look-alike purchase is planted, no private fact
is recorded, no product has a peak month (their hidden tables exist, empty).
"""

from __future__ import annotations

import calendar
import itertools
import json
import math
import re
import sqlite3
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from crmarena_gym.datagen import _pro_text as text
from crmarena_gym.datagen._b2b import SPEC as B2B_SPEC
from crmarena_gym.datagen._b2c import SPEC as B2C_SPEC
from crmarena_gym.datagen._ids import ids_for
from crmarena_gym.datagen._manifest import HIDDEN_PREFIX
from crmarena_gym.datagen._names import AGENT_TIME_ZONES, CUSTOMER_EMAIL_DOMAINS, FIRST_NAMES, LAST_NAMES, STATES
from crmarena_gym.datagen._pro_spec import TERRITORIES, KindSpec
from crmarena_gym.datagen._rand import Rand, stream
from crmarena_gym.schema import OPPORTUNITY_STAGES, STAGE_PROBABILITY, org_schema, quote_identifier

SPECS: dict[str, KindSpec] = {"b2b": B2B_SPEC, "b2c": B2C_SPEC}

#: The org's life: first record on START, none on or after END.
START = "2020-01-01"
END = "2025-07-01"
_DAY = 86_400
_START_S = calendar.timegm(time.strptime(START, "%Y-%m-%d"))
_END_S = calendar.timegm(time.strptime(END, "%Y-%m-%d"))
_STAGES = OPPORTUNITY_STAGES
_QUOTE, _NEGOTIATION, _CLOSED = 2, 3, 4
# Where in a deal's cycle each stage begins (share of the cycle).
_STAGE_START = (0.0, 0.15, 0.4, 0.7, 1.0)
# The stage a deal that is never won stops at (Qualification .. Negotiation).
_STALL = (0.35, 0.3, 0.2, 0.15)
CYCLE_RANGE = (
    30,
    300,
)  # planted sales cycles, in days: the shortest band starts at the first, the last near the second
FLAT_CYCLE = 100  # every representative's mean cycle when flat
FLAT_CYCLE_NOISE = 0.3  # per-deal spread when every representative is alike
CONVERSION_RANGE = (0.08, 0.75)
WIN_MEAN = 0.15
DEAL_BASE = 300_000.0  # list value of a b2b deal of planted size 1, in dollars
DEAL_SIZE_RANGE = (0.25, 6.0)  # planted deal sizes (b2b: a factor on DEAL_BASE; b2c: steers the vehicle)
DEAL_NOISE = 0.08  # per-deal spread around a representative's deal size
CASE_VOLUME_SHAPE = 0.3  # gamma shape of the service agents' case volumes (mean 1; smaller: more concentrated)
TRANSFER_MEAN = 0.3  # the service agents' mean transfer habit
LEAD_BATCH = (3, 5)  # leads reach a representative in batches of this many on one day
CASE_TIE_RATE = 0.4  # share of issues whose two experts are planted as even rivals (case_routing's tie rules)
CASE_WAVE_SHARE = 0.4  # share of a product's cases that follow its previous case within days
BASE_CASE_SHARE = 0.5  # the weight of the non-experts' cases (times their volume) beside the planted experts'


@dataclass(frozen=True)
class ProKnobs:
    """Rates of the record-level labels a Pro org plants (each realised exactly, up to rounding).

    Attributes:
        approval_violation_rate: Share of quotes that break exactly one approval rule.
        config_violation_rate: Share of quotes that break exactly one configuration rule (none breaks both).
        wrong_stage_rate: Share of opportunities whose StageName differs from their tasks' stage.
        misplaced_task_rate: Share of open opportunities past Qualification that keep Not Started tasks of
            earlier stages.
        territory_tie_rate: Share of territories whose most accepted quotes are tied between two
            representatives (the one with fewer unconverted leads wins); ignored when ``latent=False``.
        remedy_violation_rate: Share of cases whose agent offers a remedy that the issue's resolution article
            does not allow (policy_violation_identification); ignored when ``latent=False`` (no offers then).
        case_peak_share: Share of a product's cases filed in its peak calendar month instead of their natural
            date (monthly_trend_analysis's spikes); 0 (the default) plants no seasons, so the service categories
            calibrated on the natural dates keep them; ignored when ``latent=False``.
    """

    approval_violation_rate: float = 0.25
    config_violation_rate: float = 0.25
    wrong_stage_rate: float = 0.2
    misplaced_task_rate: float = 0.3
    territory_tie_rate: float = 0.3
    remedy_violation_rate: float = 0.3
    case_peak_share: float = 0.0


def check_knobs(knobs: object) -> ProKnobs:
    """``knobs`` (None: the defaults) if every rate is a number in [0, 1] and the two violation rates leave
    room for the accepted quotes (their sum at most 0.7); else ValueError naming the bad value."""
    if knobs is None:
        return ProKnobs()
    if not isinstance(knobs, ProKnobs):
        raise ValueError(f"knobs must be a ProKnobs, got {knobs!r}")
    for name, value in asdict(knobs).items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise ValueError(f"knobs.{name} must be a number from 0 to 1, got {value!r}")
    if knobs.approval_violation_rate + knobs.config_violation_rate > 0.7:
        raise ValueError(
            "knobs.approval_violation_rate + knobs.config_violation_rate must be at most 0.7 (accepted quotes "
            f"comply), got {knobs.approval_violation_rate + knobs.config_violation_rate:g}"
        )
    return knobs


@dataclass
class ProBuild:
    """What :func:`build_pro` hands back to the file writer."""

    latents: dict[str, Any]
    hidden_row_counts: dict[str, int]
    company: str
    first_case: str
    last_case: str


def _dt(seconds: int | float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(int(seconds)))


def _day(seconds: int | float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(int(seconds)))


def _day_index(seconds: int | float) -> int:
    return int(seconds) // _DAY


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")


def _stratified(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` values in [0, 1), one in each of ``n`` equal slices, in random order (spread, never bunched)."""
    return (rng.permutation(n) + rng.random(n)) / max(n, 1)


def _cycle_bands(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` disjoint bands of whole days, [low, low + width], spread over :data:`CYCLE_RANGE`.

    Bands grow geometrically (a few percent apart) and are at least two days apart; a band is half as wide
    as the gap to the next, so every deal of a representative is shorter than every deal of the next one.
    """
    lo, hi = CYCLE_RANGE

    def build(ratio: float) -> list[int]:
        lows = [lo]
        for _ in range(n - 1):
            lows.append(max(lows[-1] + 2, round(lows[-1] * ratio)))
        return lows

    a, b = 1.0, 1.5
    for _ in range(60):  # the smallest ratio whose last band reaches hi
        mid = (a + b) / 2
        a, b = (mid, b) if build(mid)[-1] < hi else (a, mid)
    lows = build(b)
    gaps = [nxt - cur for cur, nxt in itertools.pairwise(lows)] + [max(2, round(lows[-1] * (b - 1)))]
    return np.array(lows), np.array([g // 2 for g in gaps])


#: Share of cases whose customer asks for a remedy in the opening email (any remedy; the agent's offer decides).
CUSTOMER_REQUEST_SHARE = 0.3


def _in_month(seconds: int, month: int, low: int, high: int) -> int | None:
    """The moment nearest ``seconds`` in calendar month ``month`` (same day, clamped to 28, and time of day),
    strictly between ``low`` and ``high``; None if there is none within a year either way."""
    t = time.gmtime(seconds)
    best = None
    for year in (t.tm_year - 1, t.tm_year, t.tm_year + 1):
        moved = calendar.timegm((year, month, min(t.tm_mday, 28), t.tm_hour, t.tm_min, t.tm_sec, 0, 0, 0))
        if low < moved < high and (best is None or abs(moved - seconds) < abs(best - seconds)):
            best = moved
    return best


def _business_second(rng: np.random.Generator | Rand) -> int:
    """A second of the day in US business hours (14:00-23:00 UTC)."""
    return 14 * 3600 + int(rng.random() * 9 * 3600)


class _Rows:
    """Rows of one object, built as dicts and written in the schema's column order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, **values: Any) -> dict[str, Any]:
        self.rows.append(values)
        return values

    def __len__(self) -> int:
        return len(self.rows)


class _ProOrg:
    """Builds one Pro org in memory, then writes it."""

    def __init__(
        self,
        spec: KindSpec,
        seed: int,
        scale: float,
        latent: bool,
        writer: Any,
        progress: Callable[[str, float], None] | None,
        knobs: ProKnobs,
    ) -> None:
        self.spec = spec
        self.seed = seed
        self.scale = scale
        self.latent = latent
        self.writer = writer
        self.knobs = knobs
        self.progress = progress or (lambda stage, fraction: None)
        self.schema = org_schema(spec.kind)
        self.instance = self.schema.instance
        self.tables: dict[str, _Rows] = {o.name: _Rows() for o in self.schema.objects}
        self.hidden: dict[str, tuple[tuple[str, ...], list[tuple[Any, ...]]]] = {}
        self.lat: dict[str, Any] = {"kind": spec.kind, "company": spec.company, "knobs": asdict(knobs)}
        self.state_index = {s[0]: i for i, s in enumerate(STATES)}
        self.state_weights = np.array([s[1] for s in STATES]) / sum(s[1] for s in STATES)

    # -- helpers ---------------------------------------------------------------------------------

    def rng(self, part: str) -> np.random.Generator:
        return stream(self.seed, f"pro-{self.spec.kind}-{part}")

    def rand(self, part: str) -> Rand:
        return Rand(int(self.rng(part + "-text").integers(2**62)))

    def n(self, name: str) -> int:
        count = self.spec.counts[name]
        if name in self.spec.fixed:
            return count
        return max(1, round(count * self.scale))

    def ids(self, prefix: str, count: int, start: int = 0) -> list[str]:
        return ids_for(prefix, np.arange(start, start + count, dtype=np.int64), self.instance)

    def put_hidden(self, name: str, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        self.hidden[HIDDEN_PREFIX + name] = (columns, rows)

    def person(self, rng: np.random.Generator) -> tuple[str, str]:
        return FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))], LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]

    def phone(self, rng: np.random.Generator, state: int) -> str:
        codes = STATES[state][3]
        code = codes[int(rng.integers(len(codes)))]
        return f"({code}) 555-{int(rng.integers(100, 10_000)):04d}"

    # -- staff and territories -------------------------------------------------------------------

    def users(self) -> None:
        rng = self.rng("users")
        spec = self.spec
        n = self.n("User")
        pairs = rng.choice(len(FIRST_NAMES) * len(LAST_NAMES), size=n, replace=False)
        first = [FIRST_NAMES[p // len(LAST_NAMES)] for p in pairs.tolist()]
        last = [LAST_NAMES[p % len(LAST_NAMES)] for p in pairs.tolist()]
        self.user_ids = self.ids("005", n)
        self.user_name = [f"{f} {ln}" for f, ln in zip(first, last, strict=True)]
        sales = np.zeros(n, dtype=bool)
        sales[rng.choice(n, size=spec.n_sales, replace=False)] = True
        self.reps = np.flatnonzero(sales)
        self.agents = np.flatnonzero(~sales)
        self.rep_pos = {int(u): i for i, u in enumerate(self.reps)}
        self.agent_pos = {int(u): i for i, u in enumerate(self.agents)}
        profiles = self.ids("00e", 2)
        sales_titles = ("Account Executive", "Senior Account Executive", "Sales Representative")
        service_titles = ("Support Engineer", "Senior Support Engineer", "Customer Success Specialist")
        if spec.households:
            sales_titles = ("Sales Consultant", "Senior Sales Consultant", "Product Specialist")
            service_titles = ("Service Advisor", "Customer Care Specialist", "Senior Service Advisor")
        self.user_email = []
        rows = self.tables["User"]
        for i in range(n):
            email = f"{first[i]}.{last[i]}@{spec.domain}".lower()
            self.user_email.append(email)
            titles = sales_titles if sales[i] else service_titles
            rows.add(
                Id=self.user_ids[i],
                FirstName=first[i],
                LastName=last[i],
                Email=email,
                Phone=f"(415) 555-{int(rng.integers(1000, 10_000)):04d}",
                Username=email,
                Title=titles[int(rng.integers(len(titles)))],
                Alias=(first[i][0] + last[i][:4]).lower(),
                ProfileId=profiles[0] if sales[i] else profiles[1],
                LanguageLocaleKey="en_US",
                EmailEncodingKey="UTF-8",
                TimeZoneSidKey=AGENT_TIME_ZONES[int(rng.integers(len(AGENT_TIME_ZONES)))],
                LocaleSidKey="en_US",
            )

    def territories(self) -> None:
        rng = self.rng("territories")
        n_t = len(TERRITORIES)
        self.territory_ids = self.ids("0MI", n_t)
        self.state_territory = {s: t for t, (_n, states) in enumerate(TERRITORIES) for s in states}
        order = rng.permutation(self.reps)
        self.members: list[list[int]] = [[] for _ in range(n_t)]
        self.primary: dict[int, int] = {}
        for k, rep in enumerate(order.tolist()):
            self.primary[rep] = k % n_t
            self.members[k % n_t].append(rep)
        # More memberships, round-robin over the representatives: a territory's reps include some whose
        # primary territory is another.
        self.extra: dict[int, list[int]] = defaultdict(list)
        cycle = rng.permutation(order).tolist()
        for m in range(self.spec.n_extra_memberships):
            rep = cycle[m % len(cycle)]
            taken = {self.primary[rep], *self.extra[rep]}
            free = [t for t in range(n_t) if t not in taken]
            t2 = free[int(rng.integers(len(free)))]
            self.extra[rep].append(t2)
            self.members[t2].append(rep)
        for t in range(n_t):
            self.members[t].sort()
        for t, (name, states) in enumerate(TERRITORIES):
            self.tables["Territory2"].add(
                Id=self.territory_ids[t],
                Name=name,
                DeveloperName=name.replace(" ", "_").replace("-", "_"),
                Description=", ".join(states),
            )
        links = [(self.primary[rep], rep, True) for rep in order.tolist()]
        links += [(t2, rep, False) for rep, ts in self.extra.items() for t2 in ts]
        ids = self.ids("0R0", len(links))
        managers = {t: self.members[t][0] for t in range(n_t)}
        for uid, (t, rep, primary) in zip(ids, sorted(links), strict=True):
            role = "Territory Manager" if primary and managers[t] == rep else "Sales Representative"
            self.tables["UserTerritory2Association"].add(
                Id=uid, UserId=self.user_ids[rep], Territory2Id=self.territory_ids[t], RoleInTerritory2=role, IsActive=1
            )

    # -- catalog ---------------------------------------------------------------------------------

    def catalog(self) -> None:
        rng = self.rng("catalog")
        spec = self.spec
        n_p = len(spec.products)
        self.product_ids = self.ids("01t", n_p)
        self.product_code = []
        for i, p in enumerate(spec.products):
            code = f"{''.join(w[0] for w in p.family.split())}-{i + 1:03d}".upper()
            self.product_code.append(code)
            self.tables["Product2"].add(
                Id=self.product_ids[i],
                Name=p.name,
                ProductCode=code,
                Description=p.description,
                Family=p.family,
                IsActive=1,
                External_ID__c=f"{spec.kind.upper()}_{code}",
            )
        cat_ids = self.ids("0ZG", len(spec.categories))
        catalog_id = self.ids("0ZS", 1)[0]
        for cid, name in zip(cat_ids, spec.categories, strict=True):
            self.tables["ProductCategory"].add(Id=cid, Name=name, CatalogId=catalog_id)
        links = [(p.category, i) for i, p in enumerate(spec.products)]
        extra = len(spec.categories) - 1 - max(p.category for p in spec.products)
        for i in range(n_p):  # about every other product is also listed under one of the cross-cutting categories
            if extra > 0 and rng.random() < 0.96:
                links.append((len(spec.categories) - extra + int(rng.integers(extra)), i))
        links.sort()
        for lid, (c, i) in zip(self.ids("0ZH", len(links)), links, strict=True):
            self.tables["ProductCategoryProduct"].add(
                Id=lid,
                ProductCategory=spec.categories[c],
                Product=f"{spec.kind.upper()}_{self.product_code[i]}",
                ProductCategoryId=cat_ids[c],
                ProductId=self.product_ids[i],
            )
        self.pricebook_id = self.ids("01s", 1)[0]
        self.tables["Pricebook2"].add(
            Id=self.pricebook_id,
            Name="Standard Price Book",
            Description=f"{spec.company}'s list prices",
            IsActive=1,
            ValidFrom=_dt(_START_S),
            ValidTo=None,
        )
        self.entry_ids = self.ids("01u", n_p)
        for i, p in enumerate(spec.products):
            self.tables["PricebookEntry"].add(
                Id=self.entry_ids[i], Pricebook2Id=self.pricebook_id, Product2Id=self.product_ids[i], UnitPrice=p.price
            )
        self.issue_ids = self.ids("a03", len(spec.issues))
        for iid, (name, description) in zip(self.issue_ids, spec.issues, strict=True):
            self.tables["Issue__c"].add(Id=iid, Name=name, Description__c=description)

    # -- latent variables ------------------------------------------------------------------------

    def draw_latent(self) -> None:
        rng = self.rng("latent")
        s = self.latent
        n_r, n_a = len(self.reps), len(self.agents)
        if s:  # disjoint bands of whole days: every deal of a representative falls in its own band
            lows, widths = _cycle_bands(n_r)
            order = rng.permutation(n_r)
            self.cycle_low, self.cycle_width = lows[order], widths[order]
        else:
            self.cycle_low, self.cycle_width = np.full(n_r, FLAT_CYCLE), np.zeros(n_r, dtype=int)
        self.cycle = self.cycle_low + self.cycle_width / 2
        d_lo, d_hi = DEAL_SIZE_RANGE
        self.deal_size = d_lo * (d_hi / d_lo) ** _stratified(rng, n_r) if s else np.ones(n_r)
        self.win = rng.beta(3.0, 3.0 * (1 - WIN_MEAN) / WIN_MEAN, n_r) if s else np.full(n_r, WIN_MEAN)
        c_lo, c_hi = CONVERSION_RANGE
        mean_conv = (c_lo + c_hi) / 2
        self.conversion = c_lo + (c_hi - c_lo) * _stratified(rng, n_r) if s else np.full(n_r, mean_conv)
        self.lead_volume = rng.gamma(3.0, 1 / 3.0, n_r) if s else np.ones(n_r)
        self.opp_volume = rng.gamma(3.0, 1 / 3.0, n_r) if s else np.ones(n_r)
        self.acceptance = rng.beta(2.0, 2.0, n_r) if s else np.full(n_r, 0.5)
        self.speed = np.exp(0.6 * rng.standard_normal(n_a)) if s else np.ones(n_a)
        raw = rng.beta(1.5, 3.0, n_a)
        self.transfer = np.clip(raw * TRANSFER_MEAN / raw.mean(), 0, 0.6) if s else np.full(n_a, TRANSFER_MEAN)
        n_i = len(self.spec.issues)
        self.experts = np.stack([rng.choice(n_a, size=2, replace=False) for _ in range(n_i)])
        skill = 0.1 * np.exp(0.4 * rng.standard_normal((n_a, n_i)))
        self.skill_base = skill.copy() if s else np.zeros((n_a, n_i))
        for i in range(n_i):
            skill[self.experts[i, 0], i] += 8.0
            skill[self.experts[i, 1], i] += 4.0
        self.skill = skill if s else np.ones((n_a, n_i))
        # Issues whose experts are planted as even rivals (their own stream: the draws here stay as they were).
        n_ties = round(CASE_TIE_RATE * n_i) if s else 0
        self.tie_issues = sorted(self.rng("case-ties").choice(n_i, size=n_ties, replace=False).tolist())
        if s:
            for i in self.tie_issues:
                pair = self.experts[i]
                skill[pair, i] = skill[pair, i].mean()
        self.state_speed = np.exp(0.6 * rng.standard_normal(len(STATES))) if s else np.ones(len(STATES))
        n_p = len(self.spec.products)
        sparse = rng.gamma(0.3, 1.0, size=(n_p, n_i)) + 1e-6
        sparse /= sparse.sum(axis=1, keepdims=True)
        self.product_issue = 0.9 * sparse + 0.1 / n_i if s else np.full((n_p, n_i), 1.0 / n_i)
        # A busy core and a quiet fringe of service agents: the volume scales the cases an agent gets beside the
        # planted experts' (its own stream, so the draws above stay as they were).
        volume = self.rng("agent-volume").gamma(CASE_VOLUME_SHAPE, 1.0 / CASE_VOLUME_SHAPE, n_a)
        self.case_volume = volume if s else np.ones(n_a)
        self.lat.update(
            {
                "state_closure_speed": {STATES[k][0]: round(float(v), 6) for k, v in enumerate(self.state_speed)},
                "case_routing_tie_issues": [self.issue_ids[i] for i in self.tie_issues],
                "issue_experts": {
                    self.issue_ids[i]: [self.user_ids[int(self.agents[a])] for a in self.experts[i]] for i in range(n_i)
                },
                "product_issue_propensity": {
                    self.product_ids[p]: {
                        self.issue_ids[i]: round(float(self.product_issue[p, i]), 6) for i in range(n_i)
                    }
                    for p in range(n_p)
                },
            }
        )

    # -- customers -------------------------------------------------------------------------------

    def _firm_names(self, rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
        first, second = self.spec.account_words
        combos = [f"{a} {b}" for a in first for b in second]
        combos += [f"{a} {c} {b}" for a in first for c in first if c != a for b in second]
        names: list[str] = []
        for k in rng.permutation(len(combos)).tolist():
            if combos[k] not in taken:
                names.append(combos[k])
                taken.add(combos[k])
                if len(names) == count:
                    break
        return names

    def _owner_for_state(self, rng: np.random.Generator, state: int, weights: np.ndarray | None = None) -> int:
        members = self.members[self.state_territory[STATES[state][0]]]
        if weights is None:
            return members[int(rng.integers(len(members)))]
        w = np.array([weights[self.rep_pos[m]] for m in members])
        return members[int(rng.choice(len(members), p=w / w.sum()))]

    def _new_account(
        self, rng: np.random.Generator, rand: Rand, name: str, state: int, owner: int, created: int, firm: bool
    ) -> int:
        cities = STATES[state][2]
        industries = (
            "Electronics",
            "Technology",
            "Manufacturing",
            "Telecommunications",
            "Engineering",
            "Transportation",
            "Communications",
            "Biotechnology",
            "Energy",
            "Government",
        )
        industry = industries[int(rng.integers(len(industries)))] if firm else None
        employees = int(round(float(np.exp(rng.normal(math.log(1500), 1.2))), -1)) if firm else None
        self.tables["Account"].add(
            Id=None,
            Name=name,
            Type="Prospect",
            Industry=industry,
            NumberOfEmployees=max(employees, 20) if employees is not None else None,
            AnnualRevenue=float(max(employees or 0, 20) * int(rng.integers(150, 400)) * 1000) if firm else None,
            Phone=self.phone(rng, state),
            Website=f"www.{_slug(name)}.example.com" if firm else None,
            Description=text.account_description(rand, self.spec, name, industry),
            ShippingStreet=f"{int(rng.integers(10, 9999))} {rand.choice(_STREETS)}",
            ShippingCity=cities[int(rng.integers(len(cities)))],
            ShippingState=STATES[state][0],
            ShippingPostalCode=f"{int(rng.integers(10_000, 99_999))}",
            ShippingCountry="United States",
            OwnerId=self.user_ids[owner],
            CreatedDate=_dt(created),
        )
        self.acc_state.append(state)
        self.acc_owner.append(owner)
        self.acc_created.append(created)
        self.acc_contacts.append([])
        return len(self.tables["Account"]) - 1

    def _new_contact(
        self,
        rng: np.random.Generator,
        acc: int,
        first: str,
        last: str,
        title: str | None,
        created: int,
        email: str,
        phone: str,
        source: str | None,
    ) -> int:
        state = self.acc_state[acc]
        row = self.tables["Account"].rows[acc]
        departments = ("Engineering", "Procurement", "IT", "Operations", "Executive")
        self.tables["Contact"].add(
            Id=None,
            FirstName=first,
            LastName=last,
            Title=title,
            Department=departments[int(rng.integers(len(departments)))] if not self.spec.households else None,
            Email=email,
            Phone=phone,
            MailingCity=row["ShippingCity"],
            MailingState=STATES[state][0],
            AccountId=acc,
            LeadSource=source,
            OwnerId=self.user_ids[self.acc_owner[acc]],
            CreatedDate=_dt(created),
        )
        k = len(self.tables["Contact"]) - 1
        self.acc_contacts[acc].append(k)
        self.contact_name.append(f"{first} {last}")
        return k

    def accounts(self) -> None:
        rng, rand = self.rng("accounts"), self.rand("accounts")
        spec = self.spec
        self.acc_state: list[int] = []
        self.acc_owner: list[int] = []
        self.acc_created: list[int] = []
        self.acc_contacts: list[list[int]] = []
        self.contact_name: list[str] = []
        self.firm_names_taken: set[str] = set()
        n = self.n("Account")
        states = rng.choice(len(STATES), size=n, p=self.state_weights)
        if spec.households:  # walk-in households, over the org's whole life
            created = np.sort(rng.integers(_START_S, _END_S - 30 * _DAY, size=n))
            for k in range(n):
                first, last = self.person(rng)
                owner = self._owner_for_state(rng, int(states[k]))
                acc = self._new_account(rng, rand, f"{first} {last}", int(states[k]), owner, int(created[k]), False)
                email = f"{first}.{last}{int(rng.integers(1, 99))}@{rand.choice(CUSTOMER_EMAIL_DOMAINS)}".lower()
                self._new_contact(
                    rng, acc, first, last, None, int(created[k]), email, self.phone(rng, int(states[k])), None
                )
            return
        names = self._firm_names(rng, n, self.firm_names_taken)
        created = np.sort(rng.integers(_START_S - 365 * _DAY, _START_S, size=n))
        for k in range(n):
            owner = self._owner_for_state(rng, int(states[k]))
            acc = self._new_account(rng, rand, names[k], int(states[k]), owner, int(created[k]), True)
            for _ in range(1 + int(rng.poisson(max(spec.contacts_per_account - 1, 0)))):
                first, last = self.person(rng)
                title = spec.titles[int(rng.integers(len(spec.titles)))]
                email = f"{first}.{last}@{_slug(names[k])}.example.com".lower()
                when = int(created[k]) + int(rng.integers(0, 60 * _DAY))
                self._new_contact(rng, acc, first, last, title, when, email, self.phone(rng, int(states[k])), None)

    # -- leads -----------------------------------------------------------------------------------

    def _lead_batches(
        self, created: np.ndarray, states: np.ndarray, owners: list[int]
    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Leads reach a representative in batches of three to five on one day (a list import, a trade show): each
        representative's leads, in creation order, are grouped and moved to their batch's first day (times of day
        kept), so that any window of whole days holds none or at least three of a representative's leads. A
        representative with fewer leads than a batch hands them to the busiest colleague of the lead's territory.

        Returns the creation times, states and owners again in creation order. Uses its own stream, so the other
        draws of the leads stay as they were.
        """
        rng = self.rng("lead-batches")
        when = created.copy()
        by_owner: dict[int, list[int]] = defaultdict(list)
        owners = list(owners)
        for k, owner in enumerate(owners):
            by_owner[owner].append(k)
        for owner in sorted(o for o, ks in by_owner.items() if len(ks) < LEAD_BATCH[0]):
            for k in by_owner.pop(owner):  # too few for one batch: to the busiest colleague of the territory
                members = self.members[self.state_territory[STATES[int(states[k])][0]]]
                colleagues = [m for m in members if m in by_owner]
                busiest = max(colleagues, key=lambda m: (len(by_owner[m]), -m)) if colleagues else owner
                owners[k] = busiest
                by_owner[busiest].append(k)
        for owner in sorted(by_owner):
            by_owner[owner].sort()
            ks = by_owner[owner]
            start = 0
            while start < len(ks):
                size = int(rng.integers(LEAD_BATCH[0], LEAD_BATCH[1] + 1))
                if len(ks) - (start + size) < LEAD_BATCH[0]:
                    size = len(ks) - start  # the remainder joins this batch rather than stand short
                batch = ks[start : start + size]
                day = _day_index(created[batch[0]]) * _DAY
                for k in batch:
                    when[k] = day + int(created[k]) % _DAY
                start += size
        order = np.argsort(when, kind="stable")
        return when[order], states[order], [owners[int(k)] for k in order]

    def leads(self) -> None:
        rng, rand = self.rng("leads"), self.rand("leads")
        spec = self.spec
        n = self.n("Lead")
        created = np.sort(rng.integers(_START_S, _END_S, size=n))
        states = rng.choice(len(STATES), size=n, p=self.state_weights)
        owners = [self._owner_for_state(rng, int(s), self.lead_volume) for s in states]
        created, states, owners = self._lead_batches(created, states, owners)
        # Conversion: each representative's leads, in creation order, convert as an evenly spread sequence
        # of their planted share (so every run of leads converts close to it).
        converts = np.zeros(n, dtype=bool)
        seen: dict[int, int] = defaultdict(int)
        phase = rng.random(len(self.reps))
        for k, owner in enumerate(owners):
            pos = self.rep_pos[owner]
            p, j = float(self.conversion[pos]), seen[owner]
            converts[k] = math.floor(phase[pos] + (j + 1) * p) > math.floor(phase[pos] + j * p)
            seen[owner] += 1
        lags = np.clip(np.round(np.exp(rng.normal(math.log(14), 0.5, size=n))), 2, 75).astype(int)
        accounts_by_territory: dict[int, list[int]] = defaultdict(list)
        for acc, state in enumerate(self.acc_state):
            accounts_by_territory[self.state_territory[STATES[state][0]]].append(acc)
        prospects = [] if spec.households else self._firm_names(rng, max(50, n // 3), self.firm_names_taken)
        sources = ("Web", "Phone Inquiry", "Partner Referral", "Purchased List", "Trade Show", "Other")
        self.lead_owner = owners
        self.lead_created = created
        self.conversions: list[int] = []  # lead indexes, in creation order
        rows = self.tables["Lead"]
        for k in range(n):
            state, owner, when = int(states[k]), owners[k], int(created[k])
            first, last = self.person(rng)
            source = sources[int(rng.integers(len(sources)))]
            converted_at = when + int(lags[k]) * _DAY + int(rng.integers(0, 6 * 3600))
            converted = bool(converts[k]) and converted_at < _END_S
            territory = self.state_territory[STATES[state][0]]
            company = acc = None
            if not spec.households:
                local = accounts_by_territory.get(territory) or list(range(len(self.acc_state)))
                if converted or rng.random() < 0.4:
                    acc = local[int(rng.integers(len(local)))]
                    company = self.tables["Account"].rows[acc]["Name"]
                elif rng.random() < spec.lead_company_share:
                    company = prospects[int(rng.integers(len(prospects)))]
            elif rng.random() < spec.lead_company_share:  # a household buyer shopping for a small business
                company = f"{last} {rand.choice(_SMALL_BUSINESSES)}"
            domain = (
                f"{_slug(company)}.example.com"
                if company and not spec.households
                else rand.choice(CUSTOMER_EMAIL_DOMAINS)
            )
            email = f"{first}.{last}@{domain}".lower()
            age = _END_S - when
            if converted:
                status = "Closed - Converted"
            elif age > 180 * _DAY:
                status = "Closed - Not Converted" if rng.random() < 0.7 else "Working - Contacted"
            elif age > 21 * _DAY:
                status = "Working - Contacted"
            else:
                status = "Open - Not Contacted"
            cities = STATES[state][2]
            row = rows.add(
                Id=None,
                FirstName=first,
                LastName=last,
                Company=company,
                Title=spec.titles[int(rng.integers(len(spec.titles)))],
                Email=email,
                Phone=self.phone(rng, state),
                Status=status,
                LeadSource=source,
                Industry=None
                if spec.households
                else self.tables["Account"].rows[acc]["Industry"]
                if acc is not None
                else None,
                Rating=("Hot", "Warm", "Cold")[int(rng.integers(3))],
                NumberOfEmployees=None if acc is None else self.tables["Account"].rows[acc]["NumberOfEmployees"],
                City=cities[int(rng.integers(len(cities)))],
                State=STATES[state][0],
                Country="United States",
                IsConverted=int(converted),
                ConvertedDate=_day(converted_at) if converted else None,
                ConvertedAccountId=None,
                ConvertedContactId=None,
                ConvertedOpportunityId=None,
                Description=text.lead_description(rand, spec, source),
                OwnerId=self.user_ids[owner],
                CreatedDate=_dt(when),
            )
            if converted:
                if spec.households:
                    acc = self._new_account(rng, rand, f"{first} {last}", state, owner, converted_at, False)
                    self.tables["Account"].rows[acc]["ShippingCity"] = row["City"]
                contact = self._new_contact(
                    rng,
                    acc,
                    first,
                    last,
                    row["Title"] if not spec.households else None,
                    converted_at,
                    email,
                    row["Phone"],
                    source,
                )
                row["ConvertedAccountId"], row["ConvertedContactId"] = acc, contact
                self.conversions.append(k)
                row["_converted_at"], row["_account"], row["_contact"] = converted_at, acc, contact
        self.lead_ids = self.ids("00Q", n)
        for k, row in enumerate(rows.rows):
            row["Id"] = self.lead_ids[k]

    # -- calls with leads: BANT ------------------------------------------------------------------

    def lead_calls(self) -> None:
        """One or two calls with every lead, the latest stating the four BANT facts (earlier ones may state values
        it updates), from a planted vector of which factors fail; qualified leads are the ones that convert more."""
        rng, rand = self.rng("lead-calls"), self.rand("lead-calls")
        spec, rules = self.spec, self.spec.rules
        pool = [i for i, p in enumerate(spec.products) if p.family in spec.bant_families]
        factors = ("Budget", "Authority", "Need", "Timeline")
        single = np.array([0.28, 0.36, 0.2, 0.16])  # Authority fails most often, Timeline least (PRO.md 3.4)
        calls: list[tuple[int, int, int, str]] = []  # (start, end, lead, body)
        facts_by_lead = []
        for k, row in enumerate(self.tables["Lead"].rows):
            created = int(self.lead_created[k])
            stop = row.get("_converted_at") or created + 75 * _DAY
            stop = min(stop, _END_S - 3600)
            qualified_share = 0.55 if row["IsConverted"] else 0.12
            u = rng.random()
            if u < qualified_share:
                failing: tuple[str, ...] = ()
            elif u < qualified_share + (1 - qualified_share) * 0.9:
                failing = (factors[int(rng.choice(4, p=single))],)
            else:
                failing = tuple(sorted(rng.choice(factors, size=2, replace=False).tolist(), key=factors.index))
            product = pool[int(rng.integers(len(pool)))]
            p = spec.products[product]
            quantity = 1 if spec.households else int(np.clip(round(math.exp(rng.normal(math.log(8), 0.7))), 1, 40))
            discount = rules.allowed_discount(p.family, quantity, False)
            cost = round(quantity * p.price * (1 - discount / 100), 2)
            if "Budget" in failing:
                budget = max(1000, math.floor(cost * (0.6 + 0.3 * rng.random()) / 1000) * 1000)
                budget = min(budget, math.floor((cost - 1) / 100) * 100)
            else:
                budget = math.ceil(cost * (1.05 + 0.35 * rng.random()) / 1000) * 1000
            setup = spec.days_to_set_up(product, quantity)
            if "Timeline" in failing:
                days = int(rng.integers(max(1, setup // 3), setup))
            else:
                days = setup + int(rng.integers(3, 31))
            facts = {
                "product": p.name, "quantity": quantity, "unit_price": p.price, "budget": int(budget), "days": days,
                "need": "Need" not in failing, "authority": "Authority" not in failing,
            }  # fmt: skip
            n_calls = 1 if rng.random() < 0.55 or stop - created < 4 * 3600 else 2
            days_at = rng.integers(created // _DAY, max(stop // _DAY, created // _DAY + 1), size=n_calls)
            # Business hours, after the lead came in and before it converted (or the org's end).
            times = sorted({min(max(int(d) * _DAY + _business_second(rng), created + 1800), stop) for d in days_at})
            changed = len(times) == 2 and rng.random() < 0.5
            rep, lead = self.user_name[self.lead_owner[k]], f"{row['FirstName']} {row['LastName']}"
            for j, start in enumerate(times):
                said = dict(facts)
                if changed and j == 0:  # the first call's figures, which the latest call updates
                    old = int(max(1000, round(budget * (0.5 + 1.1 * rng.random()) / 1000) * 1000))
                    said["budget"] = old if old != budget else old + 1000
                    shift = int(rng.integers(5, 25))
                    said["days"] = days - shift if days - shift >= 1 and rng.random() < 0.5 else days + shift
                lines = text.bant_call(rand, spec, rep, lead, said, first=j == 0, changed=changed and j == 1)
                stamps = [start + 35 * n + int(rng.integers(0, 20)) for n in range(len(lines))]
                body = "\n".join(f"[{_dt(t)[:19]}] {who}: {line}" for t, (who, line) in zip(stamps, lines, strict=True))
                calls.append((start, stamps[-1] + 30, k, body))
            facts_by_lead.append((k, product, quantity, p.price, discount, cost, int(budget), setup, days, failing))
        calls.sort(key=lambda c: (c[0], c[2]))
        ids = self.ids("a05", len(calls))
        latest: dict[int, str] = {}
        for cid, (start, end, k, body) in zip(ids, calls, strict=True):
            self.tables["VoiceCallTranscript__c"].add(
                Id=cid, OpportunityId__c=None, LeadId__c=self.lead_ids[k], Body__c=body, EndTime__c=_dt(end),
                OwnerId=self.user_ids[self.lead_owner[k]], CreatedDate=_dt(start),
            )  # fmt: skip
            latest[k] = cid
        self.put_hidden(
            "lead_bant",
            ("LeadId", "latest_call", "product", "quantity", "unit_price", "discount", "cost", "budget",
             "setup_days", "required_days", "budget_ok", "authority_ok", "need_ok", "timeline_ok", "failing"),
            [(self.lead_ids[k], latest[k], self.product_ids[product], quantity, price, discount, cost, budget, setup,
              days, int("Budget" not in failing), int("Authority" not in failing), int("Need" not in failing),
              int("Timeline" not in failing), ",".join(failing) or None)
             for k, product, quantity, price, discount, cost, budget, setup, days, failing in facts_by_lead],
        )  # fmt: skip

    # -- opportunities, lines, quotes ------------------------------------------------------------

    def _lines(self, rng: np.random.Generator, rep: int) -> list[list[float]]:
        """[product, quantity] lines of a new deal: compliant with every configuration rule."""
        spec, rules = self.spec, self.spec.rules
        size = float(self.deal_size[rep])
        chosen: dict[int, int] = {}
        if spec.households:
            vehicles = [i for i, p in enumerate(spec.products) if p.family == "Vehicle"]
            prices = np.array([spec.products[i].price for i in vehicles])
            target = 38000.0 * math.sqrt(size)
            w = np.exp(-np.abs(np.log(prices / target)) / 0.15)
            chosen[vehicles[int(rng.choice(len(vehicles), p=w / w.sum()))]] = 1
            by_family: dict[str, list[int]] = defaultdict(list)
            for i, p in enumerate(spec.products):
                by_family[p.family].append(i)
            n_opt = int(rng.binomial(2, min(0.85, 0.35 * math.sqrt(size))))
            for i in rng.choice(by_family["Option Package"], size=n_opt, replace=False).tolist():
                chosen[i] = 1
            for i in rng.choice(by_family["Accessory"], size=int(rng.integers(0, 3)), replace=False).tolist():
                chosen[i] = int(rng.integers(1, spec.products[i].max_qty + 1))
            for family, p_take in (("Protection Plan", 0.4), ("Maintenance Plan", 0.35), ("Financing", 0.55)):
                if rng.random() < p_take:
                    pool = by_family[family]
                    chosen[pool[int(rng.integers(len(pool)))]] = 1
        else:
            lo, hi = spec.lines_per_opportunity
            families = sorted({p.family for p in spec.products})
            main = families[int(rng.integers(len(families)))]
            weights = np.array([3.0 if p.family == main else 1.0 for p in spec.products])
            count = int(rng.integers(lo, hi + 1))
            for i in rng.choice(len(spec.products), size=count, replace=False, p=weights / weights.sum()).tolist():
                p = spec.products[i]
                if p.family == "Services":
                    chosen[i] = int(rng.integers(1, min(p.max_qty, 3) + 1))
                else:
                    q = round(float(np.exp(rng.normal(math.log(5.0 * size), 0.45))))
                    chosen[i] = max(1, min(q, p.max_qty))
        # Configuration rules: limits cap quantities, companions join their primaries, then one product of
        # each excluded pair leaves (never one a bundle needs).
        for primary, companions in rules.bundles.items():
            if primary in chosen:
                for c in companions:
                    chosen.setdefault(c, chosen[primary] if not spec.households else 1)
        for primary, companions in rules.bundles.items():  # chains (a bike rack needs a hitch, a hitch a tow package)
            if primary in chosen:
                for c in companions:
                    chosen.setdefault(c, 1)
        needed = {c for primary, cs in rules.bundles.items() if primary in chosen for c in cs}
        for a, b in rules.exclusions:
            if a in chosen and b in chosen:
                drop = b if b not in needed else a
                del chosen[drop]
                for primary, companions in rules.bundles.items():  # a dropped companion takes its primary along
                    if drop in companions:
                        chosen.pop(primary, None)
        for i, limit in rules.quantity_limits.items():
            if i in chosen:
                chosen[i] = min(chosen[i], limit)
        if not spec.households:
            self._scale_to(rng, chosen, DEAL_BASE * size)
        return [[float(i), float(q)] for i, q in sorted(chosen.items())]

    def _scale_to(self, rng: np.random.Generator, chosen: dict[int, int], target: float) -> None:
        """Scale the licence quantities of a deal so its list value lands near ``target`` (the representative's
        planted deal size, with a small spread); services keep their quantities, limits and caps hold."""
        spec, rules = self.spec, self.spec.rules
        target *= math.exp(DEAL_NOISE * float(rng.standard_normal()))
        caps = {i: min(spec.products[i].max_qty, rules.quantity_limits.get(i, 10**6)) for i in chosen}
        for _ in range(3):
            fixed = sum(spec.products[i].price * q for i, q in chosen.items() if spec.products[i].family == "Services")
            movable = [i for i in chosen if spec.products[i].family != "Services" and chosen[i] < caps[i]]
            value = sum(spec.products[i].price * chosen[i] for i in movable)
            rest = sum(spec.products[i].price * q for i, q in chosen.items()) - fixed - value
            if not movable or value <= 0:
                return
            factor = max(target - fixed - rest, 0.0) / value
            for i in movable:
                chosen[i] = max(1, min(caps[i], round(chosen[i] * factor)))

    def _discounts(self, rng: np.random.Generator, lines: list[list[float]], offer: bool) -> list[float]:
        """A compliant discount (percent) per line: within its cap, the quote within the dollar limit."""
        spec, rules = self.spec, self.spec.rules
        step = 5.0 if not spec.households else 1.0
        out = []
        for i, q in lines:
            p = spec.products[int(i)]
            cap = rules.allowed_discount(p.family, q, offer)
            if cap <= 0 or rng.random() < 0.2:
                out.append(0.0)
            elif rng.random() < 0.55:
                out.append(cap)
            else:
                out.append(step * int(rng.integers(0, int(cap // step) + 1)))
        while sum(self._discount_dollars(lines, out)) > rules.discount_limit:
            dollars = self._discount_dollars(lines, out)
            k = int(np.argmax(dollars))
            out[k] = max(0.0, out[k] - step)
        return out

    def _discount_dollars(self, lines: list[list[float]], discounts: list[float]) -> list[float]:
        return [q * self.spec.products[int(i)].price * d / 100 for (i, q), d in zip(lines, discounts, strict=True)]

    def opportunities(self) -> None:
        rng, rand = self.rng("opportunities"), self.rand("opportunities")
        spec = self.spec
        leads = self.tables["Lead"].rows
        deals: list[dict[str, Any]] = []
        for k in self.conversions:
            row = leads[k]
            deals.append(
                {
                    "account": row["_account"],
                    "contact": row["_contact"],
                    "owner": self.lead_owner[k],
                    "created": min(row["_converted_at"] + int(rng.integers(600, 4 * 3600)), _END_S - 3600),
                    "source": row["LeadSource"],
                    "lead": k,
                }
            )
        n_direct = max(0, self.n("Opportunity") - len(deals))
        n_acc = len(self.acc_state)
        if spec.households:
            converted_accounts = {d["account"] for d in deals}
            walk_ins = [a for a in range(n_acc) if a not in converted_accounts]
            picks = rng.choice(walk_ins, size=min(n_direct, len(walk_ins)), replace=False).tolist()
            for acc in picks:
                when = min(self.acc_created[acc] + int(rng.integers(0, 10 * _DAY)), _END_S - _DAY)
                deals.append(
                    {
                        "account": acc,
                        "contact": self.acc_contacts[acc][0],
                        "owner": self.acc_owner[acc],
                        "created": when,
                        "source": "Other",
                        "lead": None,
                    }
                )
        else:
            size = np.array([self.tables["Account"].rows[a]["NumberOfEmployees"] or 50 for a in range(n_acc)], float)
            w = size**0.3
            for acc in rng.choice(n_acc, size=n_direct, p=w / w.sum()).tolist():
                if rng.random() < 0.5:
                    owner = self.acc_owner[acc]
                else:
                    owner = self._owner_for_state(rng, self.acc_state[acc], self.opp_volume)
                contacts = self.acc_contacts[acc]
                when = int(rng.integers(max(_START_S, self.acc_created[acc]), _END_S - _DAY))
                deals.append(
                    {
                        "account": acc,
                        "contact": contacts[int(rng.integers(len(contacts)))],
                        "owner": owner,
                        "created": when,
                        "source": "Other",
                        "lead": None,
                    }
                )
        deals.sort(key=lambda d: (d["created"], d["account"]))
        self.opp_ids = self.ids("006", len(deals))
        win_phase = rng.random(len(self.reps))
        wins_seen: dict[int, int] = defaultdict(int)
        for k, d in enumerate(deals):
            rep = self.rep_pos[d["owner"]]
            if self.latent:
                cycle = int(self.cycle_low[rep]) + int(rng.integers(0, int(self.cycle_width[rep]) + 1))
            else:
                cycle = max(3, round(FLAT_CYCLE * math.exp(FLAT_CYCLE_NOISE * float(rng.standard_normal()))))
            d["cycle"] = cycle
            # Wins, like conversions, follow an evenly spread sequence of the representative's win rate.
            p, j = float(self.win[rep]), wins_seen[rep]
            won = math.floor(win_phase[rep] + (j + 1) * p) > math.floor(win_phase[rep] + j * p)
            wins_seen[rep] += 1
            created_day = _day_index(d["created"])
            entries = [d["created"] + round(frac * cycle * _DAY) for frac in _STAGE_START]
            reached = max(s for s in range(len(_STAGES)) if entries[s] < _END_S)
            signed_day = created_day + cycle
            if won and signed_day * _DAY < _END_S:
                true_stage = _CLOSED
                d["signed_day"] = signed_day
            else:
                stall = len(_STALL) - 1 if won else int(rng.choice(len(_STALL), p=_STALL))
                true_stage = min(stall, reached, _NEGOTIATION)
                d["signed_day"] = None
            d["entries"] = entries
            d["true"] = true_stage
            d["won"] = won
            d["offer"] = bool(rng.random() < 0.15)
            d["lines"] = self._lines(rng, rep)
            d["discounts"] = (
                self._discounts(rng, d["lines"], d["offer"]) if true_stage >= _QUOTE else [0.0] * len(d["lines"])
            )
            if d["lead"] is not None:
                leads[d["lead"]]["ConvertedOpportunityId"] = self.opp_ids[k]
        self.deals = deals
        self._record_stages(rng)
        account_rows = self.tables["Account"].rows
        for k, d in enumerate(deals):
            account = account_rows[d["account"]]["Name"]
            products = [spec.products[int(i)].name for i, _q in d["lines"]]
            stage = _STAGES[d["recorded"]]
            if spec.households:
                vehicle = next(
                    spec.products[int(i)].name for i, _q in d["lines"] if spec.products[int(i)].family == "Vehicle"
                )
                name = f"{account} - {vehicle}"
            else:
                main = max(d["lines"], key=lambda line: line[1] * spec.products[int(line[0])].price)
                purpose = ("Expansion", "Renewal", "Evaluation", "Rollout")[k % 4]
                name = f"{account} - {spec.products[int(main[0])].family} {purpose}"
            amount = round(
                sum(
                    round(q * round(spec.products[int(i)].price * (1 - dd / 100), 2), 2)
                    for (i, q), dd in zip(d["lines"], d["discounts"], strict=True)
                ),
                2,
            )
            close_day = d["signed_day"] if d["signed_day"] is not None else _day_index(d["created"]) + d["cycle"]
            d["row"] = self.tables["Opportunity"].add(
                Id=self.opp_ids[k],
                Name=name,
                Description=text.opportunity_description(rand, spec, account, products),
                AccountId=d["account"],
                ContactId=d["contact"],
                StageName=stage,
                Probability=STAGE_PROBABILITY[stage],
                Amount=amount,
                CloseDate=_day(close_day * _DAY),
                Type=("New Customer", "Existing Customer - Upgrade", "Existing Customer - Replacement")[
                    0 if d["lead"] is not None else 1 + int(rng.integers(2))
                ],
                LeadSource=d["source"],
                NextStep=spec.stage_tasks[min(d["recorded"] + 1, _CLOSED)][int(rng.integers(6))]
                if d["recorded"] < _CLOSED
                else None,
                Pricebook2Id=self.pricebook_id,
                ContractID__c=None,
                OwnerId=self.user_ids[d["owner"]],
                CreatedDate=_dt(d["created"]),
            )

    def opportunity_calls(self) -> None:
        """Calls about opportunities, each rendered from a hidden annotation: the competitors mentioned (whether we
        lead or trail them, on which subtopic, and any competing offer) and the subtopics discussed with their
        sentiment. Competitors' prominence drifts quarter by quarter; each has its own edge and offer habit, each
        subtopic its own tone (flat when ``latent=False``)."""
        rng, rand = self.rng("opportunity-calls"), self.rand("opportunity-calls")
        spec, s = self.spec, self.latent
        n_c, n_t = len(spec.competitors), len(spec.subtopics)
        quarters = (_END_S - _START_S) // (91 * _DAY) + 1
        # Each competitor's prominence rises and falls on its own cycle (6 to 16 quarters), so the one most talked
        # about changes from window to window.
        period = rng.uniform(6.0, 16.0, n_c)[:, None]
        phase = rng.uniform(0.0, 2 * math.pi, n_c)[:, None]
        wave = 1.3 * np.sin(2 * math.pi * np.arange(quarters)[None, :] / period + phase)
        weight = np.exp(wave + rng.normal(0.0, 0.15, (n_c, quarters))) if s else np.ones((n_c, quarters))
        edge = rng.uniform(0.2, 0.8, n_c) if s else np.full(n_c, 0.5)
        offers = rng.uniform(0.1, 0.5, n_c) if s else np.full(n_c, 0.25)
        tone = rng.uniform(0.2, 0.8, n_t) if s else np.full(n_t, 0.5)
        per_deal = 1.6 if not spec.households else 0.4
        calls: list[tuple[int, int, int, str, list[tuple[Any, ...]]]] = []
        contact_rows = self.tables["Contact"].rows
        for k, d in enumerate(self.deals):
            n_calls = min(3, int(rng.poisson(per_deal)))
            end = d["entries"][min(d["true"] + 1, _CLOSED)] if d["true"] < _CLOSED else d["signed_day"] * _DAY
            end = min(end, _END_S - 3600)
            for _ in range(n_calls):
                day = int(rng.integers(d["created"] // _DAY, max(end // _DAY, d["created"] // _DAY + 1)))
                start = min(max(day * _DAY + _business_second(rng), d["created"] + 1800), end)
                quarter = min((start - _START_S) // (91 * _DAY), quarters - 1)
                n_m = int(rng.choice(3, p=(0.3, 0.5, 0.2)))
                w = weight[:, quarter]
                named = rng.choice(n_c, size=n_m, replace=False, p=w / w.sum()).tolist() if n_m else []
                mentions = []
                for c in named:
                    u = rng.random()
                    relation = None if u < 0.15 else "advantage" if rng.random() < edge[c] else "disadvantage"
                    topic = spec.subtopics[int(rng.integers(n_t))] if relation else None
                    pct = int(rng.choice((5, 10, 15, 20))) if rng.random() < offers[c] else None
                    mentions.append((spec.competitors[c], relation, topic, pct))
                picked = rng.choice(n_t, size=int(rng.integers(1, 4)), replace=False).tolist()
                topics = [(spec.subtopics[t], "positive" if rng.random() < tone[t] else "negative") for t in picked]
                contact = contact_rows[d["contact"]]
                lines = text.insight_call(
                    rand, spec, self.user_name[d["owner"]], f"{contact['FirstName']} {contact['LastName']}",
                    d["row"]["Name"], mentions, topics,
                )  # fmt: skip
                stamps = [start + 35 * n + int(rng.integers(0, 20)) for n in range(len(lines))]
                body = "\n".join(f"[{_dt(t)[:19]}] {who}: {line}" for t, (who, line) in zip(stamps, lines, strict=True))
                labels = [("competitor", c, rel, topic, int(pct is not None), None) for c, rel, topic, pct in mentions]
                labels += [("subtopic", t, None, None, 0, sentiment) for t, sentiment in topics]
                calls.append((start, stamps[-1] + 30, k, body, labels))
        calls.sort(key=lambda c: (c[0], c[2]))
        first = len(self.tables["VoiceCallTranscript__c"])
        hidden = []
        for cid, (start, end, k, body, labels) in zip(self.ids("a05", len(calls), first), calls, strict=True):
            self.tables["VoiceCallTranscript__c"].add(
                Id=cid, OpportunityId__c=self.opp_ids[k], LeadId__c=None, Body__c=body, EndTime__c=_dt(end),
                OwnerId=self.user_ids[self.deals[k]["owner"]], CreatedDate=_dt(start),
            )  # fmt: skip
            hidden += [(cid, self.opp_ids[k], *label) for label in labels]
        self.put_hidden(
            "call_insight",
            ("CallId", "OpportunityId", "kind", "label", "relation", "topic", "offer", "sentiment"),
            hidden,
        )
        self.lat["competitor_weight_by_quarter"] = {
            spec.competitors[c]: [round(float(x), 6) for x in weight[c]] for c in range(n_c)
        }
        self.lat["competitor_edge"] = {spec.competitors[c]: round(float(edge[c]), 6) for c in range(n_c)}
        self.lat["competitor_offer_rate"] = {spec.competitors[c]: round(float(offers[c]), 6) for c in range(n_c)}
        self.lat["subtopic_positive_rate"] = {spec.subtopics[t]: round(float(tone[t]), 6) for t in range(n_t)}

    def _record_stages(self, rng: np.random.Generator) -> None:
        """The StageName each deal shows: its true stage, except a planted share recorded as another stage."""
        n = len(self.deals)
        wrong = set(rng.choice(n, size=round(self.knobs.wrong_stage_rate * n), replace=False).tolist())
        for k, d in enumerate(self.deals):
            true = d["true"]
            if k not in wrong:
                d["recorded"] = true
                continue
            # Mostly behind (the representative did not move the deal on); ahead only to a stage short of Closed,
            # which needs a signed contract.
            behind = list(range(true))
            ahead = list(range(true + 1, _CLOSED))
            if behind and (not ahead or rng.random() < 0.75):
                d["recorded"] = behind[-1] if rng.random() < 0.6 else behind[int(rng.integers(len(behind)))]
            else:
                d["recorded"] = ahead[0]

    def quotes(self) -> None:
        rng, rand = self.rng("quotes"), self.rand("quotes")
        spec = self.spec
        quotes: list[dict[str, Any]] = []
        for k, d in enumerate(self.deals):
            if d["true"] < _QUOTE:
                continue
            count = int(rng.choice((1, 2, 3), p=(0.55, 0.33, 0.12)))
            lo = d["entries"][_QUOTE]
            hi = min(d["entries"][_QUOTE + 1], _END_S - 3600)
            times = np.sort(rng.integers(lo, max(hi, lo + 3600), size=count)).tolist()
            step = 5.0 if not spec.households else 1.0
            for j, when in enumerate(times):
                last = j == count - 1
                discounts = d["discounts"] if last else [max(0.0, x - step * (count - 1 - j)) for x in d["discounts"]]
                if last:
                    status = {_CLOSED: "Accepted"}.get(d["true"]) or rand.choice(
                        ("Presented", "Approved", "In Review")
                        if d["true"] == _NEGOTIATION
                        else ("Draft", "Needs Review", "In Review", "Approved")
                    )
                else:
                    status = rand.choice(("Rejected", "Rejected", "Denied"))
                quotes.append(
                    {
                        "deal": k,
                        "created": int(when),
                        "status": status,
                        "last": last,
                        "lines": [list(line) for line in d["lines"]],
                        "discounts": list(discounts),
                        "extra": [],
                        "offer": d["offer"],
                    }
                )
        quotes.sort(key=lambda q: (q["created"], q["deal"]))
        self.quote_list = quotes
        self.quote_ids = self.ids("0Q0", len(quotes))
        self._plant_accepted(rng)
        self._plant_violations(rng)

    def _accepted_counts(self) -> dict[int, int]:
        counts: dict[int, int] = defaultdict(int)
        for q in self.quote_list:
            if q["status"] == "Accepted":
                counts[self.deals[q["deal"]]["owner"]] += 1
        return counts

    def _plant_accepted(self, rng: np.random.Generator) -> None:
        """Accepted quotes: every won deal's last quote, and some deals in negotiation whose customer accepted;
        then, with latent variables, per territory a unique most-accepted representative or a planted tie."""
        open_last: dict[int, list[int]] = defaultdict(list)  # representative -> quotes that may flip to Accepted
        for j, q in enumerate(self.quote_list):
            d = self.deals[q["deal"]]
            if q["last"] and d["true"] == _NEGOTIATION:
                open_last[d["owner"]].append(j)
        for owner, pool in open_last.items():
            take = int(rng.binomial(len(pool), float(self.acceptance[self.rep_pos[owner]])))
            for j in rng.permutation(pool)[:take].tolist():
                self.quote_list[j]["status"] = "Accepted"
        unconverted: dict[int, int] = defaultdict(int)
        for row, owner in zip(self.tables["Lead"].rows, self.lead_owner, strict=True):
            unconverted[owner] += not row["IsConverted"]
        self.unconverted = unconverted
        n_t = len(TERRITORIES)
        if self.latent:
            planned = round(self.knobs.territory_tie_rate * n_t)
            self.lat["territory_ties_planned"] = planned
            self._fix_territories(planned, open_last, rng)
        counts = self._accepted_counts()
        rows = []
        ties = 0
        for t in range(n_t):
            ranked = sorted(self.members[t], key=lambda a: (-counts[a], unconverted[a], self.user_ids[a]))
            top = [a for a in ranked if counts[a] == counts[ranked[0]]]
            winner, tie, tied_with = ranked[0], len(top) > 1, None
            if tie:
                tied_with = ",".join(self.user_ids[a] for a in top[1:])
                if sum(unconverted[a] == unconverted[top[0]] for a in top) > 1:
                    winner = None  # the rules leave it undecided (possible in flat orgs)
            ties += tie
            rows.append(
                (
                    self.territory_ids[t],
                    ", ".join(TERRITORIES[t][1]),
                    self.user_ids[winner] if winner is not None else None,
                    int(tie),
                    tied_with,
                    counts[ranked[0]],
                )
            )
        self.put_hidden("territory", ("Territory2Id", "states", "winner", "tie", "tied_with", "accepted"), rows)
        self.lat["territory_ties"] = ties
        undecided = sum(r[2] is None for r in rows)
        decided_ties = ties - undecided
        planned = self.lat.get("territory_ties_planned")
        if planned is not None and (undecided or decided_ties != planned):
            warnings.warn(  # stacklevel: the caller of generate_org
                f"the {self.spec.kind} org (seed {self.seed}, scale {self.scale:g}) has {decided_ties} territories "
                f"whose lead routing is decided by unconverted leads where {planned} were planted, and {undecided} "
                "that no rule decides: too few accepted quotes to plant them at this scale (crmarena_hidden_territory "
                "records what holds)",
                stacklevel=6,
            )

    def _fix_territories(self, n_ties: int, open_last: dict[int, list[int]], rng: np.random.Generator) -> None:
        """Choose how many of each representative's negotiation quotes are accepted so that every territory has
        a planted top: one representative with the most accepted quotes, or, in as many territories as the plan
        has ties, exactly two, told apart by their unconverted leads. A local search over those counts
        (representatives share territories), started from the counts the acceptance habits drew; the hidden
        table records the outcome, and ``territory_plan_misses`` how far it stayed from the plan (0: none)."""
        quotes = self.quote_list
        base: dict[int, int] = defaultdict(int)  # accepted quotes of won deals: fixed
        for q in quotes:
            d = self.deals[q["deal"]]
            if q["status"] == "Accepted" and d["true"] == _CLOSED:
                base[d["owner"]] += 1
        pools = {a: list(pool) for a, pool in open_last.items()}
        extra = {a: sum(quotes[j]["status"] == "Accepted" for j in pool) for a, pool in pools.items()}
        unconv = self.unconverted
        members = self.members

        def count(a: int) -> int:
            return base[a] + extra.get(a, 0)

        def shape(t: int) -> int:
            """0: a unique top; 1: two tied, told apart by unconverted leads; 2: anything else."""
            ranked = sorted(members[t], key=lambda a: -count(a))
            top = [a for a in ranked if count(a) == count(ranked[0])]
            if len(top) == 1:
                return 0
            return 1 if len(top) == 2 and unconv[top[0]] != unconv[top[1]] else 2

        def misses() -> int:
            shapes = [shape(t) for t in range(len(members))]
            return 2 * shapes.count(2) + abs(shapes.count(1) - n_ties)

        current = misses()
        for _ in range(2500):
            if current == 0:
                break
            t = int(rng.integers(len(members)))
            ranked = sorted(members[t], key=lambda a: -count(a))
            a = ranked[int(rng.integers(min(3, len(ranked))))]
            step = 1 if rng.random() < 0.5 else -1
            if not 0 <= extra.get(a, 0) + step <= len(pools.get(a, ())):
                continue
            extra[a] = extra.get(a, 0) + step
            after = misses()
            if after <= current or rng.random() < 0.02:
                current = after
            else:
                extra[a] -= step
        self.lat["territory_plan_misses"] = current
        for a, pool in pools.items():
            for n, j in enumerate(pool):
                if n < extra.get(a, 0):
                    quotes[j]["status"] = "Accepted"
                elif quotes[j]["status"] == "Accepted":
                    quotes[j]["status"] = "Presented"

    def _plant_violations(self, rng: np.random.Generator) -> None:
        """Exactly round(rate * quotes) quotes break one approval rule, as many (by their rate) one configuration
        rule; accepted quotes and the rest comply."""
        n = len(self.quote_list)
        candidates = [j for j, q in enumerate(self.quote_list) if q["status"] != "Accepted"]
        n_app = round(self.knobs.approval_violation_rate * n)
        n_cfg = round(self.knobs.config_violation_rate * n)
        order = rng.permutation(candidates).tolist()
        self.violations: dict[int, tuple[str, str, dict[str, Any]]] = {}
        approval = [key for key, cat in text.RULE_KEYS if cat == "approval"]
        config = [key for key, cat in text.RULE_KEYS if cat == "config"]
        want = {"approval": n_app, "config": n_cfg}
        done = {"approval": 0, "config": 0}
        for j in order:
            for category, keys in (("approval", approval), ("config", config)):
                if done[category] >= want[category] or j in self.violations:
                    continue
                for key in rng.permutation(keys).tolist():
                    detail = self._break(rng, self.quote_list[j], key)
                    if detail is not None:
                        self.violations[j] = (category, key, detail)
                        done[category] += 1
                        break
        self.lat["violations_planted"] = done
        self.lat["violations_wanted"] = want
        if done != want:
            warnings.warn(
                f"the {self.spec.kind} org (seed {self.seed}, scale {self.scale:g}) has {done} rule-breaking quotes "
                f"where {want} were asked: too few quotes that are not accepted (crmarena_hidden_quote records them)",
                stacklevel=6,
            )

    def _break(self, rng: np.random.Generator, q: dict[str, Any], key: str) -> dict[str, Any] | None:
        """Make quote ``q`` break rule ``key`` and nothing else; None (unchanged) when it cannot."""
        spec, rules = self.spec, self.spec.rules
        lines, discounts = q["lines"], q["discounts"]
        products = [spec.products[int(i)] for i, _q in lines]
        step = 5.0 if not spec.households else 1.0

        def dollars(ds: list[float]) -> float:
            return sum(self._discount_dollars(lines, ds))

        if key == "discount_tiers":
            order = rng.permutation(len(lines)).tolist()
            for k in order:
                p, qty = products[k], lines[k][1]
                if p.family in rules.no_discount_families:
                    continue
                cap = rules.allowed_discount(p.family, qty, q["offer"])
                new = list(discounts)
                new[k] = cap + step * int(rng.integers(1, 3))
                if dollars(new) <= rules.discount_limit:
                    q["discounts"] = new
                    return {"product": self.product_ids[int(lines[k][0])], "discount": new[k], "allowed": cap}
            return None
        if key == "discount_limit":
            new = [
                rules.allowed_discount(p.family, qty, q["offer"]) for p, (_i, qty) in zip(products, lines, strict=True)
            ]
            if dollars(new) <= rules.discount_limit:
                return None
            q["discounts"] = new
            return {"total_discount": round(dollars(new), 2), "limit": rules.discount_limit}
        if key == "no_discount":
            for k in rng.permutation(len(lines)).tolist():
                if products[k].family in rules.no_discount_families:
                    new = list(discounts)
                    new[k] = step * int(rng.integers(1, 3))
                    if dollars(new) <= rules.discount_limit:
                        q["discounts"] = new
                        return {"product": self.product_ids[int(lines[k][0])], "discount": new[k]}
            return None
        present = {int(i) for i, _q in lines}
        if key == "quantity_limits":
            for k in rng.permutation(len(lines)).tolist():
                i = int(lines[k][0])
                if i in rules.quantity_limits:
                    new_qty = float(rules.quantity_limits[i] + int(rng.integers(1, 11)))
                    trial = [list(line) for line in lines]
                    trial[k][1] = new_qty
                    # The discount stays within the cap of the new quantity (never lower than before).
                    if sum(self._discount_dollars(trial, discounts)) <= rules.discount_limit:
                        q["lines"] = trial
                        return {"product": self.product_ids[i], "quantity": new_qty, "limit": rules.quantity_limits[i]}
            return None
        if key == "exclusions":
            for x in rng.permutation(len(rules.exclusions)).tolist():
                a, b = rules.exclusions[x]
                for have, add in ((a, b), (b, a)):
                    if (
                        have in present
                        and add not in present
                        and add not in rules.bundles
                        and self._addable(add, present - {have})
                    ):
                        q["lines"] = sorted([*lines, [float(add), 1.0]])
                        q["discounts"] = self._align(lines, discounts, q["lines"])
                        return {"product": self.product_ids[have], "other_product": self.product_ids[add]}
            return None
        if key == "bundles":
            for primary, companions in [(p, cs) for p, cs in rules.bundles.items()]:
                if primary in present and all(c in present for c in companions):
                    drop = companions[0]
                    if any(drop in cs for p2, cs in rules.bundles.items() if p2 != primary and p2 in present):
                        continue
                    if drop in rules.bundles:  # a companion that is itself a primary: its own companions stay fine
                        pass
                    q["lines"] = [line for line in lines if int(line[0]) != drop]
                    q["discounts"] = self._align(lines, discounts, q["lines"])
                    return {"product": self.product_ids[primary], "missing": self.product_ids[drop]}
            for primary, companions in rules.bundles.items():
                if (
                    primary not in present
                    and not any(c in present for c in companions)
                    and self._addable(primary, present)
                ):
                    q["lines"] = sorted([*lines, [float(primary), 1.0]])
                    q["discounts"] = self._align(lines, discounts, q["lines"])
                    return {"product": self.product_ids[primary], "missing": self.product_ids[companions[0]]}
            return None
        raise ValueError(key)

    def _addable(self, product: int, present: set[int]) -> bool:
        """Whether adding one unit of ``product`` to a quote with ``present`` breaks no exclusion."""
        return not any(
            (a == product and b in present) or (b == product and a in present) for a, b in self.spec.rules.exclusions
        )

    @staticmethod
    def _align(old: list[list[float]], discounts: list[float], new: list[list[float]]) -> list[float]:
        by_product = {int(i): d for (i, _q), d in zip(old, discounts, strict=True)}
        return [by_product.get(int(i), 0.0) for i, _q in new]

    # -- contracts, orders -----------------------------------------------------------------------

    def contracts(self) -> None:
        rng, rand = self.rng("contracts"), self.rand("contracts")
        won = [k for k, d in enumerate(self.deals) if d["signed_day"] is not None]
        won.sort(key=lambda k: (self.deals[k]["signed_day"], k))
        self.contract_ids = self.ids("800", len(won))
        self.order_ids = self.ids("801", len(won))
        for n, k in enumerate(won):
            d = self.deals[k]
            signed = d["signed_day"] * _DAY
            customer_signed = signed - int(rng.integers(0, 4)) * _DAY
            start = signed + int(rng.integers(1, 15)) * _DAY
            term = int(rng.choice((12, 24, 36)))
            end = time.gmtime(start)
            end_year, end_month = end.tm_year + (end.tm_mon - 1 + term) // 12, (end.tm_mon - 1 + term) % 12 + 1
            end_day = min(end.tm_mday, 28)
            end_date = f"{end_year:04d}-{end_month:02d}-{end_day:02d}"
            contact = d["contact"]
            self.tables["Contract"].add(
                Id=self.contract_ids[n],
                AccountId=d["account"],
                Status="Activated",
                StartDate=_day(start),
                EndDate=end_date,
                ContractTerm=term,
                CustomerSignedDate=_day(customer_signed),
                CustomerSignedId=contact,
                CustomerSignedTitle=self.tables["Contact"].rows[contact]["Title"],
                CompanySignedDate=_day(signed),
                CompanySignedId=self.user_ids[d["owner"]],
                Description=rand.choice(("Licence agreement.", "Master purchase agreement.", "Order form and terms."))
                if not self.spec.households
                else "Vehicle purchase agreement.",
                Pricebook2Id=self.pricebook_id,
                OwnerId=self.user_ids[d["owner"]],
                CreatedDate=_dt(customer_signed + 3600),
            )
            d["row"]["ContractID__c"] = self.contract_ids[n]
            self.tables["Account"].rows[d["account"]]["Type"] = "Customer - Direct"
            d["order"] = n
            d["order_day"] = _day_index(start)
            self.tables["Order"].add(
                Id=self.order_ids[n],
                AccountId=d["account"],
                Status="Activated",
                EffectiveDate=_day(start),
                Pricebook2Id=self.pricebook_id,
                OwnerId=self.user_ids[d["owner"]],
            )

    def line_items(self) -> None:
        spec = self.spec
        opp_lines: list[tuple[int, int]] = []  # (deal, line) in id order
        for k, d in enumerate(self.deals):
            for n in range(len(d["lines"])):
                opp_lines.append((k, n))
        ids = self.ids("00k", len(opp_lines))
        self.oli_id: dict[tuple[int, int], str] = {}
        for oid, (k, n) in zip(ids, opp_lines, strict=True):
            d = self.deals[k]
            i, q = d["lines"][n]
            p = spec.products[int(i)]
            unit = round(p.price * (1 - d["discounts"][n] / 100), 2)
            self.oli_id[(k, int(i))] = oid
            self.tables["OpportunityLineItem"].add(
                Id=oid,
                OpportunityId=self.opp_ids[k],
                Product2Id=self.product_ids[int(i)],
                PricebookEntryId=self.entry_ids[int(i)],
                Quantity=q,
                UnitPrice=unit,
                ListPrice=p.price,
                TotalPrice=round(q * unit, 2),
                ServiceDate=_day(d["entries"][_CLOSED]) if d["signed_day"] else None,
                Description=None,
            )
        order_lines = [
            (k, n) for k, d in enumerate(self.deals) if d.get("order") is not None for n in range(len(d["lines"]))
        ]
        order_lines.sort(key=lambda kn: (self.deals[kn[0]]["order"], kn[1]))
        self.order_items: list[tuple[int, int]] = order_lines
        for oid, (k, n) in zip(self.ids("802", len(order_lines)), order_lines, strict=True):
            d = self.deals[k]
            i, q = d["lines"][n]
            unit = round(spec.products[int(i)].price * (1 - d["discounts"][n] / 100), 2)
            self.tables["OrderItem"].add(
                Id=oid,
                OrderId=self.order_ids[d["order"]],
                Product2Id=self.product_ids[int(i)],
                Quantity=q,
                UnitPrice=unit,
                PriceBookEntryId=self.entry_ids[int(i)],
            )
        self.order_item_ids = [r["Id"] for r in self.tables["OrderItem"].rows]
        # Quotes and their lines.
        account_rows, contact_rows = self.tables["Account"].rows, self.tables["Contact"].rows
        qli_rows: list[dict[str, Any]] = []
        hidden = []
        revisions: dict[int, int] = defaultdict(int)
        for j, q in enumerate(self.quote_list):
            d = self.deals[q["deal"]]
            contact = contact_rows[d["contact"]]
            revisions[q["deal"]] += 1
            n_rev = revisions[q["deal"]]
            self.tables["Quote"].add(
                Id=self.quote_ids[j],
                Name=f"{account_rows[d['account']]['Name']} quote {n_rev}",
                OpportunityId=self.opp_ids[q["deal"]],
                AccountId=d["account"],
                ContactId=d["contact"],
                Status=q["status"],
                ExpirationDate=_day(q["created"] + 30 * _DAY),
                Description=None,
                ApprovedCompetingOffer__c=int(q["offer"]),
                Pricebook2Id=self.pricebook_id,
                Email=contact["Email"],
                Phone=contact["Phone"],
                OwnerId=self.user_ids[d["owner"]],
                CreatedDate=_dt(q["created"]),
            )
            for (i, qty), disc in zip(q["lines"], q["discounts"], strict=True):
                p = self.spec.products[int(i)]
                qli_rows.append(
                    {
                        "QuoteId": self.quote_ids[j],
                        "OpportunityLineItemId": self.oli_id.get((q["deal"], int(i))),
                        "Product2Id": self.product_ids[int(i)],
                        "PricebookEntryId": self.entry_ids[int(i)],
                        "Quantity": qty,
                        "UnitPrice": p.price,
                        "ListPrice": p.price,
                        "Discount": disc,
                        "TotalPrice": round(qty * p.price * (1 - disc / 100), 2),
                        "Description": None,
                    }
                )
            found = self.violations.get(j)
            if found is None:
                hidden.append((self.quote_ids[j], None, None, None, None))
            else:
                category, key, detail = found
                hidden.append(
                    (self.quote_ids[j], category, key, self.rule_article[key], json.dumps(detail, sort_keys=True))
                )
        for lid, row in zip(self.ids("0QL", len(qli_rows)), qli_rows, strict=True):
            self.tables["QuoteLineItem"].add(Id=lid, **row)
        self.put_hidden("quote", ("QuoteId", "category", "rule", "ArticleId", "detail"), hidden)

    # -- activities ------------------------------------------------------------------------------

    def tasks(self) -> None:
        rng, rand = self.rng("tasks"), self.rand("tasks")
        spec = self.spec
        open_past = [k for k, d in enumerate(self.deals) if _CLOSED > d["true"] > 0]
        misplaced = (
            set(
                rng.choice(
                    open_past, size=round(self.knobs.misplaced_task_rate * len(open_past)), replace=False
                ).tolist()
            )
            if open_past
            else set()
        )
        tasks: list[tuple[int, int, str, str, int, bool]] = []  # (created, deal, subject, status, stage, misplaced)
        for k, d in enumerate(self.deals):
            true = d["true"]
            entries = d["entries"]
            first_task = len(tasks)
            for stage in range(true + 1):
                lo = entries[stage]
                hi = min(entries[stage + 1] if stage < _CLOSED else entries[stage] + 30 * _DAY, _END_S - 3600)
                if stage < true:
                    count = int(rng.choice((1, 2), p=(0.5, 0.5)))
                    statuses = ["Completed" if rng.random() < 0.93 else "Deferred" for _ in range(count)]
                elif stage == _CLOSED:
                    count = int(rng.choice((1, 2), p=(0.5, 0.5)))
                    statuses = ["Completed" if rng.random() < 0.7 else "Not Started" for _ in range(count)]
                else:
                    count = int(rng.choice((1, 2, 3), p=(0.45, 0.4, 0.15)))
                    statuses = [
                        str(rng.choice(("Not Started", "In Progress", "Completed"), p=(0.55, 0.3, 0.15)))
                        for _ in range(count)
                    ]
                subjects = rng.choice(len(spec.stage_tasks[stage]), size=count, replace=False).tolist()
                for s, status in zip(subjects, statuses, strict=True):
                    when = int(rng.integers(lo, max(hi, lo + 3600)))
                    tasks.append((when, k, spec.stage_tasks[stage][s], status, stage, False))
            if k in misplaced:  # Not Started tasks of earlier stages, never done
                for stage in rng.choice(true, size=min(true, int(rng.integers(1, 3))), replace=False).tolist():
                    used = {t[2] for t in tasks[first_task:]}
                    pool = [s for s in spec.stage_tasks[stage] if s not in used]
                    if not pool:
                        continue
                    when = int(rng.integers(entries[stage], max(entries[stage + 1], entries[stage] + 3600)))
                    tasks.append(
                        (min(when, _END_S - 3600), k, pool[int(rng.integers(len(pool)))], "Not Started", stage, True)
                    )
        tasks.sort(key=lambda t: (t[0], t[1], t[2]))
        ids = self.ids("00T", len(tasks))
        hidden = []
        types = ("Call", "Email", "Meeting", "Other")
        for tid, (when, k, subject, status, stage, stale) in zip(ids, tasks, strict=True):
            d = self.deals[k]
            self.tables["Task"].add(
                Id=tid,
                Subject=subject,
                Status=status,
                Priority=str(rng.choice(("High", "Normal", "Low"), p=(0.25, 0.55, 0.2))),
                ActivityDate=_day(when + int(rng.integers(2, 15)) * _DAY),
                Description=text.task_description(rand, subject, d["row"]["Name"]),
                Type=types[int(rng.integers(len(types)))],
                TaskSubtype="Task",
                WhatId=self.opp_ids[k],
                WhoId=d["contact"],
                AccountId=d["account"],
                OwnerId=self.user_ids[d["owner"]],
                CreatedDate=_dt(when),
            )
            hidden.append((tid, self.opp_ids[k], _STAGES[stage], int(stale)))
        self.put_hidden("task", ("TaskId", "OpportunityId", "stage", "misplaced"), hidden)
        self.put_hidden(
            "stage_catalog",
            ("subject", "stage"),
            [(subject, _STAGES[s]) for s, subjects in enumerate(spec.stage_tasks) for subject in subjects],
        )
        self.put_hidden(
            "opportunity",
            ("OpportunityId", "true_stage", "recorded_stage", "won", "cycle_days"),
            [
                (
                    self.opp_ids[k],
                    _STAGES[d["true"]],
                    _STAGES[d["recorded"]],
                    int(d["won"]),
                    d["cycle"] if d["signed_day"] is not None else None,
                )
                for k, d in enumerate(self.deals)
            ],
        )

    def events(self) -> None:
        rng, rand = self.rng("events"), self.rand("events")
        spec = self.spec
        pool = [k for k, d in enumerate(self.deals) if d["true"] >= 1]
        n = min(self.n("Event"), len(pool))
        chosen = rng.choice(pool, size=n, replace=False).tolist() if n else []
        kinds = (
            (("Test drive", "Showroom"), ("Vehicle delivery", "Showroom"), ("Trade-in appraisal", "Service bay"))
            if spec.households
            else (("Product demo", "Video call"), ("Site visit", "Customer site"), ("Technical review", "Video call"))
        )
        events = []
        for k in chosen:
            d = self.deals[k]
            lo = d["entries"][1]
            hi = min(d["entries"][min(d["true"] + 1, _CLOSED)], _END_S - _DAY)
            day = _day_index(int(rng.integers(lo, max(hi, lo + 3600))))
            start = day * _DAY + 15 * 3600 + int(rng.integers(0, 6)) * 3600
            events.append((start, k))
        events.sort()
        for eid, (start, k) in zip(self.ids("00U", len(events)), events, strict=True):
            d = self.deals[k]
            subject, location = kinds[int(rng.integers(len(kinds)))]
            minutes = int(rng.choice((30, 60, 90)))
            self.tables["Event"].add(
                Id=eid,
                Subject=subject,
                StartDateTime=_dt(start),
                EndDateTime=_dt(start + minutes * 60),
                ActivityDate=_day(start),
                DurationInMinutes=minutes,
                IsAllDayEvent=0,
                Location=location,
                Description=f"{subject} for {d['row']['Name']}.",
                Type="Meeting",
                WhatId=self.opp_ids[k],
                WhoId=d["contact"],
                AccountId=d["account"],
                OwnerId=self.user_ids[d["owner"]],
                CreatedDate=_dt(start - int(rng.integers(1, 10)) * _DAY),
            )
        del rand

    def sales_emails(self) -> None:
        """Emails between representatives and customers about their opportunities (RelatedToId: the opportunity;
        no case), more the further a deal got; case emails come later with the cases."""
        rng, rand = self.rng("sales-emails"), self.rand("sales-emails")
        spec = self.spec
        contact_rows = self.tables["Contact"].rows
        per_stage = (1.5, 3.0, 4.5, 6.0, 7.0) if not spec.households else (0.5, 1.0, 1.5, 2.0, 2.5)
        mails = []
        for k, d in enumerate(self.deals):
            end = d["entries"][min(d["true"] + 1, _CLOSED)] if d["true"] < _CLOSED else d["signed_day"] * _DAY
            end = min(end, _END_S - 3600)
            contact = contact_rows[d["contact"]]
            rep, name = self.user_name[d["owner"]], f"{contact['FirstName']} {contact['LastName']}"
            for n in range(int(rng.poisson(per_stage[d["true"]]))):
                at = int(rng.integers(d["created"] + 600, max(end, d["created"] + 1200)))
                from_rep = n % 2 == 0 or rng.random() < 0.3
                subject, body = text.sales_email(rand, spec, rep, name, d["row"]["Name"], from_rep)
                rep_mail = self.user_email[d["owner"]]
                mails.append(
                    {"Subject": subject, "TextBody": body, "ParentId": None, "RelatedToId": self.opp_ids[k],
                     "FromAddress": rep_mail if from_rep else contact["Email"],
                     "ToAddress": contact["Email"] if from_rep else rep_mail,
                     "ToIds": json.dumps([d["contact"] if from_rep else self.user_ids[d["owner"]]]),
                     "MessageDate": _dt(at)}
                )  # fmt: skip
        self.sales_mail_rows = mails

    # -- service ---------------------------------------------------------------------------------

    def _even_experts(
        self, issue: int, assignments: list[tuple[int, int]], closed: Counter[int]
    ) -> list[tuple[int, int]]:
        """For a tie issue, a closed case that ends with one expert goes to the other when that one has closed fewer
        of the issue so far (unless the other already handled the case): the two close the issue alike, equally
        often when their total is even."""
        a, b = (int(e) for e in self.experts[issue])
        final, at = assignments[-1]
        if final in (a, b):
            other = b if final == a else a
            if closed[other] < closed[final] and all(owner != other for owner, _ in assignments):
                assignments = [*assignments[:-1], (other, at)]
                final = other
            closed[final] += 1
        return assignments

    def _case_waves(self, cases: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Problems with a product come in waves: a planted share of each product's cases (after its first) follow
        the product's previous case within days, so a product has months with clearly more cases than others
        (the monthly_trend_analysis category). Uses its own stream; returns the cases in time order again."""
        if not self.latent:
            return cases
        rng = self.rng("case-waves")
        items = self.order_items
        previous: dict[int, int] = {}
        out = []
        for when, item in cases:
            k, m = items[item]
            product = int(self.deals[k]["lines"][m][0])
            follow = rng.random() < CASE_WAVE_SHARE
            gap = int(rng.integers(_DAY // 2, 12 * _DAY))
            if follow and product in previous:
                moved = previous[product] + gap
                if self.deals[k]["order_day"] * _DAY < moved < min(when, _END_S - 3600):
                    when = moved  # only ever earlier, and never before its order
            previous[product] = max(previous.get(product, when), when)
            out.append((when, item))
        return sorted(out)

    def cases(self) -> None:
        rng, rand = self.rng("cases"), self.rand("cases")
        spec = self.spec
        items = self.order_items
        if not items:
            self.first_case = self.last_case = _dt(_START_S)
            self._write_mails([])
            self.put_hidden(
                "case_remedy", ("CaseId", "ArticleId", "remedy", "allowed", "channel", "RecordId", "requested"), []
            )
            self.put_hidden("product_season", ("Product2Id", "peak_month"), [])
            return
        n = self.n("Case")
        popularity = np.array(
            [1.0 + (self.spec.products[int(self.deals[k]["lines"][m][0])].family != "Financing") for k, m in items]
        )
        picks = rng.choice(len(items), size=n, p=popularity / popularity.sum())
        # Per product a peak calendar month (monthly_trend_analysis): a share of its cases is filed in the nearest
        # occurrence of that month instead (own stream, so the cases' other draws stay as they were).
        srng = self.rng("case-seasons")
        peak = srng.integers(1, 13, size=len(spec.products))
        cases = []
        for item in picks.tolist():
            k, m = items[item]
            d = self.deals[k]
            start = d["order_day"] * _DAY
            if start + _DAY >= _END_S:
                continue
            when = min(start + int(rng.exponential(120)) * _DAY + _business_second(rng), _END_S - 3600)
            if when <= start:
                when = start + _business_second(rng)
            filed = when
            if srng.random() < self.knobs.case_peak_share and self.latent:
                filed = _in_month(when, int(peak[int(d["lines"][m][0])]), start, _END_S - 3600) or when
            cases.append((when, item, filed))
        self.put_hidden(
            "product_season",
            ("Product2Id", "peak_month"),
            [(self.product_ids[i], int(peak[i])) for i in range(len(spec.products))]
            if self.latent and self.knobs.case_peak_share > 0
            else [],
        )
        # Seasons move a case to the month it is filed in, then waves pull a product's cases together; the cases'
        # draws below run in the order of those dates, and their ids follow them.
        cases = self._case_waves(sorted((filed, item) for _natural, item, filed in cases))
        # Issues whose two experts are planted as even rivals (case_routing's tie rules decide there).
        tie_closed: dict[int, Counter[int]] = {int(i): Counter() for i in self.tie_issues}
        ids = self.ids("500", len(cases))
        n_a = len(self.agents)
        agent_ids = [self.user_ids[int(a)] for a in self.agents]
        histories: list[tuple[str, str | None, str | None, int, str]] = []
        mails: list[dict[str, Any]] = []
        chats: list[dict[str, Any]] = []
        chat_share = self.n("LiveChatTranscript") / max(len(cases), 1)
        # The remedy each case's agent offers (own streams: the cases' draws stay as they were).
        rrng, rrand = self.rng("remedies"), self.rand("remedies")
        remedies = text.REMEDIES[spec.kind]
        n_violations = round(self.knobs.remedy_violation_rate * len(cases)) if self.latent else 0
        violating = set(rrng.choice(len(cases), size=n_violations, replace=False).tolist())
        # (case, article, remedy offered, allowed, channel, remedy the customer asked for)
        self.case_remedies: list[tuple[str, str, str, int, str, str | None]] = []
        for ci, (cid, (when, item)) in enumerate(zip(ids, cases, strict=True)):
            k, m = items[item]
            d = self.deals[k]
            product = int(d["lines"][m][0])
            issue = int(rng.choice(len(spec.issues), p=self.product_issue[product]))
            w = self.skill[:, issue] + self.skill_base[:, issue] * (BASE_CASE_SHARE * self.case_volume - 1.0)
            owner = int(rng.choice(n_a, p=w / w.sum()))
            assignments = [(owner, when)]
            state = self.acc_state[d["account"]]
            hours = (
                20.0
                * float(self.speed[owner])
                * float(self.state_speed[state])
                * math.exp(0.4 * float(rng.standard_normal()))
            )
            close = when + int(max(0.5, min(hours, 40 * 24)) * 3600)
            if rng.random() < float(self.transfer[owner]):
                w2 = w.copy()
                w2[owner] = 0
                new = int(rng.choice(n_a, p=w2 / w2.sum()))
                at = when + int((close - when) * (0.2 + 0.5 * rng.random()))
                if at < _END_S - 3600:  # a transfer the org has seen happen
                    assignments.append((new, at))
                    close += int(0.3 * (close - when))
            closed = close < _END_S
            if closed and issue in tie_closed:
                assignments = self._even_experts(issue, assignments, tie_closed[issue])
            final = assignments[-1][0]
            subject, description = text.case_text(rand, spec, issue, spec.products[product].name)
            contact = d["contact"]
            self.tables["Case"].add(
                Id=cid,
                Priority=str(rng.choice(("Low", "Medium", "High", "Critical"), p=(0.25, 0.45, 0.25, 0.05))),
                Subject=subject,
                Description=description,
                Status="Closed" if closed else str(rng.choice(("New", "Working", "Escalated", "Waiting on Customer"))),
                Channel=str(rng.choice(("Email", "Phone", "Web", "Chat"))),
                ContactId=contact,
                CreatedDate=_dt(when),
                ClosedDate=_dt(close) if closed else None,
                OrderItemId__c=self.order_item_ids[item],
                IssueId__c=self.issue_ids[issue],
                AccountId=d["account"],
                OwnerId=agent_ids[final],
            )
            histories.append((cid, None, None, when, "Case Creation"))
            previous = None
            for agent, at in assignments:
                histories.append(
                    (
                        cid,
                        agent_ids[previous] if previous is not None else None,
                        agent_ids[agent],
                        at,
                        "Owner Assignment",
                    )
                )
                previous = agent
            if closed:
                histories.append((cid, None, None, close, "Case Closed"))
            last_assigned = assignments[-1][1]
            customer = self.contact_name[contact]
            email = self.tables["Contact"].rows[contact]["Email"]
            span_end = close if closed else min(last_assigned + 5 * _DAY, _END_S - 60)
            first_mail = len(mails)  # the customer's opening email
            for n_mail in range(int(rng.integers(1, 4))):
                at = min(last_assigned + int((span_end - last_assigned) * (n_mail + 1) / 5), _END_S - 60)
                from_agent = n_mail % 2 == 1
                mails.append(
                    {
                        "Subject": f"Re: {subject}" if n_mail else subject,
                        "TextBody": text.case_email(
                            rand, spec, from_agent, spec.products[product].name, issue, customer.split()[0]
                        ),
                        "ParentId": cid,
                        "RelatedToId": cid,
                        "FromAddress": self.user_email[int(self.agents[final])] if from_agent else email,
                        "ToAddress": email if from_agent else self.user_email[int(self.agents[final])],
                        "ToIds": json.dumps([contact if from_agent else agent_ids[final]]),
                        "MessageDate": _dt(at),
                    }
                )
            has_chat = rng.random() < chat_share
            agent_name = self.user_name[int(self.agents[final])]
            remedy, in_chat = None, False
            if self.latent:
                allowed = self.allowed_remedies[issue]
                pool = [r for r in remedies if (r in allowed) != (ci in violating)]
                remedy = pool[int(rrng.integers(len(pool)))]
                in_chat = has_chat and rrng.random() < 0.5
                channel = "LiveChatTranscript" if in_chat else "EmailMessage"
                # Some customers ask for a remedy of their own: only what the agent offers counts.
                requested = None
                if rrng.random() < CUSTOMER_REQUEST_SHARE:
                    requested = remedies[int(rrng.integers(len(remedies)))]
                    mails[first_mail]["TextBody"] += " " + text.remedy_request(rrand, requested)
                self.case_remedies.append(
                    (cid, self.issue_article[issue], remedy, int(remedy in allowed), channel, requested)
                )
                if not in_chat:
                    at = min(last_assigned + int((span_end - last_assigned) * 0.45) + 7, _END_S - 60)
                    agent_mail = self.user_email[int(self.agents[final])]
                    mails.append(
                        {
                            "Subject": f"Re: {subject}",
                            "TextBody": text.remedy_email(
                                rrand, spec, customer.split()[0], agent_name, spec.products[product].name, issue,
                                remedy,
                            ),
                            "ParentId": cid,
                            "RelatedToId": cid,
                            "FromAddress": agent_mail,
                            "ToAddress": email,
                            "ToIds": json.dumps([contact]),
                            "MessageDate": _dt(at),
                            "_remedy_case": cid,
                        }
                    )  # fmt: skip
            if has_chat:
                at = last_assigned + 120
                lines = text.chat_lines(rand, spec, agent_name, customer, spec.products[product].name, issue)
                if in_chat:
                    lines.insert(len(lines) - 1, (agent_name, text.remedy_chat_line(rrand, str(remedy))))
                body = "\n".join(f"[{_dt(at + 40 * i)[:19]}] {who}: {line}" for i, (who, line) in enumerate(lines))
                chats.append(
                    {
                        "CaseId": cid,
                        "AccountId": d["account"],
                        "OwnerId": agent_ids[final],
                        "Body": body,
                        "EndTime": _dt(at + 40 * len(lines)),
                        "LiveChatVisitorId": f"visitor-{len(chats) + 1:06d}",
                        "ContactId": contact,
                        "_remedy_case": cid if in_chat else None,
                    }
                )
        for hid, (cid, old, new, at, field_name) in zip(self.ids("a04", len(histories)), histories, strict=True):
            self.tables["CaseHistory__c"].add(
                Id=hid, CaseId__c=cid, OldValue__c=old, NewValue__c=new, CreatedDate=_dt(at), Field__c=field_name
            )
        self._write_mails(mails)
        for tid, row in zip(self.ids("570", len(chats)), chats, strict=True):
            self.tables["LiveChatTranscript"].add(Id=tid, **row)
        created = [c[0] for c in cases]
        self.first_case, self.last_case = _dt(min(created)), _dt(max(created))
        record = {
            row["_remedy_case"]: row["Id"]
            for table in ("EmailMessage", "LiveChatTranscript")
            for row in self.tables[table].rows
            if row.get("_remedy_case")
        }
        self.put_hidden(
            "case_remedy",
            ("CaseId", "ArticleId", "remedy", "allowed", "channel", "RecordId", "requested"),
            [(c, a, r, ok, ch, record[c], asked) for c, a, r, ok, ch, asked in self.case_remedies],
        )

    def purchases(self) -> None:
        """Look-alike purchases (named_entity_disambiguation): per planted cluster, an account buys two or three
        products of one family on one day and one or two others of that family a few days away, so that a
        product asked for by what it does on a given day is decided by its description, not the day alone."""
        rows: list[tuple[int, str, int, str, str]] = []  # (cluster, OrderId, account, EffectiveDate, Product2Id)
        self.purchase_rows = rows
        if not self.latent:
            return
        rng = self.rng("purchases")
        spec = self.spec
        by_family: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(spec.products):
            if not (spec.households and p.family in ("Vehicle", "Financing")):  # a household buys one car at a time
                by_family[p.family].append(i)
        families = sorted(f for f, members in by_family.items() if len(members) >= 4)
        last = _day_index(_END_S) - 45
        eligible = [a for a, created in enumerate(self.acc_created) if _day_index(created) + 30 < last]
        n_clusters = min(self.n("PurchaseCluster"), len(eligible))
        accounts = rng.choice(eligible, size=n_clusters, replace=False).tolist()
        n_orders, n_items = len(self.tables["Order"]), len(self.tables["OrderItem"])
        order_ids = self.ids("801", 2 * n_clusters, start=n_orders)
        item_ids = self.ids("802", 5 * n_clusters, start=n_items)
        k_item = 0
        for c, acc in enumerate(accounts):
            family = families[int(rng.integers(len(families)))]
            members = rng.permutation(by_family[family]).tolist()
            n_a = 2 + int(rng.random() < 0.5)
            n_b = 1 + int(rng.random() < 0.5)
            first = max(_day_index(self.acc_created[acc]) + 1, _day_index(_START_S) + 7)
            day = int(rng.integers(first, last))
            shift = int(rng.choice((-6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6)))
            for o, (when, products) in enumerate(((day, members[:n_a]), (day + shift, members[n_a : n_a + n_b]))):
                oid = order_ids[2 * c + o]
                self.tables["Order"].add(
                    Id=oid,
                    AccountId=acc,
                    Status="Activated",
                    EffectiveDate=_day(when * _DAY),
                    Pricebook2Id=self.pricebook_id,
                    OwnerId=self.user_ids[self.acc_owner[acc]],
                )
                for i in products:
                    price = spec.products[i].price
                    self.tables["OrderItem"].add(
                        Id=item_ids[k_item],
                        OrderId=oid,
                        Product2Id=self.product_ids[i],
                        Quantity=float(1 + int(rng.integers(min(3, spec.products[i].max_qty)))),
                        UnitPrice=price,
                        PriceBookEntryId=self.entry_ids[i],
                    )
                    k_item += 1
                    rows.append((c, oid, acc, _day(when * _DAY), self.product_ids[i]))

    def private_facts(self) -> None:
        """The values a careless customer-facing agent could leak about a customer (private_customer_information):
        each contact's name, phone, email, state, and the products and order of the account's latest order."""
        rows: list[tuple[str, str, str]] = []
        if self.latent:
            latest: dict[str, tuple[str, str]] = {}
            for o in self.tables["Order"].rows:
                if o["Status"] == "Activated" and (o["EffectiveDate"], o["Id"]) > latest.get(o["AccountId"], ("", "")):
                    latest[o["AccountId"]] = (o["EffectiveDate"], o["Id"])
            names = {self.product_ids[i]: p.name for i, p in enumerate(self.spec.products)}
            items: dict[str, list[str]] = defaultdict(list)
            for it in self.tables["OrderItem"].rows:
                items[it["OrderId"]].append(names[it["Product2Id"]])
            for c in self.tables["Contact"].rows:
                rows += [
                    (c["Id"], "name", f"{c['FirstName']} {c['LastName']}"),
                    (c["Id"], "phone", c["Phone"]),
                    (c["Id"], "email", c["Email"]),
                    (c["Id"], "state", c["MailingState"]),
                ]
                if c["AccountId"] in latest:
                    order = latest[c["AccountId"]][1]
                    rows.append((c["Id"], "order", order))
                    rows += [(c["Id"], "product", name) for name in sorted(set(items[order]))]
        self.put_hidden("private", ("ContactId", "field", "value"), rows)

    def _write_mails(self, case_mails: list[dict[str, Any]]) -> None:
        """Every email, the cases' and the sales ones, in the order they were sent."""
        mails = case_mails + self.sales_mail_rows
        mails.sort(key=lambda r: (r["MessageDate"], r["RelatedToId"]))
        for mid, row in zip(self.ids("02s", len(mails)), mails, strict=True):
            self.tables["EmailMessage"].add(Id=mid, **row)

    # -- knowledge -------------------------------------------------------------------------------

    def articles(self) -> None:
        spec = self.spec
        rand = self.rand("articles")
        rng = self.rng("articles")
        # (kind, title, summary, body, internal, subject, facts); the first four groups keep their order (and ids)
        # across versions: rules, product overviews, issue resolutions, setup times.
        entries: list[tuple[str, str, str, str, int, str, list[text.Fact]]] = []
        for key, category in text.RULE_KEYS:
            title, summary, body = text.rule_article(spec, key)
            entries.append((f"{category}_rule", title, summary, body, 1, key, text.rule_facts(spec, key)))
        bank = self.latent  # the article bank beyond the rules, the overviews and the issues is latent structure
        product_sets = [text.product_articles(rand, spec, i) for i in range(len(spec.products))] if bank else []
        for i in range(len(spec.products)):
            if bank:
                title, summary, body, facts = product_sets[i][0]
            else:
                (title, summary, body), facts = text.product_article(spec, i), []
            entries.append(("product", title, summary, body, 0, self.product_ids[i], facts))
        # Remedies each issue's article allows: three of the kind's vocabulary, every remedy allowed somewhere.
        remedies = text.REMEDIES[spec.kind]
        first = rng.permutation(len(remedies)).tolist()
        self.allowed_remedies: list[list[str]] = []
        for i in range(len(spec.issues)):
            others = [r for r in range(len(remedies)) if r != first[i % len(remedies)]]
            chosen = sorted([first[i % len(remedies)], *rng.choice(others, size=2, replace=False).tolist()])
            self.allowed_remedies.append([remedies[r] for r in chosen])
        for i in range(len(spec.issues)):
            if bank:
                title, summary, body, facts = text.issue_resolution_article(rand, spec, i, self.allowed_remedies[i])
            else:
                (title, summary, body), facts = text.issue_article(spec, i), []
            entries.append(("issue", title, summary, body, 0, self.issue_ids[i], facts))
        title, summary, body = text.setup_article(spec)
        entries.append(("setup_times", title, summary, body, 1, "setup_times", text.setup_facts(spec)))
        if bank:
            for i, articles in enumerate(product_sets):
                for facet, (title, summary, body, facts) in zip(
                    ("product_specs", "product_support"), articles[1:], strict=True
                ):
                    entries.append((facet, title, summary, body, 0, self.product_ids[i], facts))
            for key, title, summary, body, facts in text.policy_articles(rand, spec):
                entries.append(("policy", title, summary, body, 0, key, facts))
            for competitor in spec.competitors:
                title, summary, body, facts = text.competitor_article(rand, spec, competitor)
                entries.append(("competitor", title, summary, body, 1, competitor, facts))
        ids = self.ids("ka0", len(entries))
        hidden = []
        fact_rows: list[tuple[str, str, str, str, str]] = []
        self.rule_article: dict[str, str] = {}
        self.issue_article: list[str] = []
        for aid, (kind, title, summary, body, internal, subject, facts) in zip(ids, entries, strict=True):
            self.tables["Knowledge__kav"].add(
                Id=aid,
                Title=title,
                FAQ_Answer__c=body,
                Summary=summary,
                UrlName=_slug(title),
                PublishStatus="Online",
                Language="en_US",
                IsVisibleInPkb=int(not internal),
            )
            hidden.append((aid, kind, internal, subject))
            if kind.endswith("_rule") or kind == "setup_times":
                self.rule_article[subject] = aid
            if kind == "issue":
                self.issue_article.append(aid)
            if not bank:
                continue
            about = {"product": title[len("About ") :], "issue": title[len("Resolving: ") :]}.get(kind, title)
            if kind in ("product_specs", "product_support"):
                about = title.split(": ")[0]
            elif kind == "competitor":
                about = subject
            for slot, label, answer in facts:
                if answer not in body:  # a fact is a span of its article, never a paraphrase
                    raise AssertionError(f"article {title!r} does not state {answer!r}")
                subject_of = label if kind.endswith("_rule") or kind == "setup_times" else about
                fact_rows.append((aid, slot, subject_of, label, answer))
        self.put_hidden("article_fact", ("ArticleId", "slot", "subject", "label", "answer"), fact_rows)
        remedy_rows = [
            (self.issue_article[i], self.issue_ids[i], remedy)
            for i in range(len(spec.issues))
            for remedy in (self.allowed_remedies[i] if bank else ())
        ]
        self.put_hidden("remedy", ("ArticleId", "IssueId", "remedy"), remedy_rows)
        self.put_hidden("article", ("ArticleId", "kind", "internal", "subject"), hidden)
        rules = spec.rules
        rule_rows = [
            (
                self.rule_article["discount_tiers"],
                "discount_tiers",
                "approval",
                json.dumps(
                    {
                        "quantity_tiers": rules.quantity_tiers,
                        "family_caps": dict(rules.family_caps),
                        "offer_bonus": rules.offer_bonus,
                    }
                ),
            ),
            (
                self.rule_article["discount_limit"],
                "discount_limit",
                "approval",
                json.dumps({"limit": rules.discount_limit}),
            ),
            (
                self.rule_article["no_discount"],
                "no_discount",
                "approval",
                json.dumps({"families": rules.no_discount_families}),
            ),
            (
                self.rule_article["quantity_limits"],
                "quantity_limits",
                "config",
                json.dumps({self.product_ids[i]: n for i, n in rules.quantity_limits.items()}),
            ),
            (
                self.rule_article["exclusions"],
                "exclusions",
                "config",
                json.dumps([[self.product_ids[a], self.product_ids[b]] for a, b in rules.exclusions]),
            ),
            (
                self.rule_article["bundles"],
                "bundles",
                "config",
                json.dumps({self.product_ids[p]: [self.product_ids[c] for c in cs] for p, cs in rules.bundles.items()}),
            ),
        ]
        self.put_hidden("rule", ("ArticleId", "rule", "category", "parameters"), rule_rows)

    # -- hidden agent table and writing ----------------------------------------------------------

    def agent_table(self) -> None:
        rows = []
        for u in range(len(self.user_ids)):
            if u in self.rep_pos:
                r = self.rep_pos[u]
                territories = [self.primary[u], *self.extra.get(u, [])]
                rows.append(
                    (
                        self.user_ids[u],
                        "sales",
                        ",".join(self.territory_ids[t] for t in territories),
                        float(self.cycle[r]),
                        float(self.deal_size[r]),
                        float(self.win[r]),
                        float(self.conversion[r]),
                        float(self.lead_volume[r]),
                        float(self.opp_volume[r]),
                        float(self.acceptance[r]),
                        None,
                        None,
                        None,
                    )
                )
            else:
                a = self.agent_pos[u]
                rows.append(
                    (
                        self.user_ids[u],
                        "service",
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        float(self.speed[a]),
                        float(self.transfer[a]),
                        float(self.case_volume[a]),
                    )
                )
        self.put_hidden(
            "agent",
            (
                "UserId",
                "role",
                "territory_ids",
                "cycle_days",
                "deal_size",
                "win_rate",
                "lead_conversion",
                "lead_volume",
                "opportunity_volume",
                "acceptance",
                "speed",
                "transfer_rate",
                "case_volume",
            ),
            rows,
        )

    def resolve(self) -> None:
        """Turn the in-memory indexes of accounts and contacts into their ids."""
        account_ids = self.ids("001", len(self.tables["Account"]))
        contact_ids = self.ids("003", len(self.tables["Contact"]))
        for acc, row in zip(account_ids, self.tables["Account"].rows, strict=True):
            row["Id"] = acc
        for con, row in zip(contact_ids, self.tables["Contact"].rows, strict=True):
            row["Id"] = con
            row["AccountId"] = account_ids[row["AccountId"]]
        refs = {
            "Lead": (("ConvertedAccountId", account_ids), ("ConvertedContactId", contact_ids)),
            "Opportunity": (("AccountId", account_ids), ("ContactId", contact_ids)),
            "Contract": (("AccountId", account_ids), ("CustomerSignedId", contact_ids)),
            "Order": (("AccountId", account_ids),),
            "Quote": (("AccountId", account_ids), ("ContactId", contact_ids)),
            "Case": (("AccountId", account_ids), ("ContactId", contact_ids)),
            "LiveChatTranscript": (("AccountId", account_ids), ("ContactId", contact_ids)),
            "Task": (("AccountId", account_ids), ("WhoId", contact_ids)),
            "Event": (("AccountId", account_ids), ("WhoId", contact_ids)),
        }
        for table, fields in refs.items():
            for row in self.tables[table].rows:
                for name, ids in fields:
                    if isinstance(row.get(name), int):
                        row[name] = ids[row[name]]
        for row in self.tables["EmailMessage"].rows:
            ids = json.loads(row["ToIds"])
            row["ToIds"] = json.dumps([contact_ids[v] if isinstance(v, int) else v for v in ids])

    def write(self) -> dict[str, int]:
        for obj in self.schema.objects:
            rows = self.tables[obj.name].rows
            columns = [f.column_name for f in obj.stored_fields]
            keys: set[str] = set()
            for row in rows:
                keys.update(row)
            unknown = sorted(c for c in keys - set(columns) if not c.startswith("_"))
            if unknown:
                raise AssertionError(f"{obj.name}: generator fields {unknown} are not columns")
            self.writer.insert(obj.name, columns, ([row.get(c) for c in columns] for row in rows))
        conn: sqlite3.Connection = self.writer.conn
        counts = {}
        for name, (columns, rows) in sorted(self.hidden.items()):
            conn.execute(f"CREATE TABLE {quote_identifier(name)} ({', '.join(quote_identifier(c) for c in columns)})")
            marks = ", ".join("?" for _ in columns)
            conn.executemany(f"INSERT INTO {quote_identifier(name)} VALUES ({marks})", rows)
            counts[name] = len(rows)
        return counts

    def run(self) -> ProBuild:
        steps: Sequence[tuple[str, Callable[[], None]]] = (
            ("users", self.users),
            ("territories", self.territories),
            ("catalog", self.catalog),
            ("latent", self.draw_latent),
            ("knowledge", self.articles),
            ("accounts", self.accounts),
            ("leads", self.leads),
            ("lead calls", self.lead_calls),
            ("opportunities", self.opportunities),
            ("opportunity calls", self.opportunity_calls),
            ("quotes", self.quotes),
            ("contracts", self.contracts),
            ("line items", self.line_items),
            ("tasks", self.tasks),
            ("events", self.events),
            ("sales emails", self.sales_emails),
            ("cases", self.cases),
            ("purchases", self.purchases),
        )
        for k, (name, step) in enumerate(steps):
            self.progress(name, 0.85 * k / len(steps))
            step()
        self.agent_table()
        self.resolve()
        account_ids = [r["Id"] for r in self.tables["Account"].rows]
        self.put_hidden(
            "purchase",
            ("cluster", "OrderId", "AccountId", "EffectiveDate", "Product2Id"),
            [(c, o, account_ids[a], d, p) for c, o, a, d, p in self.purchase_rows],
        )
        self.private_facts()
        self.progress("writing", 0.85)
        counts = self.write()
        return ProBuild(self.lat, counts, self.spec.company, self.first_case, self.last_case)


_SMALL_BUSINESSES = ("Landscaping", "Plumbing", "Bakery", "Consulting", "Realty", "Electric", "Catering", "Dental")
_STREETS = (
    "Innovation Way",
    "Market Street",
    "Oak Avenue",
    "Harbor Drive",
    "Technology Parkway",
    "Main Street",
    "Maple Lane",
    "Commerce Boulevard",
    "Lakeview Road",
    "Cedar Court",
)


def build_pro(
    kind: str,
    *,
    seed: int,
    scale: float,
    latent: bool,
    writer: Any,
    progress: Callable[[str, float], None] | None,
    knobs: ProKnobs,
) -> ProBuild:
    """Fill ``writer``'s connection with a ``kind`` org (its object tables and hidden tables)."""
    return _ProOrg(SPECS[kind], seed, scale, latent, writer, progress, knobs).run()
