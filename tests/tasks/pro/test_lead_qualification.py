"""lead_qualification on both Pro orgs: planted gold, SQL gold and the oracle agree; factors spread; the latest
call decides."""

from __future__ import annotations

import re
from collections import Counter

from tests.tasks.pro.conftest import ProOrg, check_three_ways, draw_instances

NAME = "lead_qualification"


def test_answerable_and_none_draws_agree_three_ways(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 20, want_none=False, seed=11)
    draws += draw_instances(pro_org, NAME, 10, want_none=True, seed=12)
    check_three_ways(pro_org, NAME, draws)


def test_failing_factors_spread(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 80, want_none=False, seed=21)
    golds = Counter(d.answer for d in draws)
    assert max(golds.values()) <= 0.45 * len(draws), golds
    factors = Counter(f for d in draws for f in d.answer)
    assert set(factors) == {"Budget", "Authority", "Need", "Timeline"}, factors
    assert any(len(d.answer) == 2 for d in draws)
    assert all(list(d.answer) == sorted(d.answer) for d in draws)


def test_some_leads_updated_their_figures_in_a_later_call(pro_org: ProOrg) -> None:
    """Reading the first call instead of the latest would change a budget or a timeline (counted by SQL)."""
    updated = 0
    for d in draw_instances(pro_org, NAME, 60, want_none=False, seed=31):
        bodies = [b for (b,) in pro_org.conn.execute(
            "SELECT Body__c FROM VoiceCallTranscript__c WHERE LeadId__c = ? ORDER BY CreatedDate",
            (d.params["lead_id"],),
        )]  # fmt: skip
        figures = {tuple(re.findall(r"\$[\d,]+|\d+ days", b)) for b in bodies}
        updated += len(bodies) == 2 and len(figures) == 2
    assert updated >= 3


def test_queries_vary_and_context_names_the_lead(pro_org: ProOrg) -> None:
    draws = draw_instances(pro_org, NAME, 30, want_none=True, seed=41)
    assert len({d.query for d in draws}) >= 6
    for d in draws:
        assert f"- Lead Id to be considered is: {d.params['lead_id']}" in d.required
        assert d.query.endswith("or None if the lead is qualified.")
