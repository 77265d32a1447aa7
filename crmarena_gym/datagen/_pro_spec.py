"""What a Pro org kind is made of: its company, catalog, rules, issues, activity catalog and sizes.

One :class:`KindSpec` per kind (``crmarena_gym.datagen._b2b``, ``crmarena_gym.datagen._b2c``); the Pro
generator (``crmarena_gym.datagen._pro``) is the same code for both. All names, descriptions and rule
wordings are ours. Order matters (the generator indexes into these tuples with seeded draws): append, and
bump the kind's generator version when changing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crmarena_gym.schema import OPPORTUNITY_STAGES

#: The ten sales territories: a name and the two-letter states it covers (every state of
#: ``crmarena_gym.datagen._names.STATES`` exactly once).
TERRITORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Pacific", ("CA", "OR", "WA", "HI")),
    ("Mountain", ("CO", "UT", "ID", "MT")),
    ("Southwest", ("AZ", "NM", "NV", "OK")),
    ("Central Plains", ("TX", "LA", "KS", "NE")),
    ("Great Lakes", ("MI", "OH", "IN", "IL")),
    ("Upper Midwest", ("WI", "MN", "IA", "MO")),
    ("Southeast", ("FL", "GA", "SC", "AL")),
    ("Mid-South", ("TN", "KY", "NC", "VA")),
    ("Mid-Atlantic", ("NY", "NJ", "PA", "MD")),
    ("New England", ("MA", "CT", "ME", "VT")),
)


@dataclass(frozen=True)
class ProductSpec:
    """One product of a kind's catalog.

    Attributes:
        name: The product's name.
        family: Its family (a value of the Product2.Family picklist).
        category: Index into :attr:`KindSpec.categories` of its main catalog category.
        price: List price of one unit, in whole dollars (so every total is exact).
        description: What the product is and does, in words a customer would use.
        max_qty: The most units one line usually carries (a draw's cap, not a rule).
    """

    name: str
    family: str
    category: int
    price: float
    description: str
    max_qty: int = 1


@dataclass(frozen=True)
class Rules:
    """A kind's quoting and configuration rules, stated in its knowledge articles.

    Approval rules (quote_approval): a line's discount may not exceed :meth:`allowed_discount` (an approved
    competing offer raises the cap by :attr:`offer_bonus` points); a quote's discounts may not add up to more
    than :attr:`discount_limit` dollars; lines of :attr:`no_discount_families` take no discount.
    Configuration rules (invalid_config): a line's quantity may not exceed the product's limit
    (:attr:`quantity_limits`); the two products of an excluded pair may not be on one quote
    (:attr:`exclusions`); a primary product needs all of its companions (:attr:`bundles`).
    Products are named by their index in the kind's catalog.
    """

    quantity_tiers: tuple[tuple[int, float], ...]  # (minimum quantity, allowed percent), highest first
    family_caps: Mapping[str, float]  # allowed percent by family (used when there are no quantity tiers)
    offer_bonus: float
    discount_limit: float
    no_discount_families: tuple[str, ...]
    quantity_limits: Mapping[int, int]
    exclusions: tuple[tuple[int, int], ...]
    bundles: Mapping[int, tuple[int, ...]]

    def allowed_discount(self, family: str, quantity: float, offer: bool) -> float:
        """The largest discount (percent) a line may carry."""
        if family in self.no_discount_families:
            return 0.0
        if self.quantity_tiers:
            base = next((pct for low, pct in self.quantity_tiers if quantity >= low), 0.0)
        else:
            base = self.family_caps.get(family, 0.0)
        return base + (self.offer_bonus if offer else 0.0)


@dataclass(frozen=True)
class KindSpec:
    """Everything kind-specific the Pro generator reads.

    Attributes:
        kind: ``b2b`` or ``b2c``.
        company: Our company's name, as articles and calls spell it.
        domain: Our email domain.
        counts: Rows per object at scale 1 (the B2B ones are PRO.md's figures); objects marked ``fixed``
            in :attr:`fixed` do not grow with scale.
        fixed: Objects whose count does not follow the scale (staff, catalog, territories, articles).
        n_sales: Sales representatives among the users (the rest are service agents).
        n_extra_memberships: Territory memberships beyond each representative's primary one (representatives
            who also cover other territories); with :attr:`n_sales`, the UserTerritory2Association rows.
        households: Whether an account is a household (one contact) rather than a firm.
        contacts_per_account: Mean contacts per account besides those converted leads bring (firms).
        lead_company_share: Share of unconverted leads that name a company.
        products: The catalog.
        categories: Catalog category names.
        lines_per_opportunity: (low, high) product lines of an opportunity (inclusive).
        rules: The quoting and configuration rules.
        issues: (name, description) of each case issue.
        stage_tasks: Per opportunity stage (in :data:`OPPORTUNITY_STAGES` order), the task subjects that
            belong to it (each subject to exactly one stage).
        titles: Job titles of contacts and leads.
        account_words: Two word lists whose pairs name firms (b2b) or are unused (b2c).
        competitors: Competitor names for calls and competitor articles.
        setup_days: Days from order to a working installation (b2b) or a delivered vehicle (b2c), by family.
        setup_bands: (minimum quantity, extra days) of larger orders, highest first (b2b).
        model_days: Days by product index, overriding its family's (b2c: each model's delivery time).
        bant_families: The families a lead's calls ask about.
        subtopics: The ten discussion subtopics of sales calls (sales_insight_mining's vocabulary).
    """

    kind: str
    company: str
    domain: str
    counts: Mapping[str, int]
    fixed: frozenset[str]
    n_sales: int
    n_extra_memberships: int
    households: bool
    contacts_per_account: float
    lead_company_share: float
    products: tuple[ProductSpec, ...]
    categories: tuple[str, ...]
    lines_per_opportunity: tuple[int, int]
    rules: Rules
    issues: tuple[tuple[str, str], ...]
    stage_tasks: tuple[tuple[str, ...], ...]
    titles: tuple[str, ...]
    account_words: tuple[tuple[str, ...], tuple[str, ...]]
    competitors: tuple[str, ...]
    setup_days: Mapping[str, int]
    setup_bands: tuple[tuple[int, int], ...]
    model_days: Mapping[int, int]
    bant_families: tuple[str, ...]
    subtopics: tuple[str, ...]

    def days_to_set_up(self, product: int, quantity: float) -> int:
        """Days from order to a working installation of ``quantity`` units of ``product`` (the setup article)."""
        base = self.model_days.get(product, self.setup_days[self.products[product].family])
        return base + next((extra for low, extra in self.setup_bands if quantity >= low), 0)

    def __post_init__(self) -> None:
        if len(self.stage_tasks) != len(OPPORTUNITY_STAGES):
            raise ValueError(f"{self.kind}: one task list per stage")
        subjects = [s for stage in self.stage_tasks for s in stage]
        if len(subjects) != len(set(subjects)):
            raise ValueError(f"{self.kind}: a task subject belongs to one stage only")
        n = len(self.products)
        used = [*self.rules.quantity_limits, *(i for pair in self.rules.exclusions for i in pair)]
        used += [*self.rules.bundles, *(i for c in self.rules.bundles.values() for i in c)]
        if any(not 0 <= i < n for i in used):
            raise ValueError(f"{self.kind}: a rule names a product outside the catalog")


#: The staff and territories of both Pro orgs, which do not grow with the scale: 212 users (80 of them sales
#: representatives), ten territories, and each representative's primary membership plus 104 more.
STAFF_COUNTS: Mapping[str, int] = {"User": 212, "Territory2": 10, "UserTerritory2Association": 184}
# What each kind's module defines under these names and the spec takes as they are.
_PARTS = {
    "products": "PRODUCTS",
    "categories": "CATEGORIES",
    "rules": "RULES",
    "issues": "ISSUES",
    "stage_tasks": "STAGE_TASKS",
    "titles": "TITLES",
    "competitors": "COMPETITORS",
}


def kind_spec(kind: str, parts: Mapping[str, Any], *, counts: Mapping[str, int], **own: Any) -> KindSpec:
    """The :class:`KindSpec` of ``kind``: the staff both kinds share (:data:`STAFF_COUNTS`), the catalog parts
    its module defines (``parts``: the module's names PRODUCTS, CATEGORIES, RULES, ISSUES, STAGE_TASKS,
    TITLES, COMPETITORS) and what is its own (``counts`` of the scaled objects and every other field).

    Raises:
        ValueError: ``parts`` lacks one of the names.
    """
    missing = [name for name in _PARTS.values() if name not in parts]
    if missing:
        raise ValueError(f"{kind}: the kind's module defines no {', '.join(missing)}")
    return KindSpec(
        kind=kind,
        counts={**counts, **STAFF_COUNTS},
        fixed=frozenset(STAFF_COUNTS),
        n_sales=80,
        n_extra_memberships=104,
        **{field: parts[name] for field, name in _PARTS.items()},
        **own,
    )
