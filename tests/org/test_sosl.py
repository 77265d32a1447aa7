"""SOSL over FTS5 (crmarena_gym.org._sosl) through LocalOrg.search, on a hand-made org with crafted text.

Expectations are computed in this file from the rows inserted here: words are runs of ASCII letters and
digits, lower-cased, and each case states its match rule as a Python predicate over the words of the
searched fields (never through the engine's own parser).
"""

from __future__ import annotations

import hashlib
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crmarena_gym.org import LocalOrg, OrgError
from crmarena_gym.org._sosl import SearchIndex, parse_search, run_search
from tests.org_builder import OrgBuilder, ts

Words = list[list[str]]  # the words of each searched field of one record

PRODUCTS = [
    ("Alpine Trail Running Shoe", "A light runner for rocky trails."),
    ("Smith Rain Jacket", "Waterproof shell with taped seams; packs into its pocket."),
    ("Smythe Running Cap", "Breathable cap for sunny runs."),
    ("Smooth Yoga Mat", "Non-slip mat, 6 mm thick; good for hot yoga and pilates."),
    ("Jacket Rain Cover", "Covers a backpack in the rain; jacket not included."),
    ("Salt and Pepper Socks", "Merino socks in a salt and pepper knit."),
    ("Trail-Blazer Headlamp", "300 lumen lamp for night trail runs."),
    ("Run Club Water Bottle", "Insulated bottle, 750 ml; keeps water cold on long runs."),
    ("Shoe Shoe Shoe Cleaner", "Foam cleaner."),
    ("Tennis Racket Pro", "Graphite racket; includes cover. Not for shoe storage, despite the long bag."),
]

ARTICLES = [
    ("Return Policy", "Items may be returned within 30 days of delivery for a full refund.", "Online"),
    ("Return Policy (2019)", "Items may be returned within 60 days. Superseded.", "Archived"),
    ("Warranty Terms", "Defective shoes are replaced; a return is not needed for warranty claims.", "Online"),
    ("Shipping Times", "Orders ship in 2 business days; returns ship free.", "Draft"),
    ("Loyalty Program", "Members earn points on every purchase and return-free exchanges.", "Online"),
]

USERS = [
    ("Ada", "Byrne", "ada.byrne@example.com", "(415) 555-0100"),
    ("Bo", "Smith", "bo.smith@sportsco.test", "415.555.0199"),
    ("Cy", "Okafor", "cy@example.com", None),
]

CASES = [
    ("Shipping delay for my order", "The order shipped late and the jacket arrived torn."),
    ("Wrong size received", "I ordered a medium yoga mat strap but got small."),
    ("Refund for rain jacket", "Please refund the Smith rain jacket; it leaks."),
    ("Example of billing error", "Charged twice; email ada.byrne@example.com for details."),
]


def wordlist(text: str | None) -> list[str]:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


def phone_words(text: str | None) -> list[str]:
    digits = "".join(ch for ch in text or "" if ch.isdigit())
    return wordlist(text) + ([digits] if digits else [])


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sosl") / "org.db"
    b = OrgBuilder(path)
    for i, (name, description) in enumerate(PRODUCTS):
        b.add("Product2", Name=name, Description=description, IsActive=i % 3 != 0, External_ID__c=f"SKU{i:03d}")
    for i, (title, body, status) in enumerate(ARTICLES):
        b.add(
            "Knowledge__kav",
            Title=title,
            FAQ_Answer__c=body,
            Summary=None,
            UrlName=f"kb-{i}",
            PublishStatus=status,
            Language="en_US",
        )
    users = [
        b.add("User", FirstName=f, LastName=last, Email=email, Phone=phone, Alias=f.lower(), Username=email)
        for f, last, email, phone in USERS
    ]
    for i, (subject, description) in enumerate(CASES):
        b.add(
            "Case",
            Subject=subject,
            Description=description,
            Status="New",
            OwnerId=users[i % 3],
            CreatedDate=ts(f"2023-0{i + 1}-10 09:00"),
        )
    b.add("Issue__c", Name="Shipping Delay", Description__c="Late deliveries")
    b.add(
        "Account",
        FirstName="Dana",
        LastName="Smith",
        PersonEmail="dana@example.com",
        Phone="212-555-0147",
        ShippingCity="Denver",
        ShippingState="CO",
    )
    b.add("Contact", FirstName="Dana", LastName="Smith", Email="dana@example.com")
    b.add(
        "EmailMessage",
        Subject="Your rain jacket refund",
        TextBody="We refunded the jacket.",
        FromAddress="support@sportsco.test",
        ToAddress="bo.smith@sportsco.test",
    )
    b.close()
    return path


