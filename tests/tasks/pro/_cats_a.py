"""Checks shared by the tests of the ranking and routing categories (spread of golds, phrasing variety)."""

from __future__ import annotations

import re
from collections import Counter

from crmarena_gym.tasks.pro import ProDraw

#: No single gold may answer more than this share of a category's answerable draws (issue 27).
MAX_TOP_SHARE = 0.45


def assert_spread(draws: list[ProDraw], *, min_distinct: int) -> Counter:
    """The answerable golds spread: at least ``min_distinct`` values, none above :data:`MAX_TOP_SHARE`."""
    golds = Counter(draw.answer for draw in draws)
    assert None not in golds
    value, top = golds.most_common(1)[0]
    assert top / len(draws) <= MAX_TOP_SHARE, (value, top, len(draws))
    assert len(golds) >= min_distinct, golds
    return golds


def openings(draws: list[ProDraw], words: int = 2) -> set[str]:
    """The distinct openings (first ``words`` words, digits blanked) of the draws' questions."""
    return {" ".join(re.sub(r"\d+", "#", draw.query).split()[:words]).lower() for draw in draws}


def assert_phrasing(draws: list[ProDraw], *, min_openings: int = 5) -> None:
    """Varied wordings: many openings, no two draws' questions identical in most cases, one answer sentence."""
    assert len(openings(draws)) >= min_openings, openings(draws)
    assert len({draw.query for draw in draws}) >= 0.8 * len(draws)
    for draw in draws:
        assert re.search(r"[.?)] Return only [^?]*\.$", draw.query), draw.query
