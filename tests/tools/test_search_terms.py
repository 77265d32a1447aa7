"""search_knowledge_articles reads its term as the original's SOSL does (issue 37), on a generated org.

The original writes the term into ``FIND {term} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title,
FAQ_Answer__c WHERE PublishStatus='Online' AND Language='en_US')``, so Salesforce reads the words "and",
"or" and "and not" in it as operators. The SOSL reference (FIND {SearchQuery}) says how: operator support
is case-insensitive, "and"/"or" are searched for as words only in double quotes, operators are evaluated
in the order parentheses, AND and AND NOT, OR, and for articles OR is the default operator between words.
The expected articles are computed here from the org file with plain SQL and that reading, never through
the engine; the original's statement is also run, to check that ours answers as it does, call for call.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.tools import search_knowledge_articles

ORIGINAL_STATEMENT = (
    "FIND {{{}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
    "WHERE PublishStatus='Online' AND Language='en_US')"
)
# The three calls of issue 37, and words of the generated articles joined by operators.
ISSUE_TERMS = [
    "Caring for Hiking Boots and Trekking Poles",
    "Caring for Sports Bras and Leggings",
    "Northpeak Athletics Rewards Tiers and Member Benefits",
]
OPERATOR_TERMS = [
    "waterproof and seams",
    "waterproof AND seams",
    "Waterproof And Seams",
    "waterproof or seams",
    "waterproof OR seams",
    "waterproof and not seams",
    "waterproof AND NOT seams",
    "waterproof seams",
    "jackets waterproof and seams",
    "waterproof and seams jackets",
    "warranty and not defects returns",
    "warranty not defects",  # NOT alone is a word
    "loyalty or rewards and points",
]

Fields = list[list[str]]  # the words of each searched field of one article


def _words(text: str | None) -> list[str]:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


@pytest.fixture(scope="module")
def articles(env_org: Path) -> dict[str, Fields]:
    """{Id: words of Title, FAQ_Answer__c and Summary} of the online English articles, read with SQL."""
    conn = sqlite3.connect(env_org)
    try:
        rows = conn.execute(
            'SELECT "Id", "Title", "FAQ_Answer__c", "Summary" FROM "Knowledge__kav"'
            " WHERE \"PublishStatus\" = 'Online' AND \"Language\" = 'en_US'"
        ).fetchall()
    finally:
        conn.close()
    return {row[0]: [_words(v) for v in row[1:]] for row in rows}


@pytest.fixture(scope="module")
def org(env_org: Path) -> LocalOrg:
    return LocalOrg(env_org)


def _has(fields: Fields, token: str) -> bool:
    """Whether the words of one token (``Balls:`` is balls, ``Men's`` the phrase men s) appear together."""
    ws = _words(token)
    return any(f[i : i + len(ws)] == ws for f in fields for i in range(len(f) - len(ws) + 1))


def _article_reading(term: str) -> Callable[[Fields], bool]:
    """The reference's reading of a term of words, "and", "or" and "and not" (any case) in an article search.

    AND and AND NOT bind their neighbours before OR; words side by side are joined by OR, the articles'
    default operator; AND NOT leaves out the word after it.
    """
    tokens = term.split()
    disjuncts: list[list[tuple[bool, str]]] = [[(True, tokens[0])]]
    i = 1
    while i < len(tokens):
        word = tokens[i].lower()
        if word == "and" and tokens[i + 1].lower() == "not":
            disjuncts[-1].append((False, tokens[i + 2]))
            i += 3
        elif word == "and":
            disjuncts[-1].append((True, tokens[i + 1]))
            i += 2
        elif word == "or":
            disjuncts.append([(True, tokens[i + 1])])
            i += 2
        else:
            disjuncts.append([(True, tokens[i])])
            i += 1
    return lambda fields: any(all(_has(fields, t) == kept for kept, t in d) for d in disjuncts)


def _expected(articles: dict[str, Fields], term: str) -> set[str]:
    matches = _article_reading(term)
    return {aid for aid, fields in articles.items() if matches(fields)}


def _ids(found: object) -> list[str]:
    assert isinstance(found, list), found
    return [a["Id"] for a in found]


@pytest.mark.parametrize("term", ISSUE_TERMS + OPERATOR_TERMS)
def test_operator_words_are_read_as_the_original_reads_them(
    org: LocalOrg, articles: dict[str, Fields], term: str
) -> None:
    got = _ids(search_knowledge_articles(org, term))
    assert len(got) == len(set(got)) and set(got) == _expected(articles, term)
    # Call for call: the original's statement finds the same articles in the same order.
    assert got == [r["Id"] for r in org.search(ORIGINAL_STATEMENT.format(term))["searchRecords"]]


def test_the_issue_titles_find_their_article(org: LocalOrg, articles: dict[str, Fields]) -> None:
    titles = {aid: " ".join(fields[0]) for aid, fields in articles.items()}
    narrower = 0
    for term in ISSUE_TERMS:
        (own,) = [aid for aid, title in titles.items() if title == " ".join(_words(term))]
        found = set(_ids(search_knowledge_articles(org, term)))
        assert own in found
        # "and" is AND, not a word: the title read as plain text (any of its words, "and" included)
        # finds at least as much, and more for some titles.
        plain = {aid for aid, fields in articles.items() if any(_has(fields, w) for w in term.split())}
        assert found <= plain
        narrower += found < plain
    assert narrower


def test_the_operator_terms_are_not_vacuous(articles: dict[str, Fields]) -> None:
    found = {term: _expected(articles, term) for term in OPERATOR_TERMS}
    assert all(found.values())
    both, either = found["waterproof AND seams"], found["waterproof OR seams"]
    without = found["waterproof AND NOT seams"]
    assert both < either and without and not (without & both) and both | without <= either
    assert found["jackets waterproof and seams"] != _expected(articles, "jackets AND waterproof AND seams")


QUOTED_TERMS: list[tuple[str, Callable[[Fields], bool]]] = [
    ('"and"', lambda f: _has(f, "and")),
    ('"or" OR "and"', lambda f: _has(f, "or") or _has(f, "and")),
    ('"AND" seams', lambda f: _has(f, "and") or _has(f, "seams")),
    ('"cleaning and storing"', lambda f: _has(f, "cleaning and storing")),
]


@pytest.mark.parametrize(("term", "matches"), QUOTED_TERMS, ids=[t for t, _ in QUOTED_TERMS])
def test_quoted_operator_words_are_searched_as_words(
    org: LocalOrg, articles: dict[str, Fields], term: str, matches: Callable[[Fields], bool]
) -> None:
    expected = {aid for aid, fields in articles.items() if matches(fields)}
    assert expected and set(_ids(search_knowledge_articles(org, term))) == expected


@pytest.mark.parametrize("term", ["and", "shoes and", "OR shoes", "shoes AND NOT", "shoes and or boots"])
def test_a_term_the_original_cannot_search_is_an_error_as_there(org: LocalOrg, term: str) -> None:
    result = search_knowledge_articles(org, term)
    assert isinstance(result, str) and result.startswith("Error: MALFORMED_SEARCH: "), result
    with pytest.raises(OrgError) as info:
        org.search(ORIGINAL_STATEMENT.format(term))
    assert f"Error: {info.value}" == result


def test_refused_characters_are_escaped_where_the_original_fails(org: LocalOrg, articles: dict[str, Fields]) -> None:
    # The one difference left: an unescaped reserved character (an apostrophe, a colon) fails the original's
    # search; ours escapes it and searches the words.
    term = "Men's Training Gear: What to Wear"
    with pytest.raises(OrgError) as info:
        org.search(ORIGINAL_STATEMENT.format(term))
    assert info.value.code == "MALFORMED_SEARCH"
    assert set(_ids(search_knowledge_articles(org, term))) == _expected(articles, term)