@pytest.fixture(scope="module")
def db_hash(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def org(db: Path, db_hash: str) -> LocalOrg:
    return LocalOrg(db, today="2023-03-15")


def ids_of(result: dict[str, Any]) -> list[str]:
    return [r["attributes"]["url"].rsplit("/", 1)[1] for r in result["searchRecords"]]


def names(result: dict[str, Any], field: str = "Name") -> list[str]:
    return [r[field] for r in result["searchRecords"]]


# -- term operators, each against a predicate over the words of Name and Description -----------------


def has(word: str) -> Callable[[Words], bool]:
    return lambda fw: any(word in f for f in fw)


def phrase(*ws: str) -> Callable[[Words], bool]:
    def check(fw: Words) -> bool:
        return any(f[i : i + len(ws)] == list(ws) for f in fw for i in range(len(f)))

    return check


def word_re(pattern: str) -> Callable[[Words], bool]:
    regex = re.compile(pattern)
    return lambda fw: any(regex.fullmatch(w) for f in fw for w in f)


TERM_CASES: list[tuple[str, Callable[[Words], bool]]] = [
    ("shoe", has("shoe")),
    ("SHOE", has("shoe")),
    ("rain jacket", lambda fw: has("rain")(fw) and has("jacket")(fw)),
    ('"rain jacket"', phrase("rain", "jacket")),
    ('"jacket rain"', phrase("jacket", "rain")),
    ("rain AND jacket", lambda fw: has("rain")(fw) and has("jacket")(fw)),
    ("rain and jacket", lambda fw: has("rain")(fw) and has("jacket")(fw)),
    ("yoga OR pilates OR socks", lambda fw: has("yoga")(fw) or has("pilates")(fw) or has("socks")(fw)),
    ("jacket AND NOT cover", lambda fw: has("jacket")(fw) and not has("cover")(fw)),
    ("jacket and not cover", lambda fw: has("jacket")(fw) and not has("cover")(fw)),
    ("run*", word_re(r"run.*")),
    ("sm?th*", word_re(r"sm.th.*")),
    ("sm*th", word_re(r"sm.*th")),
    ("r?n", word_re(r"r.n")),
    (
        '"trail run*"',
        lambda fw: any(f[i] == "trail" and f[i + 1].startswith("run") for f in fw for i in range(len(f) - 1)),
    ),
    (
        "(rain OR yoga) AND NOT (cover OR smooth)",
        lambda fw: (has("rain")(fw) or has("yoga")(fw)) and not (has("cover")(fw) or has("smooth")(fw)),
    ),
    ("rain OR yoga AND mat", lambda fw: has("rain")(fw) or (has("yoga")(fw) and has("mat")(fw))),
    ("jacket AND NOT sm?th", lambda fw: has("jacket")(fw) and not word_re(r"sm.th")(fw)),
    ('"and"', has("and")),
    ('"salt and pepper"', phrase("salt", "and", "pepper")),
    ("salt and pepper", lambda fw: has("salt")(fw) and has("pepper")(fw)),
    (r"trail\-blazer", phrase("trail", "blazer")),
    (r'"trail\-blazer headlamp"', phrase("trail", "blazer", "headlamp")),
    ("not shoe", lambda fw: has("not")(fw) and has("shoe")(fw)),
    # Operators are case-insensitive; AND binds before OR; quoted, "and" and "or" are words.
    ("salt or pepper", lambda fw: has("salt")(fw) or has("pepper")(fw)),
    ("Rain AnD Jacket", lambda fw: has("rain")(fw) and has("jacket")(fw)),
    ("yoga OR jacket cover", lambda fw: has("yoga")(fw) or (has("jacket")(fw) and has("cover")(fw))),
    ("jacket cover or yoga", lambda fw: (has("jacket")(fw) and has("cover")(fw)) or has("yoga")(fw)),
    ("jacket AND NOT cover rain", lambda fw: has("jacket")(fw) and not has("cover")(fw) and has("rain")(fw)),
    ('"and" or "or"', lambda fw: has("and")(fw) or has("or")(fw)),
    ("6 mm", lambda fw: has("6")(fw) and has("mm")(fw)),
    ("750", has("750")),
    ("alpine rocky", lambda fw: has("alpine")(fw) and has("rocky")(fw)),  # words in different fields
    ("zzqx", lambda fw: False),
]


@pytest.mark.parametrize(("terms", "predicate"), TERM_CASES, ids=[c[0] for c in TERM_CASES])
def test_term_operators(org: LocalOrg, terms: str, predicate: Callable[[Words], bool]) -> None:
    result = org.search(f"FIND {{{terms}}} IN ALL FIELDS RETURNING Product2(Name, Description, External_ID__c)")
    expected = {name for name, desc in PRODUCTS if predicate([wordlist(name), wordlist(desc)])}
    assert set(names(result)) == expected
    assert len(names(result)) == len(expected)


def test_some_term_cases_do_match(org: LocalOrg) -> None:
    # Guard against a vacuous table above: most cases find something, and the operators differ.
    found = {
        terms: len(org.search(f"FIND {{{terms}}} RETURNING Product2(Id)")["searchRecords"]) for terms, _ in TERM_CASES
    }
    assert sum(1 for n in found.values() if n) >= len(TERM_CASES) - 2
    assert found['"jacket rain"'] < found["rain jacket"]
    assert found["run*"] > found["r?n"] > 0


# -- scopes -------------------------------------------------------------------------------------------


def test_name_fields_only_search_names(org: LocalOrg) -> None:
    result = org.search("FIND {jacket} IN NAME FIELDS RETURNING Case(Subject)")
    assert names(result, "Subject") == [s for s, _ in CASES if "jacket" in wordlist(s)] == ["Refund for rain jacket"]
    everywhere = org.search("FIND {jacket} IN ALL FIELDS RETURNING Case(Subject)")
    assert set(names(everywhere, "Subject")) == {s for s, d in CASES if "jacket" in wordlist(s) + wordlist(d)}
    assert len(names(everywhere, "Subject")) == 2


@pytest.mark.parametrize("scope", ["NAME", "EMAIL", "PHONE", "ALL"])
def test_products_and_articles_ignore_the_in_clause(org: LocalOrg, scope: str) -> None:
    # SOSL reference, IN SearchGroup: "This clause doesn't apply to articles, documents, feed comments, feed
    # items, files, products, and solutions. If these objects are specified in the RETURNING clause, the
    # search is not limited to specific fields, and all fields are searched."
    products = org.search(f"FIND {{cover}} IN {scope} FIELDS RETURNING Product2(Name)")
    assert set(names(products)) == {n for n, d in PRODUCTS if "cover" in wordlist(n) + wordlist(d)}
    assert len(names(products)) == 2  # "Jacket Rain Cover" by name, "Tennis Racket Pro" by description
    articles = org.search(f"FIND {{refund}} IN {scope} FIELDS RETURNING Knowledge__kav(Title)")
    assert names(articles, "Title") == [t for t, b, _ in ARTICLES if "refund" in wordlist(t) + wordlist(b)]
    assert names(articles, "Title") == ["Return Policy"]  # found in the body, not the title
    # Other objects keep their scope in the same statement.
    mixed = org.search(f"FIND {{jacket}} IN {scope} FIELDS RETURNING Product2(Name), Case(Subject)")
    cases = [r["Subject"] for r in mixed["searchRecords"] if r["attributes"]["type"] == "Case"]
    expected = {"NAME": 1, "EMAIL": 0, "PHONE": 0, "ALL": 2}[scope]
    assert len(cases) == expected


def test_words_without_operator_mean_or_in_articles_and_and_elsewhere(org: LocalOrg) -> None:
    # SOSL reference, FIND {SearchQuery}: "In most cases if an operator isn't specified, AND is the default
    # operator. When searching articles, documents, and solutions, AND must be specified because OR is the
    # default operator."
    articles = org.search("FIND {warranty loyalty} RETURNING Knowledge__kav(Title)")
    either = [t for t, b, _ in ARTICLES if {"warranty", "loyalty"} & set(wordlist(t) + wordlist(b))]
    assert sorted(names(articles, "Title")) == sorted(either) == ["Loyalty Program", "Warranty Terms"]
    both = org.search("FIND {warranty AND loyalty} RETURNING Knowledge__kav(Title)")
    assert names(both, "Title") == []
    products = org.search("FIND {rain cover} RETURNING Product2(Name)")
    assert names(products) == [n for n, d in PRODUCTS if {"rain", "cover"} <= set(wordlist(n) + wordlist(d))]
    # The same statement: OR among the articles, AND among the products.
    together = org.search("FIND {rain cover} RETURNING Product2(Name), Knowledge__kav(Title)")
    assert [r["attributes"]["type"] for r in together["searchRecords"]] == ["Product2"] * len(names(products))
    mixed = org.search("FIND {return policy OR loyalty AND warranty} RETURNING Knowledge__kav(Title)")
    # left to right: (return OR policy) OR (loyalty AND warranty)
    expected = [t for t, b, _ in ARTICLES if {"return", "policy"} & set(wordlist(t) + wordlist(b))]
    assert sorted(names(mixed, "Title")) == sorted(expected)


# Knowledge articles, where OR is the default operator. SOSL reference, FIND {SearchQuery}: "Operator support
# is case-insensitive"; "To include the words 'and,' 'or,' and 'and not' in your search results, surround
# those words in double quotes. Otherwise they're interpreted as the corresponding operators"; "When you
# combine multiple operators in a search string, they're evaluated in this order: 1. Parentheses 2. AND and
# AND NOT (evaluated from right to left) 3. OR". Words side by side are joined by the default operator, OR,
# which is evaluated last; AND NOT excludes the word or group after it.
ARTICLE_TERM_CASES: list[tuple[str, Callable[[Words], bool]]] = [
    ("policy loyalty", lambda fw: has("policy")(fw) or has("loyalty")(fw)),
    ("policy loyalty AND points", lambda fw: has("policy")(fw) or (has("loyalty")(fw) and has("points")(fw))),
    ("policy loyalty and warranty", lambda fw: has("policy")(fw) or (has("loyalty")(fw) and has("warranty")(fw))),
    ("loyalty AND points policy", lambda fw: (has("loyalty")(fw) and has("points")(fw)) or has("policy")(fw)),
    ("shoes or loyalty", lambda fw: has("shoes")(fw) or has("loyalty")(fw)),
    ("Policy And Refund", lambda fw: has("policy")(fw) and has("refund")(fw)),
    (
        "return AND NOT warranty AND loyalty",
        lambda fw: has("return")(fw) and not has("warranty")(fw) and has("loyalty")(fw),
    ),
    (
        "return and not warranty loyalty",
        lambda fw: (has("return")(fw) and not has("warranty")(fw)) or has("loyalty")(fw),
    ),
    ("items AND (refund OR superseded)", lambda fw: has("items")(fw) and (has("refund")(fw) or has("superseded")(fw))),
    ('"and" or "or"', lambda fw: has("and")(fw) or has("or")(fw)),
    ('"and"', has("and")),
    ("not needed", lambda fw: has("not")(fw) or has("needed")(fw)),
]


@pytest.mark.parametrize(("terms", "predicate"), ARTICLE_TERM_CASES, ids=[c[0] for c in ARTICLE_TERM_CASES])
def test_article_term_operators(org: LocalOrg, terms: str, predicate: Callable[[Words], bool]) -> None:
    result = org.search(f"FIND {{{terms}}} IN ALL FIELDS RETURNING Knowledge__kav(Title, FAQ_Answer__c)")
    expected = sorted(t + b for t, b, _ in ARTICLES if predicate([wordlist(t), wordlist(b)]))
    assert sorted(r["Title"] + r["FAQ_Answer__c"] for r in result["searchRecords"]) == expected


def test_article_term_cases_tell_the_readings_apart(org: LocalOrg) -> None:
    # Guard against a vacuous table: the cases find something, and where the unwritten OR sits in the order
    # (last, as OR; not beside AND, which would read "policy loyalty AND points" as (policy OR loyalty) AND
    # points) changes the answer.
    def count(terms: str) -> int:
        return len(org.search(f"FIND {{{terms}}} RETURNING Knowledge__kav(Id)")["searchRecords"])

    assert all(count(terms) for terms, _ in ARTICLE_TERM_CASES)
    assert count("policy loyalty AND points") == 3 > count("(policy OR loyalty) AND points") == 1
    assert count("return AND NOT warranty AND loyalty") == 1 < count("return AND NOT (warranty AND loyalty)")


def test_name_fields_of_people_are_full_names(org: LocalOrg) -> None:
    result = org.search('FIND {"bo smith"} IN NAME FIELDS RETURNING User(Name, Email)')
    assert names(result) == ["Bo Smith"]


def test_email_fields(org: LocalOrg) -> None:
    result = org.search("FIND {example} IN EMAIL FIELDS RETURNING User(Email), Case(Subject)")
    expected = [e for _, _, e, _ in USERS if "example" in wordlist(e)]
    assert sorted(r["Email"] for r in result["searchRecords"] if r["attributes"]["type"] == "User") == sorted(expected)
    # The case mentions example.com in its Description and its Subject, neither an email field.
    assert all(r["attributes"]["type"] == "User" for r in result["searchRecords"])
    full = org.search("FIND {ada.byrne@example.com} IN EMAIL FIELDS RETURNING User(Name)")
    assert names(full) == ["Ada Byrne"]


def test_phone_fields_match_digits_run_together(org: LocalOrg) -> None:
    for terms in ("4155550100", '"415 555 0100"', "(415) 555\\-0100", "555\\-0100", '"\\(415\\) 555\\-0100"'):
        result = org.search(f"FIND {{{terms}}} IN PHONE FIELDS RETURNING User(Name), Account(Name)")
        expected = [f"{f} {last}" for f, last, _, phone in USERS if phrase(*wordlist(terms))([phone_words(phone)])]
        assert names(result) == expected == ["Ada Byrne"], terms
    both = org.search("FIND {555*} IN PHONE FIELDS RETURNING User(Name), Account(Name)")
    assert sorted(names(both)) == ["Ada Byrne", "Bo Smith", "Dana Smith"]
    assert org.search("FIND {ada} IN PHONE FIELDS RETURNING User(Name)") == {"searchRecords": []}


def test_all_fields_includes_long_text(org: LocalOrg) -> None:
    result = org.search("FIND {torn} RETURNING Case(Subject)")
    assert names(result, "Subject") == [s for s, d in CASES if "torn" in wordlist(d)]


def test_without_returning_every_searchable_object_but_products_and_articles(org: LocalOrg, db: Path) -> None:
    result = org.search("FIND {smith}")
    by_type: dict[str, set[str]] = {}
    for record in result["searchRecords"]:
        assert set(record) == {"attributes", "Id"}
        by_type.setdefault(record["attributes"]["type"], set()).add(record["Id"])
    import sqlite3

    conn = sqlite3.connect(db)
    expected = {
        "User": {
            i for (i,) in conn.execute("SELECT Id FROM \"User\" WHERE LastName = 'Smith' OR Email LIKE '%smith%'")
        },
        "Account": {i for (i,) in conn.execute("SELECT Id FROM Account WHERE LastName = 'Smith'")},
        "Contact": {i for (i,) in conn.execute("SELECT Id FROM Contact WHERE LastName = 'Smith'")},
        "Case": {i for (i,) in conn.execute("SELECT Id FROM \"Case\" WHERE Description LIKE '%Smith%'")},
        "EmailMessage": {i for (i,) in conn.execute("SELECT Id FROM EmailMessage WHERE ToAddress LIKE '%smith%'")},
    }
    conn.close()
    assert by_type == expected
    assert "Product2" not in by_type  # "Smith Rain Jacket" exists, but products come only when named


# -- RETURNING clauses and limits ---------------------------------------------------------------------


def test_tool_query_for_articles(org: LocalOrg) -> None:
    sosl = (
        "FIND {return} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
        "WHERE PublishStatus='Online' AND Language='en_US')"
    )
    result = org.search(sosl)
    expected = {t for t, body, status in ARTICLES if status == "Online" and "return" in wordlist(t) + wordlist(body)}
    assert set(names(result, "Title")) == expected == {"Return Policy", "Warranty Terms", "Loyalty Program"}
    for record in result["searchRecords"]:
        assert list(record) == ["attributes", "Id", "Title", "FAQ_Answer__c"]
        assert record["attributes"]["type"] == "Knowledge__kav"
        assert record["attributes"]["url"].endswith("/" + record["Id"])


def test_tool_query_for_products(org: LocalOrg, db: Path) -> None:
    result = org.search("FIND {jacket} IN NAME FIELDS RETURNING Product2(Id, Name)")
    import sqlite3

    conn = sqlite3.connect(db)
    expected = {row for row in conn.execute("SELECT Id, Name FROM Product2") if "jacket" in wordlist(row[1])}
    conn.close()
    assert {(r["Id"], r["Name"]) for r in result["searchRecords"]} == expected
    assert len(expected) == 2


def test_ranked_by_relevance_without_order_by(org: LocalOrg) -> None:
    result = org.search("FIND {shoe} RETURNING Product2(Name)")
    got = names(result)
    assert set(got) == {n for n, d in PRODUCTS if "shoe" in wordlist(n) + wordlist(d)}
    # Three times in a short name beats once in a long description.
    assert got[0] == "Shoe Shoe Shoe Cleaner"
    assert got[-1] == "Tennis Racket Pro"


def test_where_order_by_limit_offset(org: LocalOrg) -> None:
    matching = sorted(
        (
            n
            for i, (n, d) in enumerate(PRODUCTS)
            if i % 3 != 0 and any(w.startswith(("ru", "ra", "co")) for w in wordlist(n) + wordlist(d))
        ),
        reverse=True,
    )
    result = org.search("FIND {ru* OR ra* OR co*} RETURNING Product2(Name WHERE IsActive = true ORDER BY Name DESC)")
    assert names(result) == matching
    assert len(matching) >= 4
    limited = org.search(
        "FIND {ru* OR ra* OR co*} RETURNING Product2(Name WHERE IsActive = true ORDER BY Name DESC LIMIT 2 OFFSET 1)"
    )
    assert names(limited) == matching[1:3]


def test_limit_without_order_by_keeps_the_best(org: LocalOrg) -> None:
    full = names(org.search("FIND {shoe} RETURNING Product2(Name)"))
    top = names(org.search("FIND {shoe} RETURNING Product2(Name LIMIT 2)"))
    assert top == full[:2]
    assert names(org.search("FIND {shoe} RETURNING Product2(Name LIMIT 0)")) == []


def test_where_with_relative_dates_uses_the_orgs_today(org: LocalOrg) -> None:
    # Cases were created on the 10th of months 1..4 of 2023; today is 2023-03-15.
    sosl = "FIND {order* OR refund OR size OR billing} RETURNING Case(Subject WHERE CreatedDate = LAST_N_DAYS:10)"
    assert names(org.search(sosl), "Subject") == ["Refund for rain jacket"]
    later = org.with_today("2023-04-20")
    assert names(later.search(sosl), "Subject") == ["Example of billing error"]


def test_fields_may_be_relationship_paths(org: LocalOrg) -> None:
    result = org.search("FIND {refund} RETURNING Case(Subject, Owner.Name)")
    assert [(r["Subject"], r["Owner"]["Name"]) for r in result["searchRecords"]] == [
        ("Refund for rain jacket", "Cy Okafor")
    ]


def test_global_limit_in_returning_order_when_objects_have_limits(org: LocalOrg) -> None:
    sosl = "FIND {rain OR jacket OR refund*} RETURNING Product2(Name LIMIT 2), Case(Subject), EmailMessage(Subject)"
    sosl += " LIMIT 3"
    result = org.search(sosl)
    types = [r["attributes"]["type"] for r in result["searchRecords"]]
    assert types == ["Product2", "Product2", "Case"]


def test_global_limit_is_shared_evenly_otherwise(org: LocalOrg) -> None:
    counts = {
        obj: len(org.search(f"FIND {{jacket}} RETURNING {obj}(Id)")["searchRecords"])
        for obj in ("Product2", "Case", "EmailMessage")
    }
    assert counts == {"Product2": 2, "Case": 2, "EmailMessage": 1}
    returning = "FIND {jacket} RETURNING Product2(Id), Case(Id), EmailMessage(Id)"
    types = [r["attributes"]["type"] for r in org.search(returning + " LIMIT 3")["searchRecords"]]
    assert types == ["Product2", "Case", "EmailMessage"]  # one each, not the first three in order
    types = [r["attributes"]["type"] for r in org.search(returning + " LIMIT 4")["searchRecords"]]
    assert types == ["Product2", "Product2", "Case", "EmailMessage"]
    assert len(org.search(returning)["searchRecords"]) == 5
    assert org.search("FIND {jacket} RETURNING Product2(Id) LIMIT 0") == {"searchRecords": []}


def test_keywords_are_case_insensitive(org: LocalOrg) -> None:
    a = org.search("FIND {jacket} IN NAME FIELDS RETURNING Product2(Name WHERE IsActive = true ORDER BY Name LIMIT 5)")
    b = org.search("find {jacket} in name fields returning product2(name where isactive = true order by name limit 5)")
    assert names(a) == [r.get("Name") for r in b["searchRecords"]]


def test_parse_search_records_the_clauses() -> None:
    spec = parse_search(
        "FIND {x1 y2} IN EMAIL FIELDS RETURNING Case(Id, Subject WHERE Status = 'New' LIMIT 3), User LIMIT 9"
    )
    assert spec.scope == "EMAIL"
    assert [r.obj.name for r in spec.returning] == ["Case", "User"]
    assert [f.text for f in spec.returning[0].fields] == ["Id", "Subject"]
    assert spec.returning[0].where is not None and spec.returning[0].where.text == "Status = 'New'"
    assert spec.returning[0].limit == 3
    assert spec.limit == 9


# -- reserved characters (SOSL reference, FIND {SearchQuery}: ? & | ! { } [ ] ( ) ^ ~ * : \\ " ' + -) -----

MERINO = [n for n, d in PRODUCTS if phrase("merino", "socks")([wordlist(n), wordlist(d)])]


@pytest.mark.parametrize("char", list("&|!{[]^~:'+-"))
def test_unescaped_reserved_characters_are_refused(org: LocalOrg, char: str) -> None:
    for terms in (f"merino{char}socks", f'"merino {char}socks"'):
        with pytest.raises(OrgError) as info:
            org.search(f"FIND {{{terms}}} RETURNING Product2(Name)")
        assert info.value.code == "MALFORMED_SEARCH"
        assert f"reserved character {char!r} must be escaped" in info.value.message


@pytest.mark.parametrize("char", list("?&|!{}[]()^~*:\\\"'+-"))
def test_escaped_reserved_characters_are_searched_as_text(org: LocalOrg, char: str) -> None:
    # Escaped, the character is punctuation: it separates words, and the words form a phrase.
    for terms in (f"merino\\{char}socks", f'"merino \\{char}socks"'):
        assert names(org.search(f"FIND {{{terms}}} RETURNING Product2(Name)")) == MERINO == ["Salt and Pepper Socks"]


def test_parentheses_group_outside_phrases_and_are_reserved_inside(org: LocalOrg) -> None:
    grouped = org.search("FIND {(merino OR yoga) AND socks} RETURNING Product2(Name)")
    assert names(grouped) == MERINO
    with pytest.raises(OrgError) as info:
        org.search('FIND {"merino (socks)"} RETURNING Product2(Name)')
    assert "reserved character '(' must be escaped" in info.value.message


def test_tools_escape_every_refused_character_and_keep_the_syntax(org: LocalOrg) -> None:
    from crmarena_gym.org import sosl_escape_refused
    from crmarena_gym.tools import search_products

    def found(term: str) -> list[str]:
        ids = search_products(org, term)
        assert isinstance(ids, list), ids
        return [r["Name"] for i in ids for r in org.query(f"SELECT Name FROM Product2 WHERE Id = '{i}'")["records"]]

    # Every reserved character that is not search syntax, in a word and in a phrase: escaped, searched as text.
    refused = "".join(sorted("&|!{}[]^~:'+-"))
    assert found("merino" + refused + "socks") == found(f'"merino {refused}socks"') == MERINO
    assert found('"merino (socks)"') == MERINO  # parentheses are reserved inside a phrase
    # The syntax stays as the original sends it: wildcards, phrases, groups, backslash escapes.
    assert found("meri* AND (socks OR zzz)") == MERINO
    assert found("mer?no \\(socks\\)") == MERINO
    assert sosl_escape_refused('mer?no* "a (b)" (c) \\& d&e \\') == 'mer?no* "a \\(b\\)" (c) \\& d\\&e \\\\'


# -- refusals -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sosl", "code", "fragment"),
    [
        ("FIND {a}", "INVALID_SEARCH", "search term must be longer than one character"),
        ("FIND {a*}", "INVALID_SEARCH", "search term must be longer than one character"),
        ("FIND {\\-\\-}", "INVALID_SEARCH", "search term must be longer than one character"),
        ("FIND {}", "INVALID_SEARCH", "search term must be longer than one character"),
        ("FIND {--}", "MALFORMED_SEARCH", "reserved character '-' must be escaped"),
        ("FIND 'jacket'", "MALFORMED_SEARCH", "must be enclosed in braces"),
        ("FIND jacket", "MALFORMED_SEARCH", "must be enclosed in braces"),
        ("FIND {jacket", "MALFORMED_SEARCH", "missing '}'"),
        ('FIND {"rain jacket}', "MALFORMED_SEARCH", "unterminated quoted phrase"),
        ("FIND {(rain OR jacket}", "MALFORMED_SEARCH", "missing ')'"),
        ("FIND {rain OR}", "MALFORMED_SEARCH", "ends after 'OR'"),
        ("FIND {OR rain}", "MALFORMED_SEARCH", "unexpected 'OR'"),
        ("FIND {rain AND AND jacket}", "MALFORMED_SEARCH", "'AND'"),
        ("FIND {rain)}", "MALFORMED_SEARCH", "unexpected ')'"),
        ("FIND {*acket}", "MALFORMED_SEARCH", "wildcard cannot begin"),
        ("FIND {jacket} IN BODY FIELDS", "MALFORMED_SEARCH", "'BODY'"),
        ("FIND {jacket} IN NAME", "MALFORMED_SEARCH", "expecting FIELDS"),
        ("FIND {jacket} RETURNING", "MALFORMED_SEARCH", "expecting an object name"),
        ("FIND {jacket} RETURNING Product2()", "MALFORMED_SEARCH", "expecting a field name"),
        ("FIND {jacket} RETURNING Product2(Id", "MALFORMED_SEARCH", "expecting ')'"),
        ("FIND {jacket} RETURNING Product2(Id WHERE)", "MALFORMED_SEARCH", "WHERE needs a condition"),
        ("FIND {jacket} RETURNING Product2(COUNT(Id))", "MALFORMED_SEARCH", "aggregate functions"),
        ("FIND {jacket} RETURNING Product2(Id LIMIT x)", "MALFORMED_SEARCH", "'x'"),
        ("FIND {jacket} RETURNING Product2(Id), Product2(Name)", "MALFORMED_SEARCH", "duplicate object"),
        ("FIND {jacket} LIMIT -1", "MALFORMED_SEARCH", "'-1'"),
        ("FIND {jacket} WITH SNIPPET", "MALFORMED_SEARCH", "'WITH SNIPPET' is not supported"),
        ("FIND {jacket} RETURNING Product2(Id USING ListView = Recent)", "MALFORMED_SEARCH", "not supported"),
        ("FIND {jacket} RETURNING Product2(Id) extra", "MALFORMED_SEARCH", "unexpected token: 'extra'"),
        ("FIND {jacket} RETURNING Product2(Id) ; DROP TABLE Product2", "MALFORMED_SEARCH", "';'"),
        ("SELECT Id FROM Product2", "MALFORMED_SEARCH", "'SELECT'"),
        ("", "MALFORMED_SEARCH", "empty search"),
        ("FIND {jacket} RETURNING Produkt(Id)", "INVALID_TYPE", "sObject type 'Produkt' is not supported"),
        ("FIND {jacket} RETURNING Product2(Nmae)", "INVALID_FIELD", "No such column 'Nmae' on entity 'Product2'"),
        ("FIND {zzqx} RETURNING Product2(Nmae)", "INVALID_FIELD", "No such column 'Nmae'"),
        ("FIND {jacket} RETURNING Product2(Id WHERE Nmae = 'x')", "INVALID_FIELD", "No such column 'Nmae'"),
        (
            "FIND {jacket} RETURNING Product2(Id WHERE Name = 'a' OR Name = 'b' AND IsActive = true)",
            "MALFORMED_SEARCH",
            "",
        ),
        ("FIND {return} RETURNING Knowledge__kav(Id WHERE FAQ_Answer__c = 'x')", "INVALID_FIELD", "FAQ_Answer__c"),
    ],
)
def test_refusals(org: LocalOrg, sosl: str, code: str, fragment: str) -> None:
    with pytest.raises(OrgError) as info:
        org.search(sosl)
    assert info.value.code == code
    assert fragment in info.value.message


