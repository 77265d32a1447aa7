"""What the sales-side Pro categories share: the stage guide they show and read, the rule articles read as text.

Used by the draws (which write the guide from the org's closed activity catalog) and the solvers (which read it
back from the instance's context, as an agent would); never by a category's ``gold_sql``, which stays plain SQL.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from crmarena_gym.schema import OPPORTUNITY_STAGES
from crmarena_gym.tasks._oracle import OracleError

if TYPE_CHECKING:
    from crmarena_gym.tasks.pro._category import ProFacts

#: The five stages, least advanced first.
STAGES: tuple[str, ...] = OPPORTUNITY_STAGES
_GUIDE_HEAD = "- Stage guide (the activities that belong to each stage of an opportunity):"
_GUIDE_LINE = re.compile(r"^\s*- (Qualification|Discovery|Quote|Negotiation|Closed) stage: (.+)$")


def stage_catalog(facts: ProFacts) -> dict[str, list[str]]:
    """The org's activity catalog, stage -> its task subjects (the oracle table the generator keeps)."""

    def build() -> dict[str, list[str]]:
        rows = facts.conn.execute("SELECT subject, stage FROM crmarena_hidden_stage_catalog ORDER BY rowid").fetchall()
        catalog: dict[str, list[str]] = {stage: [] for stage in STAGES}
        for subject, stage in rows:
            catalog[stage].append(subject)
        return catalog

    return facts.once("sales.stage_catalog", build)


def stage_guide(facts: ProFacts) -> str:
    """The stage guide as context lines: one line per stage listing its activities (separated by `` | ``)."""
    catalog = stage_catalog(facts)
    lines = [_GUIDE_HEAD]
    for stage in STAGES:
        lines.append(f"  - {stage} stage: {' | '.join(catalog[stage])}")
    return "\n".join(lines)


def read_stage_guide(required: str) -> dict[str, str]:
    """The guide an instance's context shows, read back: task subject -> stage.

    Raises:
        OracleError: The context has no stage guide, or the guide names one activity under two stages.
    """
    guide: dict[str, str] = {}
    for line in required.splitlines():
        match = _GUIDE_LINE.match(line)
        if match is None:
            continue
        for subject in match.group(2).split(" | "):
            if guide.setdefault(subject.strip(), match.group(1)) != match.group(1):
                raise OracleError(f"the stage guide lists {subject!r} under two stages")
    if not guide:
        raise OracleError("the instance's context has no stage guide")
    return guide


def records(result: Any) -> list[dict[str, Any]]:
    """A SOQL tool result as a list of records (the tool answers a list; anything else is a defect)."""
    if not isinstance(result, list):
        raise OracleError(f"a query answered {str(result)[:200]!r}, not a list of records")
    return result


# -- the rule articles, read as an agent reads them ----------------------------------------------------------------

_NUM = r"(\d+(?:\.\d+)?)"
# Each rule article by a sentence only it says (other internal articles may mention discounts or limits).
_RULE_PATTERNS: dict[str, re.Pattern[str]] = {
    "discount_tiers": re.compile(r"\bdiscounts at .+? are (?:set|capped) per quote line", re.I),
    "discount_limit": re.compile(r"\bdiscounts on one quote may not add up to more than \$[\d,]+", re.I),
    "no_discount": re.compile(r"\bsells is never discounted: ", re.I),
    "quantity_limits": re.compile(r"\bmay be ordered only in limited quantities on one quote line: ", re.I),
    "exclusions": re.compile(r"\bmay not be sold together on one quote: ", re.I),
    "bundles": re.compile(r"\bmust be quoted with them: ", re.I),
    "setup_times": re.compile(r"\btakes from a signed order to .+?, by (?:product line|model): ", re.I),
}


def _listed(rest: str) -> list[str]:
    """The ``; ``-separated items at the start of ``rest`` up to the sentence's end (the articles' lists)."""
    items = re.split(r"\. (?=[A-Z])", rest, maxsplit=1)[0]
    return [item.strip().rstrip(".") for item in items.split("; ") if item.strip()]