def test_engine_errors_point_into_the_users_statement(org: LocalOrg) -> None:
    sosl = "FIND {jacket} RETURNING Product2(Id WHERE Nmae = 'x')"
    with pytest.raises(OrgError) as info:
        org.search(sosl)
    message = info.value.message
    assert "Id IN" not in message  # the generated SOQL never shows
    col = sosl.index("Nmae") + 1
    assert f"ERROR at Row:1:Column:{col}" in message


@pytest.mark.parametrize(
    ("sosl", "code", "fragment", "token"),
    [
        (
            "FIND {jacket} RETURNING Product2(Name WHERE Name = '\\ud800')",
            "MALFORMED_SEARCH",
            "Invalid string literal '\\ud800'",
            "'\\ud800'",
        ),
        (
            "FIND {jacket} RETURNING Product2(Name WHERE Name = 'a\ud800')",
            "MALFORMED_SEARCH",
            "Invalid string literal 'a\\ud800'",
            "'a",
        ),
        ("FIND {jacket} RETURNING Product2(Name OFFSET 2001)", "NUMBER_OUTSIDE_VALID_RANGE", "2000", "2001"),
        (
            "FIND {jacket} RETURNING Product2(Name ORDER BY Name OFFSET 2001)",
            "NUMBER_OUTSIDE_VALID_RANGE",
            "Maximum SOSL offset allowed is 2000",
            "2001",
        ),
        (
            "FIND {jacket} RETURNING Product2(Name LIMIT 2 OFFSET 99999999999999999999999)",
            "NUMBER_OUTSIDE_VALID_RANGE",
            "Maximum SOSL offset allowed is 2000",
            "999",
        ),
    ],
)
def test_refusals_point_at_the_offending_token(org: LocalOrg, sosl: str, code: str, fragment: str, token: str) -> None:
    with pytest.raises(OrgError) as info:
        org.search(sosl)
    message = info.value.message
    assert info.value.code == code, message
    assert fragment in message
    assert f"ERROR at Row:1:Column:{sosl.index(token) + 1}\n" in message
    message.encode("utf-8")  # no raw lone surrogate in the message


def test_offset_of_2000_is_allowed_with_or_without_order_by(org: LocalOrg) -> None:
    for sosl in (
        "FIND {jacket} RETURNING Product2(Name OFFSET 2000)",
        "FIND {jacket} RETURNING Product2(Name ORDER BY Name OFFSET 2000)",
    ):
        assert org.search(sosl)["searchRecords"] == []  # the org holds far fewer than 2000 jackets


def test_non_string_is_refused(org: LocalOrg) -> None:
    with pytest.raises(OrgError) as info:
        run_search(org, 42)  # type: ignore[arg-type]
    assert info.value.code == "MALFORMED_SEARCH"


# -- the index: built once, shared, read-only --------------------------------------------------------


def test_index_is_built_once_and_shared_by_views(org: LocalOrg) -> None:
    org.search("FIND {jacket} RETURNING Product2(Id)")
    cached = [v for v in org.backend_cache.values() if isinstance(v, SearchIndex)]
    assert len(cached) == 1
    view = org.with_today("2020-01-01")
    view.search("FIND {jacket} RETURNING Product2(Id)")
    assert [v for v in view.backend_cache.values() if isinstance(v, SearchIndex)] == cached


def test_index_pickles_empty_and_rebuilds(org: LocalOrg, db: Path) -> None:
    index = SearchIndex(db)
    clone = pickle.loads(pickle.dumps(index))
    spec = parse_search("FIND {jacket} RETURNING Product2(Id)")
    assert clone.search(spec.returning[0].obj, spec.terms, spec.scope) == index.search(
        spec.returning[0].obj, spec.terms, spec.scope
    )