def internal_articles(calls: Any) -> list[dict[str, Any]]:
    """The internal (not public) knowledge articles, as one SOQL query lists them."""
    return records(
        calls(
            "issue_soql_query",
            # The current versions: a superseded (archived) article may state other rules.
            query="SELECT Id, Title, FAQ_Answer__c FROM Knowledge__kav WHERE IsVisibleInPkb = false "
            "AND PublishStatus = 'Online'",
        )
    )


def read_rule_articles(articles: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Rule key -> (article Id, the rule read from its text), for every rule article among ``articles``.

    Raises:
        OracleError: A rule is stated by two articles, or an article matched a rule whose figures do not parse.
    """
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for article in articles:
        body = article.get("FAQ_Answer__c") or ""
        for key, pattern in _RULE_PATTERNS.items():
            match = pattern.search(body)
            if match is None:
                continue
            if key in found:
                raise OracleError(f"two articles state the {key} rule: {found[key][0]} and {article['Id']}")
            found[key] = (article["Id"], _parse_rule(key, body, body[match.end() :], article["Id"]))
    return found


def _parse_rule(key: str, body: str, rest: str, article: str) -> dict[str, Any]:
    """The figures of rule ``key`` from its article's ``body`` (``rest``: the text after the sentence that names it)."""
    try:
        if key == "discount_tiers":
            tiers = [(int(n), float(p)) for p, n in re.findall(_NUM + r"% for (\d+) units or more", body)]
            caps = {} if tiers else {f: float(p) for f, p in re.findall(r"([A-Z][\w -]+?): up to " + _NUM + "%", body)}
            bonus = re.search(r"up to " + _NUM + r"% more", body)
            if not tiers and not caps:
                raise ValueError("no tier")
            return {"tiers": sorted(tiers, reverse=True), "caps": caps, "bonus": float(bonus.group(1)) if bonus else 0}
        if key == "discount_limit":
            limit = re.search(r"more than \$([\d,]+(?:\.\d+)?)", body)
            return {"limit": float(limit.group(1).replace(",", ""))}
        if key == "no_discount":
            families = re.search(r"never discounted: (.+?)\. ", body).group(1)
            return {"families": [f.strip() for f in families.split(",")]}
        if key == "quantity_limits":
            limits = {}
            for item in _listed(rest):
                name, _sep, most = item.rpartition(": at most ")
                limits[name] = int(most)
            return {"limits": limits}
        if key == "exclusions":
            pairs = [tuple(item.split(" with ")) for item in _listed(rest)]
            if any(len(pair) != 2 for pair in pairs):
                raise ValueError("a pair is not 'A with B'")
            return {"pairs": pairs}
        if key == "bundles":
            bundles = {}
            for item in _listed(rest):
                primary, _sep, companions = item.partition(" requires ")
                bundles[primary] = [c.strip() for c in companions.split(", ")]
            return {"bundles": bundles}
        if key == "setup_times":
            by = re.split(r"\. (?=[A-Z])", rest, maxsplit=1)[0]
            days = {}
            for item in by.split("; "):
                name, _sep, n = item.rpartition(": ")
                days[name] = int(n.split()[0])
            bands = [
                (int(n), int(d)) for d, n in re.findall(r"(\d+) more days for orders of (\d+) units or more", body)
            ]
            return {"days": days, "bands": sorted(bands, reverse=True), "by_model": "by model" in body}
    except (AttributeError, ValueError) as err:
        raise OracleError(f"article {article} states the {key} rule in a form the solver cannot read: {err}") from err
    raise OracleError(f"no reader for rule {key!r}")


def allowed_discount(rules: dict[str, tuple[str, dict[str, Any]]], family: str, quantity: float, offer: bool) -> float:
    """The most discount (percent) a line may carry by the articles read (the no-discount families: 0)."""
    if family in rules["no_discount"][1]["families"]:
        return 0.0
    tiers = rules["discount_tiers"][1]
    if tiers["tiers"]:
        base = next((pct for low, pct in tiers["tiers"] if quantity >= low), 0.0)
    else:
        base = tiers["caps"].get(family, 0.0)
    return base + (tiers["bonus"] if offer else 0.0)