def test_database_file_is_never_written(org: LocalOrg, db: Path, db_hash: str) -> None:
    for terms, _ in TERM_CASES:
        org.search(f"FIND {{{terms}}}")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == db_hash
    assert sorted(p.name for p in db.parent.iterdir()) == ["org.db"]


# -- fuzzing: nothing but OrgError ever comes out ----------------------------------------------------

_PIECES = [
    "FIND",
    "find",
    "{",
    "}",
    "(",
    ")",
    '"',
    "\\",
    "*",
    "?",
    "AND",
    "NOT",
    "OR",
    "and not",
    "jacket",
    "ra",
    "r",
    "IN",
    "ALL",
    "NAME",
    "EMAIL",
    "PHONE",
    "FIELDS",
    "RETURNING",
    "Product2",
    "Case",
    "User",
    "Foo",
    ",",
    "Id",
    "Name",
    "WHERE",
    "IsActive = true",
    "ORDER BY",
    "Name DESC",
    "LIMIT",
    "OFFSET",
    "2",
    "-1",
    "'x'",
    "'",
    "=",
    "WITH",
    "USING",
    "COUNT(Id)",
    "Owner.Name",
    "toLabel(Name)",
    ";",
    "é",
    "\n",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_PIECES), max_size=14), st.booleans())
def test_fuzzed_statements_raise_only_org_errors(org: LocalOrg, pieces: list[str], prefix: bool) -> None:
    text = ("FIND {" if prefix else "") + " ".join(pieces)
    try:
        result = org.search(text)
    except OrgError as exc:
        assert exc.code in {
            "MALFORMED_SEARCH",
            "INVALID_SEARCH",
            "INVALID_FIELD",
            "INVALID_TYPE",
            "INVALID_QUERY_FILTER_OPERATOR",
        }
    else:
        assert isinstance(result["searchRecords"], list)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_fuzzed_search_terms_raise_only_org_errors(org: LocalOrg, terms: str) -> None:
    try:
        org.search("FIND {" + terms + "} RETURNING Product2(Name), Case(Subject)")
    except OrgError as exc:
        assert exc.code in ("MALFORMED_SEARCH", "INVALID_SEARCH")


_TERM_PIECES = [
    "rain",
    "jacket",
    "AND",
    "and",
    "OR",
    "or",
    "NOT",
    "AND NOT",
    "(",
    ")",
    ",",
    "\\-",
    '"rain coat"',
    "sm*",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_TERM_PIECES), min_size=1, max_size=10))
def test_products_and_articles_refuse_the_same_terms(org: LocalOrg, pieces: list[str]) -> None:
    # The term is read twice (words joined by AND for products, by OR for articles): a term is refused, with
    # the same error, whichever object the statement returns.
    def outcome(obj: str) -> str:
        try:
            org.search("FIND {" + " ".join(pieces) + "} RETURNING " + obj)
        except OrgError as exc:
            return str(exc)
        return "answered"

    assert outcome("Product2(Id)") == outcome("Knowledge__kav(Id)")


def test_a_wordless_piece_between_words_is_left_out(org: LocalOrg) -> None:
    # "return , AND NOT warranty" is "return AND NOT warranty" in articles too, not "return OR (AND NOT ...)".
    found = org.search("FIND {return , AND NOT warranty} RETURNING Knowledge__kav(Title, FAQ_Answer__c)")
    expected = [
        t for t, b, _ in ARTICLES if "return" in wordlist(t + " " + b) and "warranty" not in wordlist(t + " " + b)
    ]
    assert (
        sorted(r["Title"] for r in found["searchRecords"])
        == sorted(expected)
        == ["Loyalty Program", "Return Policy", "Return Policy (2019)"]
    )


def test_fuzzing_left_the_file_alone(db: Path, db_hash: str) -> None:
    assert hashlib.sha256(db.read_bytes()).hexdigest() == db_hash


def test_huge_or_deep_terms_are_refused_cleanly(org: LocalOrg) -> None:
    with pytest.raises(OrgError) as info:
        org.search("FIND {" + " ".join(["jacket"] * 5000) + "}")
    assert info.value.code == "MALFORMED_SEARCH" and "too many" in info.value.message
    with pytest.raises(OrgError) as info:
        org.search("FIND {" + "(" * 2000 + "jacket" + ")" * 2000 + "}")
    assert info.value.code == "MALFORMED_SEARCH" and "nested too deeply" in info.value.message
    many = " OR ".join(["jacket"] * 150)
    assert len(org.search("FIND {" + many + "} RETURNING Product2(Id)")["searchRecords"]) == 2


def test_deepest_allowed_nesting_and_long_chains_run(org: LocalOrg) -> None:
    from crmarena_gym.org._sosl import MAX_NESTING, MAX_TERMS

    deep = "(" * (MAX_NESTING - 1) + "jacket OR (rain AND NOT cover)" + ")" * (MAX_NESTING - 1)
    got = set(names(org.search("FIND {" + deep + "} RETURNING Product2(Name)")))
    expected = set()
    for name, desc in PRODUCTS:
        ws = wordlist(name) + wordlist(desc)
        if "jacket" in ws or ("rain" in ws and "cover" not in ws):
            expected.add(name)
    assert got == expected and len(expected) == 2
    chain = " AND NOT ".join(["jacket"] + [f"zz{i}" for i in range(MAX_TERMS - 2)] + ["cover"])
    assert names(org.search("FIND {" + chain + "} RETURNING Product2(Name)")) == ["Smith Rain Jacket"]
    mixed = " OR ".join(f"(jacket AND zz{i})" for i in range(MAX_TERMS // 2))
    assert org.search("FIND {" + mixed + "} RETURNING Product2(Id)") == {"searchRecords": []}


# -- fetching the hits: bound into the plan of the item's query, never written into a query ---------

FETCH_CASES = [
    "FIND {shoe OR jacket OR rain} RETURNING Product2(Name, Description)",
    "FIND {run*} RETURNING Product2(Id, Name WHERE IsActive = true ORDER BY Name DESC LIMIT 2 OFFSET 1)",
    "FIND {run* OR ra*} RETURNING Product2(Name LIMIT 3 OFFSET 1)",
    "FIND {jacket} RETURNING Product2(Id), Case(Subject, Owner.Name), EmailMessage(Subject) LIMIT 4",
    "FIND {return OR returned OR warranty} RETURNING Knowledge__kav(Id, Title WHERE PublishStatus = 'Online')",
    "FIND {order* OR refund OR size OR billing} RETURNING Case(Subject WHERE CreatedDate = LAST_N_DAYS:10)",
    "FIND {smith} RETURNING Account(Name, PersonEmail), Contact(Name), User(Name, Email)",
    "FIND {zzqx} RETURNING Product2(Name)",
    "FIND {jacket}",
    "FIND {jacket} RETURNING Product2(Nmae)",
    "FIND {jacket} RETURNING Product2(Id WHERE Nmae = 'x')",
    "FIND {jacket} RETURNING Product2(Id WHERE Name = 'a' OR Name = 'b' AND IsActive = true)",
    "FIND {jacket} RETURNING Product2(Id ORDER BY Nmae)",
    "FIND {jacket} RETURNING Case(Id WHERE CreatedDate = NEXT_N_WEEKS:x)",
]


def _outcome(org: LocalOrg, sosl: str) -> Any:
    try:
        return org.search(sosl)
    except OrgError as exc:
        return (exc.code, exc.message)


def test_the_hits_are_fetched_as_the_query_written_with_them_fetches_them(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = tmp_path / "org.db"  # a backend of its own: its plans are compiled by the path under test
    fresh.write_bytes(db.read_bytes())
    org = LocalOrg(fresh, today="2023-03-15")
    bound = [_outcome(org, sosl) for sosl in FETCH_CASES]
    with monkeypatch.context() as patch:
        patch.setattr(LocalOrg, "_query_in_list", lambda self, soql, at, raws: None)  # the query text, written out
        written = [_outcome(LocalOrg(db, today="2023-03-15"), sosl) for sosl in FETCH_CASES]
    assert bound == written
    assert sum(isinstance(b, dict) and len(b["searchRecords"]) >= 2 for b in bound) >= 5
    assert sum(isinstance(b, tuple) for b in bound) == 5


def test_no_query_is_written_with_the_hits(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crmarena_gym.org import _local

    fresh = tmp_path / "org.db"
    fresh.write_bytes(db.read_bytes())
    org = LocalOrg(fresh)
    compiled: list[str] = []
    real = _local.compile_shaped

    def recording(text: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(_local, "compile_shaped", recording)
    first = org.search("FIND {shoe} RETURNING Product2(Id, Name)")["searchRecords"]
    again = org.search("FIND {rain OR yoga} RETURNING Product2(Id, Name)")["searchRecords"]
    assert len(first) >= 3 and len(again) >= 3
    assert len(compiled) == 1  # the item's query, once, with a stand-in for the hits
    assert not any(r["Id"] in compiled[0] for r in first + again)


def test_searches_are_kept_parsed_and_their_hits_kept_within_bounds(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crmarena_gym.org import _sosl

    fresh = tmp_path / "org.db"
    fresh.write_bytes(db.read_bytes())
    org = LocalOrg(fresh)
    monkeypatch.setattr(_sosl, "_HITS_KEPT", 2)
    sosl = "FIND {{{}}} RETURNING Product2(Id)"
    results = {term: ids_of(org.search(sosl.format(term))) for term in ("shoe", "jacket", "run*")}
    index = org.backend_cache[_sosl._CACHE_KEY]
    assert isinstance(index, SearchIndex) and len(index._hits) == 2  # the oldest was let go
    assert {term: ids_of(org.search(sosl.format(term))) for term in results} == results
    monkeypatch.setattr(_sosl, "_HIT_IDS_KEPT", len(results["shoe"]))
    org.search(sosl.format("shoe"))
    assert index._hit_ids <= len(results["shoe"]) and len(index._hits) == 1
    parse_calls: list[str] = []
    monkeypatch.setattr(
        _sosl, "parse_search", lambda text, *rest: parse_calls.append(text) or parse_search(text, *rest)
    )
    _sosl._parsed_under.cache_clear()
    for _ in range(3):
        org.search(sosl.format("jacket"))
    assert parse_calls == [sosl.format("jacket")]
    with pytest.raises(OrgError):
        org.search("FIND {jacket")
    with pytest.raises(OrgError):  # a refusal is not kept: refused again, from its text
        org.search("FIND {jacket")
    assert parse_calls.count("FIND {jacket") == 2
    two_words = "FIND {jacket OR rain} RETURNING Product2(Id)"
    assert org.search(two_words)["searchRecords"]
    monkeypatch.setattr(_sosl, "MAX_TERMS", 1)  # under other bounds, parsed (and refused) again
    with pytest.raises(OrgError, match="too many words"):
        org.search(two_words)


def test_the_same_hits_again_reuse_their_bound_plan(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crmarena_gym.org.soql import PlanTemplate

    fresh = tmp_path / "org.db"
    fresh.write_bytes(db.read_bytes())
    org = LocalOrg(fresh)
    bound: list[int] = []
    real = PlanTemplate.instantiate
    monkeypatch.setattr(PlanTemplate, "instantiate", lambda self, lifted: bound.append(1) or real(self, lifted))
    first = org.search("FIND {shoe} RETURNING Product2(Id, Name)")
    assert len(first["searchRecords"]) >= 3
    after_first = len(bound)  # the template's own check when it was built, then the hits bound
    for view in (org, org.with_today("2023-01-01")):  # the hits kept, their plan too: nothing bound again
        assert view.search("FIND {shoe} RETURNING Product2(Id, Name)") == first
    assert len(bound) == after_first
    org.search("FIND {rain OR shoe} RETURNING Product2(Id, Name)")  # other hits: bound into the same shape
    assert len(bound) == after_first + 1
