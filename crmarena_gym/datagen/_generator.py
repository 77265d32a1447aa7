"""The seeded org generator: ``generate_org(path, seed=..., scale=..., latent=...)``."""

from __future__ import annotations

import errno
import json
import math
import numbers
import os
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crmarena_gym.datagen._articles import CATEGORY_GUIDES, GENERAL_ARTICLES, care_section
from crmarena_gym.datagen._catalog import CATEGORIES, Product, build_catalog
from crmarena_gym.datagen._ids import bulk_ids, ids_for
from crmarena_gym.datagen._latent import HABITS, N_ISSUES, Latents, draw_latents
from crmarena_gym.datagen._manifest import GENERATOR_VERSIONS, Manifest, content_hash, write_meta
from crmarena_gym.datagen._names import AGENT_TIME_ZONES, CUSTOMER_EMAIL_DOMAINS, FIRST_NAMES, LAST_NAMES, STATES
from crmarena_gym.datagen._policies import build_policies, draw_params
from crmarena_gym.datagen._rand import Rand, stream
from crmarena_gym.datagen._text import (
    COMPANY,
    COMPANY_DOMAIN,
    ISSUES,
    Dialogue,
    case_text,
    chat_body,
    email_thread,
    neutral_exchange,
    spread_times,
)
from crmarena_gym.schema import DEFAULT_KIND, OrgSchema, check_kind, org_schema, quote_identifier
from crmarena_gym.schema._sql import create_indexes, create_tables

#: Row counts of the original org (ORIGINAL.md section 4): what scale 1.0 reproduces.
ORIGINAL_ROW_COUNTS: dict[str, int] = {
    "User": 152,
    "Account": 201,
    "Contact": 208,
    "Case": 977,
    "CaseHistory__c": 2983,
    "EmailMessage": 3241,
    "LiveChatTranscript": 774,
    "Order": 2069,
    "OrderItem": 7100,
    "Pricebook2": 46,
    "PricebookEntry": 22000,
    "Product2": 501,
    "ProductCategory": 12,
    "ProductCategoryProduct": 762,
    "Issue__c": 10,
    "Knowledge__kav": 45,
}

MIN_SCALE = 0.05
MAX_SCALE = 1000.0
N_AGENTS = 152
ORDER_START = np.datetime64("2020-01-01")
ORDER_END = np.datetime64("2025-07-01")  # exclusive
_DAY = 86_400

Progress = Callable[[str, float], None]

# How likely each issue is for a product of each category (multiplies the product's own draw).
# Columns follow ISSUES: wrong item, billing, return, defect, size, shipping, availability,
# cancellation, warranty, loyalty.
_CATEGORY_ISSUE_PRIOR = np.array(
    [
        [1, 1, 1, 2, 3, 1, 1, 1, 1, 1],  # running footwear
        [1, 1, 1, 1, 3, 1, 2, 1, 1, 1],  # sneakers
        [1, 1, 2, 1, 3, 1, 1, 1, 0.5, 1],  # women's activewear
        [1, 1, 2, 1, 3, 1, 1, 1, 0.5, 1],  # men's activewear
        [1, 1, 1, 2, 2, 1, 1, 1, 1, 1],  # outdoor apparel
        [1, 1, 1, 2, 1, 2, 1, 1, 2, 1],  # hiking gear
        [1, 1, 1, 1, 1, 1, 2, 1, 1, 1],  # yoga
        [1, 1, 1, 2, 1, 1, 1, 1, 1, 1],  # swim
        [1, 1, 1, 2, 1, 2, 1, 1, 2, 1],  # cycling
        [1, 1, 1, 1, 2, 1, 1, 1, 1, 1],  # team sports
        [1, 2, 1, 1, 1, 1, 1, 1, 1, 1],  # golf
        [1, 1, 1, 3, 0.5, 1, 1, 1, 3, 1],  # fitness equipment & trackers
    ],
    dtype=float,
)
_PRIORITY_BY_ISSUE = {3: (0.1, 0.35, 0.4, 0.15), 1: (0.1, 0.4, 0.4, 0.1), 8: (0.15, 0.4, 0.35, 0.1)}
_DEFAULT_PRIORITY = (0.25, 0.45, 0.25, 0.05)
_PRIORITIES = ("Low", "Medium", "High", "Critical")


# ---------------------------------------------------------------- validation and small helpers


def validate_seed_scale(seed: object, scale: object) -> tuple[int, float]:
    """Check ``seed`` and ``scale`` and return them normalised, or raise ValueError quoting the bad value.

    Example:
        >>> validate_seed_scale(3, 2)
        (3, 2.0)
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed must be a non-negative integer below 2**63, got {seed!r}")
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise ValueError(f"scale must be a number between {MIN_SCALE} and {MAX_SCALE:g}, got {scale!r}")
    value = float(scale)
    if not math.isfinite(value) or not MIN_SCALE <= value <= MAX_SCALE:
        raise ValueError(f"scale must be a number between {MIN_SCALE} and {MAX_SCALE:g}, got {scale!r}")
    return int(seed), value


def _fmt_datetimes(seconds: np.ndarray) -> list[str]:
    """Epoch seconds -> ``YYYY-MM-DDTHH:MM:SS.000+0000`` strings."""
    text = np.datetime_as_string(np.asarray(seconds, dtype="datetime64[s]"), unit="s")
    return [t + ".000+0000" for t in text.tolist()]


def _fmt_dates(days: np.ndarray) -> list[str]:
    return np.datetime_as_string(np.asarray(days, dtype="datetime64[D]"), unit="D").tolist()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _gumbel_top_k(rng: np.random.Generator, weights: np.ndarray, k: int) -> np.ndarray:
    """Indexes of ``k`` distinct items drawn without replacement with probability ∝ weights (sorted)."""
    with np.errstate(divide="ignore"):
        keys = np.log(weights) - np.log(-np.log(rng.random(len(weights))))
    if k >= len(weights):
        return np.arange(len(weights))
    return np.sort(np.argpartition(-keys, k - 1)[:k])


def _choice_rows(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One category per row of ``probs`` (rows sum to 1), by inverse CDF."""
    cum = np.cumsum(probs, axis=1)
    u = rng.random(len(probs)) * cum[:, -1]
    return np.minimum((u[:, None] > cum).sum(axis=1), probs.shape[1] - 1)


class _Writer:
    """Inserts rows into the object tables of an org kind, checking column names against its schema."""

    def __init__(self, conn: sqlite3.Connection, schema: OrgSchema | None = None) -> None:
        self.conn = conn
        self.schema = schema or org_schema(DEFAULT_KIND)
        self.counts: dict[str, int] = {}

    def insert(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        obj = self.schema.get_object(table)
        assert obj is not None, table
        expected = {f.column_name for f in obj.stored_fields}
        if set(columns) != expected or len(columns) != len(expected):
            raise AssertionError(f"{table}: generator columns {sorted(columns)} != schema {sorted(expected)}")
        cols = ", ".join(quote_identifier(c) for c in columns)
        marks = ", ".join("?" * len(columns))
        cur = self.conn.executemany(f"INSERT INTO {quote_identifier(table)} ({cols}) VALUES ({marks})", rows)
        self.counts[table] = self.counts.get(table, 0) + max(cur.rowcount, 0)


# ---------------------------------------------------------------- the generator


class _Org:
    """Builds one org; the entity arrays live on the instance between steps."""

    def __init__(self, seed: int, scale: float, latent: bool, writer: _Writer, progress: Progress | None) -> None:
        self.seed = seed
        self.scale = scale
        self.latent = latent
        self.w = writer
        self.progress = progress or (lambda stage, fraction: None)
        self.lat_json: dict[str, Any] = {}
        self._span = (0.0, 1.0)

    def n(self, table: str) -> int:
        return max(1, round(ORIGINAL_ROW_COUNTS[table] * self.scale))

    # ---- fixed catalog and staff

    def users(self) -> None:
        rng = stream(self.seed, "users")
        pairs = rng.choice(len(FIRST_NAMES) * len(LAST_NAMES), size=N_AGENTS, replace=False)
        self.user_first = [FIRST_NAMES[p // len(LAST_NAMES)] for p in pairs.tolist()]
        self.user_last = [LAST_NAMES[p % len(LAST_NAMES)] for p in pairs.tolist()]
        self.user_name = [f"{f} {ln}" for f, ln in zip(self.user_first, self.user_last, strict=True)]
        self.user_ids = bulk_ids("005", 0, N_AGENTS)
        self.user_email = [
            f"{f}.{ln}@{COMPANY_DOMAIN}".lower() for f, ln in zip(self.user_first, self.user_last, strict=True)
        ]
        profiles = bulk_ids("00e", 0, 2)
        tz = rng.integers(len(AGENT_TIME_ZONES), size=N_AGENTS)
        phone = rng.integers(200, 999, size=N_AGENTS)
        line = rng.integers(0, 10_000, size=N_AGENTS)
        rows = []
        for i in range(N_AGENTS):
            f, ln = self.user_first[i], self.user_last[i]
            rows.append(
                (
                    self.user_ids[i],
                    f,
                    ln,
                    self.user_email[i],
                    f"({int(phone[i])}) 555-{int(line[i]):04d}",
                    f"{self.user_email[i]}.service",
                    (f[0] + ln).lower()[:8],
                    profiles[1 if i % 19 == 0 else 0],
                    "en_US",
                    "UTF-8",
                    AGENT_TIME_ZONES[int(tz[i])],
                    "en_US",
                )
            )
        self.w.insert(
            "User",
            (
                "Id",
                "FirstName",
                "LastName",
                "Email",
                "Phone",
                "Username",
                "Alias",
                "ProfileId",
                "LanguageLocaleKey",
                "EmailEncodingKey",
                "TimeZoneSidKey",
                "LocaleSidKey",
            ),
            rows,
        )

    def catalog(self) -> None:
        rng = stream(self.seed, "catalog")
        self.products: list[Product] = build_catalog(rng)
        n_p = len(self.products)
        self.product_ids = bulk_ids("01t", 0, n_p)
        self.product_active = np.array([p.active for p in self.products])
        self.product_category = np.array([p.category for p in self.products])
        cat_ids = bulk_ids("0ZG", 0, len(CATEGORIES))
        catalog_id = bulk_ids("0ZS", 0, 1)[0]
        self.w.insert(
            "ProductCategory",
            ("Id", "Name", "CatalogId"),
            [(cat_ids[i], c.name, catalog_id) for i, c in enumerate(CATEGORIES)],
        )
        self.w.insert(
            "Product2",
            ("Id", "Name", "Description", "IsActive", "External_ID__c"),
            [
                (self.product_ids[i], p.name, p.description, int(p.active), p.external_id)
                for i, p in enumerate(self.products)
            ],
        )
        links = []
        for i, p in enumerate(self.products):
            links.append((p.category, i))
            if p.second_category is not None:
                links.append((p.second_category, i))
        link_ids = bulk_ids("0ZH", 0, len(links))
        self.w.insert(
            "ProductCategoryProduct",
            ("Id", "ProductCategory", "Product", "ProductCategoryId", "ProductId"),
            [
                (link_ids[k], CATEGORIES[c].name, self.products[i].external_id, cat_ids[c], self.product_ids[i])
                for k, (c, i) in enumerate(links)
            ],
        )
        self.lat_json["product_attributes"] = {
            self.product_ids[i]: p.attributes() | {"active": p.active} for i, p in enumerate(self.products)
        }

    def pricebooks(self) -> None:
        rng = stream(self.seed, "pricebooks")
        books: list[tuple[str, str, np.datetime64, np.datetime64, float, str]] = [
            (
                "Standard Price Book",
                "List prices of every product",
                np.datetime64("2019-01-01"),
                np.datetime64("2027-01-01"),
                1.0,
                "standard",
            )
        ]
        quarters = [(y, q) for y in range(2019, 2026) for q in range(1, 5)][1:]
        for y, q in quarters:
            start = np.datetime64(f"{y}-{3 * q - 2:02d}-01")
            end = np.datetime64(f"{y + (q == 4)}-{(3 * q) % 12 + 1:02d}-01")
            drift = 1.0 + 0.025 * (y - 2020) + 0.02 * (rng.random() - 0.5)
            books.append((f"Q{q} {y} Price Book", f"Regular prices for Q{q} {y}", start, end, drift, "quarter"))
        for y in range(2020, 2026):
            for name, start, end, mult in (
                ("Spring Sale", f"{y}-03-01", f"{y}-04-01", 0.8),
                ("Back to School Sale", f"{y}-08-01", f"{y}-09-01", 0.85),
                ("Holiday Sale", f"{y}-11-20", f"{y + 1}-01-01", 0.75),
            ):
                books.append(
                    (
                        f"{name} {y}",
                        f"Discounted prices: {name.lower()} {y}",
                        np.datetime64(start),
                        np.datetime64(end),
                        mult,
                        "sale",
                    )
                )
        self.books = books
        self.book_ids = bulk_ids("01s", 0, len(books))
        today_cut = np.datetime64("2025-01-01")
        self.w.insert(
            "Pricebook2",
            ("Id", "Name", "Description", "IsActive", "ValidFrom", "ValidTo"),
            [
                (
                    self.book_ids[b],
                    name,
                    desc,
                    int(end > today_cut),
                    _fmt_datetimes(np.array([start], dtype="datetime64[s]"))[0],
                    _fmt_datetimes(np.array([end], dtype="datetime64[s]") - 1)[0],
                )
                for b, (name, desc, start, end, _m, _k) in enumerate(books)
            ],
        )
        list_price = np.array([p.list_price for p in self.products])
        n_p = len(self.products)
        self.entry_index = np.full((len(books), n_p), -1, dtype=np.int64)
        self.entry_price = np.zeros((len(books), n_p))
        rows: list[tuple[int, int, float]] = []
        k = 0
        for b, book in enumerate(books):
            members = np.arange(n_p) if book[5] == "standard" else np.flatnonzero(self.product_active)
            prices = np.maximum(np.round(list_price[members] * book[4]) - 0.01, 0.99)
            self.entry_index[b, members] = np.arange(k, k + len(members))
            self.entry_price[b, members] = prices
            rows.extend(zip([b] * len(members), members.tolist(), prices.tolist(), strict=True))
            k += len(members)
        self.entry_ids = bulk_ids("01u", 0, k)
        self.w.insert(
            "PricebookEntry",
            ("Id", "Pricebook2Id", "Product2Id", "UnitPrice"),
            [
                (self.entry_ids[e], self.book_ids[b], self.product_ids[p], round(pr, 2))
                for e, (b, p, pr) in enumerate(rows)
            ],
        )

    def issues(self) -> None:
        self.issue_ids = bulk_ids("a1M", 0, N_ISSUES)
        self.w.insert(
            "Issue__c",
            ("Id", "Name", "Description__c"),
            [(self.issue_ids[i], name, desc) for i, (name, desc) in enumerate(ISSUES)],
        )

    def knowledge(self) -> None:
        rng = stream(self.seed, "knowledge")
        self.params = draw_params(rng)
        self.policies = build_policies(COMPANY)
        p = {k: v for k, v in self.params.items()}
        articles: list[tuple[str, str, str, list[tuple[str, str]]]] = []  # title, summary, body, facts
        self.policy_article: dict[int, int] = {}
        for issue, pol in enumerate(self.policies):
            assert pol.issue == ISSUES[issue][0]
            rules = [r.text.format(**p) for r in pol.rules]
            body = (
                f"{pol.intro}\n\nPolicy rules:\n"
                + "\n".join(f"{i + 1}. {r}" for i, r in enumerate(rules))
                + f"\n\n{pol.closing}"
            )
            facts = [(q.format(**p), a.format(**p)) for q, a in pol.facts]
            self.policy_article[issue] = len(articles)
            articles.append((pol.title, pol.summary, body, facts))
        for title, summary, intro, facts in GENERAL_ARTICLES:
            sub = {"company": COMPANY}
            body = intro.format(**sub) + "\n\n" + " ".join(s.format(**sub) for _q, _a, s in facts)
            body += f"\n\nQuestions? Our support team at {COMPANY} is happy to help."
            articles.append((title.format(**sub), summary, body, [(q, a.format(**sub)) for q, a, _s in facts]))
        # Orgs other than the service org (fixed byte for byte at seed 0) add care-and-warranty facts of a few
        # products to each category's first guide, drawn from their own stream, so that a sibling org gives
        # knowledge questions no test set holds.
        care = stream(self.seed, "care") if self.seed != 0 else None
        for ci, guides in enumerate(CATEGORY_GUIDES):
            for gi, (title, summary, facts) in enumerate(guides):
                intro = f"{COMPANY} tested its {CATEGORIES[ci].name.lower()} range with athletes. {summary}"
                body = intro + "\n\n" + "\n".join(s for _q, _a, s in facts)
                pairs = [(q, a) for q, a, _s in facts]
                if care is not None and gi == 0:
                    members = [(prod.name, prod.material) for prod in self.products if prod.category == ci]
                    text, care_facts = care_section(members, care)
                    body += "\n\n" + text
                    pairs += care_facts
                body += f"\n\nBrowse the {CATEGORIES[ci].name} category for the full range."
                articles.append((title, summary, body, pairs))
        # Interleave policies with the other articles, as an editor would have published them.
        order = rng.permutation(len(articles))
        self.article_ids = bulk_ids("ka0", 0, len(articles))
        position = {int(a): pos for pos, a in enumerate(order.tolist())}
        rows = []
        kqa = []
        slugs: set[str] = set()
        for pos, a in enumerate(order.tolist()):
            title, summary, body, facts = articles[a]
            slug = _slug(title)
            while slug in slugs:
                slug += "-2"
            slugs.add(slug)
            rows.append((self.article_ids[pos], title, body, summary, slug, "Online", "en_US"))
            for q, ans in facts:
                if ans not in body:
                    raise AssertionError(f"fact answer {ans!r} is missing from article {title!r}")
                kqa.append({"article_id": self.article_ids[pos], "question": q, "answer": ans})
        self.w.insert(
            "Knowledge__kav",
            ("Id", "Title", "FAQ_Answer__c", "Summary", "UrlName", "PublishStatus", "Language"),
            rows,
        )
        self.policy_article_id = {i: self.article_ids[position[a]] for i, a in self.policy_article.items()}
        kqa.sort(key=lambda f: (f["article_id"], f["question"]))
        self.lat_json["kqa_facts"] = kqa
        self.lat_json["policy_params"] = self.params
        self.lat_json["policy_articles"] = {self.issue_ids[i]: aid for i, aid in self.policy_article_id.items()}
        self.lat_json["policy_rules"] = {
            self.policy_article_id[i]: [r.text.format(**p) for r in pol.rules] for i, pol in enumerate(self.policies)
        }

    # ---- latents and customers

    def draw_latent(self) -> None:
        rng = stream(self.seed, "latent")
        self.n_accounts = self.n("Account")
        self.lat: Latents = draw_latents(
            rng,
            latent=self.latent,
            n_accounts=self.n_accounts,
            active=self.product_active.astype(float),
            category_issue_prior=_CATEGORY_ISSUE_PRIOR[self.product_category],
            n_agents=N_AGENTS,
            n_states=len(STATES),
        )

    def customers(self) -> None:
        rng = stream(self.seed, "customers")
        n = self.n_accounts
        weights = np.array([s[1] for s in STATES])
        state = rng.choice(len(STATES), size=n, p=weights / weights.sum())
        city_u = rng.random(n)
        area_u = rng.random(n)
        first = rng.integers(len(FIRST_NAMES), size=n)
        last = rng.integers(len(LAST_NAMES), size=n)
        dom = rng.integers(len(CUSTOMER_EMAIL_DOMAINS), size=n)
        line = rng.integers(0, 10_000, size=n)
        self.account_ids = bulk_ids("001", 0, n)
        self.account_state = state
        used: dict[str, int] = {}

        def email(f: str, ln: str, d: int) -> str:
            base = f"{f}.{ln}".lower()
            k = used.get(base, 0)
            used[base] = k + 1
            return f"{base}{'' if k == 0 else k + 1}@{CUSTOMER_EMAIL_DOMAINS[d]}"

        record_type = bulk_ids("012", 0, 1)[0]
        acc_rows = []
        self.account_name: list[str] = []
        account_email: list[str] = []
        for i in range(n):
            code, _w, cities, areas = STATES[int(state[i])]
            f, ln = FIRST_NAMES[int(first[i])], LAST_NAMES[int(last[i])]
            e = email(f, ln, int(dom[i]))
            self.account_name.append(f"{f} {ln}")
            account_email.append(e)
            acc_rows.append(
                (
                    self.account_ids[i],
                    f,
                    ln,
                    e,
                    f"({areas[int(area_u[i] * len(areas))]}) 555-{int(line[i]):04d}",
                    record_type,
                    cities[int(city_u[i] * len(cities))],
                    code,
                )
            )
        self.w.insert(
            "Account",
            ("Id", "FirstName", "LastName", "PersonEmail", "Phone", "RecordTypeId", "ShippingCity", "ShippingState"),
            acc_rows,
        )
        # One contact per person account, and a household member for a few accounts.
        n_extra = min(n, max(0, self.n("Contact") - n))
        extra_acc = np.sort(rng.choice(n, size=n_extra, replace=False)) if n_extra else np.zeros(0, dtype=int)
        extra_first = rng.integers(len(FIRST_NAMES), size=n_extra)
        extra_dom = rng.integers(len(CUSTOMER_EMAIL_DOMAINS), size=n_extra)
        owner = rng.integers(N_AGENTS, size=n + n_extra)
        self.contact_ids = bulk_ids("003", 0, n + n_extra)
        self.contact_name = list(self.account_name)
        self.contact_email = list(account_email)
        self.contact_account = np.concatenate([np.arange(n), extra_acc]).astype(np.int64)
        for k, a in enumerate(extra_acc.tolist()):
            f = FIRST_NAMES[int(extra_first[k])]
            ln = self.account_name[a].split(" ", 1)[1]
            self.contact_name.append(f"{f} {ln}")
            self.contact_email.append(email(f, ln, int(extra_dom[k])))
        # second contact of each account, or -1
        self.account_second_contact = np.full(n, -1, dtype=np.int64)
        self.account_second_contact[extra_acc] = n + np.arange(n_extra)
        self.w.insert(
            "Contact",
            ("Id", "FirstName", "LastName", "Email", "AccountId", "OwnerId"),
            [
                (
                    self.contact_ids[c],
                    self.contact_name[c].split(" ", 1)[0],
                    self.contact_name[c].split(" ", 1)[1],
                    self.contact_email[c],
                    self.account_ids[int(self.contact_account[c])],
                    self.user_ids[int(owner[c])],
                )
                for c in range(n + n_extra)
            ],
        )

    def orders(self) -> None:
        rng = stream(self.seed, "orders")
        lat = self.lat
        n_orders = self.n("Order")
        n = self.n_accounts
        # Every customer orders at least once; the rest follows each customer's order rate.
        first = rng.permutation(n)[: min(n, n_orders)]
        rest = rng.choice(n, size=n_orders - len(first), p=lat.account_order_rate / lat.account_order_rate.sum())
        account = np.concatenate([first, rest])
        days = np.arange(ORDER_START, ORDER_END, dtype="datetime64[D]")
        month = days.astype("datetime64[M]").astype(np.int64) % 12
        day = np.empty(n_orders, dtype=np.int64)
        habit = lat.account_habit[account]
        for h in range(len(HABITS)):
            sel = np.flatnonzero(habit == h)
            w = lat.month_profiles[h][month]
            day[sel] = rng.choice(len(days), size=len(sel), p=w / w.sum())
        day_num = days.astype(np.int64)[day]
        order = np.lexsort((np.arange(n_orders), day_num))  # chronological ids
        self.order_account = account[order]
        self.order_day = day_num[order]
        self.order_active = rng.random(n_orders) >= 0.02
        # Price book: a sale book when one runs (most of the time), else the quarter's, sometimes the standard.
        book = np.zeros(n_orders, dtype=np.int64)
        u = rng.random(n_orders)
        for b, (_name, _desc, start, end, _m, kind) in enumerate(self.books):
            if kind == "standard":
                continue
            inside = (self.order_day >= start.astype("datetime64[D]").astype(np.int64)) & (
                self.order_day < end.astype("datetime64[D]").astype(np.int64)
            )
            if kind == "quarter":
                book[inside & (book == 0) & (u >= 0.1)] = b
            else:
                book[inside & (u < 0.8)] = b
        self.order_book = book
        self.order_ids = bulk_ids("801", 0, n_orders)
        self.w.insert(
            "Order",
            ("Id", "AccountId", "Status", "EffectiveDate", "Pricebook2Id"),
            zip(
                self.order_ids,
                [self.account_ids[a] for a in self.order_account.tolist()],
                ["Activated" if a else "Draft" for a in self.order_active.tolist()],
                _fmt_dates(self.order_day),
                [self.book_ids[b] for b in book.tolist()],
                strict=True,
            ),
        )
        # Items: at least one per order, the rest spread at random; products by popularity.
        n_items = max(self.n("OrderItem"), n_orders)
        counts = 1 + rng.multinomial(n_items - n_orders, np.full(n_orders, 1.0 / n_orders))
        item_order = np.repeat(np.arange(n_orders), counts)
        pop = lat.product_popularity
        product = rng.choice(len(pop), size=n_items, p=pop / pop.sum())
        active_idx = np.flatnonzero(self.product_active)
        for _ in range(4):  # re-draw a product bought twice in one order
            key = item_order * 10_000 + product
            srt = np.argsort(key, kind="stable")
            dup = np.zeros(n_items, dtype=bool)
            dup[srt[1:]] = key[srt[1:]] == key[srt[:-1]]
            if not dup.any():
                break
            product[dup] = active_idx[rng.integers(len(active_idx), size=int(dup.sum()))]
        quantity = rng.choice([1.0, 2.0, 3.0], size=n_items, p=[0.8, 0.15, 0.05])
        entry = self.entry_index[book[item_order], product]
        assert (entry >= 0).all()
        price = self.entry_price[book[item_order], product]
        self.item_order = item_order
        self.item_product = product
        self.n_items = n_items
        chunk = 200_000
        for start in range(0, n_items, chunk):
            stop = min(n_items, start + chunk)
            ids = bulk_ids("802", start, stop - start)
            self.w.insert(
                "OrderItem",
                ("Id", "OrderId", "Product2Id", "Quantity", "UnitPrice", "PriceBookEntryId"),
                zip(
                    ids,
                    [self.order_ids[o] for o in item_order[start:stop].tolist()],
                    [self.product_ids[p] for p in product[start:stop].tolist()],
                    quantity[start:stop].tolist(),
                    np.round(price[start:stop], 2).tolist(),
                    [self.entry_ids[e] for e in entry[start:stop].tolist()],
                    strict=True,
                ),
            )

    # ---- cases and everything hanging off them

    def cases(self) -> None:
        rng = stream(self.seed, "cases")
        lat = self.lat
        n_cases = self.n("Case")
        item_account = self.order_account[self.item_order]
        weight = lat.account_complaint[item_account] * self.order_active[self.item_order]
        items = _gumbel_top_k(rng, weight, n_cases)
        n_cases = len(items)
        delay = 1 + np.minimum(np.floor(np.exp(np.log(4.0) + 0.8 * rng.standard_normal(n_cases))), 45).astype(np.int64)
        hour = rng.choice(np.arange(8, 20), size=n_cases)
        minute = 5 * rng.integers(0, 12, size=n_cases)
        second = np.where(rng.random(n_cases) < 0.1, rng.integers(0, 60, size=n_cases), 0)
        created = (self.order_day[self.item_order[items]] + delay) * _DAY + hour * 3600 + minute * 60 + second
        order = np.lexsort((items, created))
        items, created = items[order], created[order]
        account = item_account[items]
        product = self.item_product[items]
        second_contact = self.account_second_contact[account]
        use_second = (second_contact >= 0) & (rng.random(n_cases) < 0.5)
        contact = np.where(use_second, second_contact, account)
        issue = _choice_rows(rng, lat.product_issue[product])

        # Routing by skill, transfers by habit (to someone else, again by skill).
        def route(current: np.ndarray | None) -> np.ndarray:
            out = np.empty(n_cases, dtype=np.int64)
            for i in range(N_ISSUES):
                sel = np.flatnonzero(issue == i)
                p = lat.agent_skill[:, i]
                out[sel] = rng.choice(N_AGENTS, size=len(sel), p=p / p.sum())
            if current is not None:
                same = out == current
                out[same] = (current[same] + 1 + rng.integers(N_AGENTS - 1, size=int(same.sum()))) % N_AGENTS
            return out

        first_agent = route(None)
        second_agent = route(first_agent)
        third_agent = route(second_agent)
        t1 = rng.random(n_cases) < lat.agent_transfer[first_agent]
        t2 = t1 & (rng.random(n_cases) < 0.5 * lat.agent_transfer[second_agent])
        owner = np.where(t2, third_agent, np.where(t1, second_agent, first_agent))
        n_transfers = t1.astype(np.int64) + t2

        # Conversations: chat only, email only, both, or neither (a phone call).
        kind = rng.choice(4, size=n_cases, p=[0.13, 0.17, 0.66, 0.04])
        has_chat = (kind == 0) | (kind == 2)
        has_email = (kind == 1) | (kind == 2)
        channel = np.empty(n_cases, dtype=object)
        channel[kind == 0] = "Chat"
        channel[kind == 1] = "Email"
        both = np.flatnonzero(kind == 2)
        channel[both] = np.array(["Chat", "Web", "Email"], dtype=object)[
            rng.choice(3, size=len(both), p=[0.45, 0.35, 0.2])
        ]
        none = np.flatnonzero(kind == 3)
        channel[none] = np.array(["Phone", "Social Media"], dtype=object)[rng.choice(2, size=len(none), p=[0.7, 0.3])]

        # Handle time: the medium sets the base; agent speed and the region scale it; transfers add.
        z = rng.standard_normal(n_cases)
        base = np.where(kind == 0, np.exp(np.log(25 * 60) + 0.35 * z), np.exp(np.log(5 * 3600) + 0.7 * z))
        state = self.account_state[account]
        extra = n_transfers * np.exp(np.log(90 * 60) + 0.5 * rng.standard_normal(n_cases))
        duration = np.maximum(np.round(base * lat.agent_speed[owner] * lat.state_speed[state] + extra), 300).astype(
            np.int64
        )
        recent = created > created.max() - 45 * _DAY
        closed = rng.random(n_cases) >= np.where(recent, 0.55, 0.05)
        closed_at = created + duration
        frac = np.sort(rng.uniform(0.03, 0.35, size=(n_cases, 2)), axis=1)
        tr1 = created + np.maximum(60, (duration * frac[:, 0]).astype(np.int64))
        tr2 = np.maximum(tr1 + 60, created + (duration * frac[:, 1]).astype(np.int64))
        last_assign = np.where(t2, tr2, np.where(t1, tr1, created))
        open_status = np.array(["New", "Working", "Escalated", "Waiting on Customer"], dtype=object)[
            rng.choice(4, size=n_cases, p=[0.25, 0.35, 0.15, 0.25])
        ]
        status = np.where(closed, "Closed", open_status)
        prio = np.empty(n_cases, dtype=np.int64)
        for i in range(N_ISSUES):
            sel = np.flatnonzero(issue == i)
            prio[sel] = rng.choice(4, size=len(sel), p=_PRIORITY_BY_ISSUE.get(i, _DEFAULT_PRIORITY))

        # Policy violations: the final owner's habit decides; one rule of the issue's policy.
        transcript = has_chat | has_email
        violating = transcript & (rng.random(n_cases) < lat.agent_violation[owner])
        rule = rng.integers(0, 3, size=n_cases)
        in_chat = np.where(has_chat & has_email, rng.random(n_cases) < 0.5, has_chat)
        n_mails = rng.choice([2, 3, 4, 5, 6], size=n_cases, p=[0.12, 0.2, 0.35, 0.2, 0.13])
        text_seed = int(rng.integers(2**62))

        self.case_ids = bulk_ids("500", 0, n_cases)
        self._write_cases(
            items=items,
            created=created,
            account=account,
            contact=contact,
            product=product,
            issue=issue,
            status=status,
            closed=closed,
            closed_at=closed_at,
            channel=channel,
            prio=prio,
            owner=owner,
        )
        self._write_history(
            created=created,
            closed=closed,
            closed_at=closed_at,
            agents=(first_agent, second_agent, third_agent),
            t1=t1,
            t2=t2,
            tr1=tr1,
            tr2=tr2,
        )
        self._write_conversations(
            text_seed=text_seed,
            created=created,
            closed=closed,
            closed_at=closed_at,
            last_assign=last_assign,
            account=account,
            contact=contact,
            product=product,
            issue=issue,
            owner=owner,
            items=items,
            has_chat=has_chat,
            has_email=has_email,
            violating=violating,
            rule=rule,
            in_chat=in_chat,
            n_mails=n_mails,
        )
        self._store_latents(created=created)

    def _write_cases(self, **a: Any) -> None:
        n_cases = len(a["items"])
        rand = Rand(int(stream(self.seed, "case_text").integers(2**62)))
        created_s = _fmt_datetimes(a["created"])
        closed_s = _fmt_datetimes(a["closed_at"])
        self.case_subject: list[str] = []
        self.case_description: list[str] = []
        item_ids = ids_for("802", a["items"])
        rows = []
        for c in range(n_cases):
            p = int(a["product"][c])
            subject, description = case_text(rand, int(a["issue"][c]), self.products[p].name)
            self.case_subject.append(subject)
            self.case_description.append(description)
            rows.append(
                (
                    self.case_ids[c],
                    _PRIORITIES[int(a["prio"][c])],
                    subject,
                    description,
                    a["status"][c],
                    a["channel"][c],
                    self.contact_ids[int(a["contact"][c])],
                    created_s[c],
                    closed_s[c] if a["closed"][c] else None,
                    item_ids[c],
                    self.issue_ids[int(a["issue"][c])],
                    self.account_ids[int(a["account"][c])],
                    self.user_ids[int(a["owner"][c])],
                )
            )
        self.w.insert(
            "Case",
            (
                "Id",
                "Priority",
                "Subject",
                "Description",
                "Status",
                "Channel",
                "ContactId",
                "CreatedDate",
                "ClosedDate",
                "OrderItemId__c",
                "IssueId__c",
                "AccountId",
                "OwnerId",
            ),
            rows,
        )

    def _write_history(self, **a: Any) -> None:
        created, closed, closed_at = a["created"], a["closed"], a["closed_at"]
        first, second, third = a["agents"]
        t1, t2, tr1, tr2 = a["t1"], a["t2"], a["tr1"], a["tr2"]
        n_cases = len(created)
        # Events per case, in time order: creation, first assignment, transfers, closure.
        case_idx = [np.arange(n_cases)] * 2 + [np.flatnonzero(t1), np.flatnonzero(t2), np.flatnonzero(closed)]
        kinds = [0, 1, 2, 3, 4]
        ev_case = np.concatenate(case_idx)
        ev_kind = np.concatenate([np.full(len(ix), k) for k, ix in zip(kinds, case_idx, strict=True)])
        order = np.lexsort((ev_kind, ev_case))
        ev_case, ev_kind = ev_case[order], ev_kind[order]
        when = np.select(
            [ev_kind <= 1, ev_kind == 2, ev_kind == 3],
            [created[ev_case], tr1[ev_case], tr2[ev_case]],
            closed_at[ev_case],
        )
        old = np.select([ev_kind == 2, ev_kind == 3], [first[ev_case], second[ev_case]], -1)
        new = np.select(
            [ev_kind == 1, ev_kind == 2, ev_kind == 3], [first[ev_case], second[ev_case], third[ev_case]], -1
        )
        field = np.array(["Case Creation", "Owner Assignment", "Owner Assignment", "Owner Assignment", "Case Closed"])
        ids = bulk_ids("a1N", 0, len(ev_case))
        users = self.user_ids
        self.w.insert(
            "CaseHistory__c",
            ("Id", "CaseId__c", "OldValue__c", "NewValue__c", "CreatedDate", "Field__c"),
            zip(
                ids,
                [self.case_ids[c] for c in ev_case.tolist()],
                [users[o] if o >= 0 else None for o in old.tolist()],
                [users[v] if v >= 0 else None for v in new.tolist()],
                _fmt_datetimes(when),
                field[ev_kind].tolist(),
                strict=True,
            ),
        )

    def _write_conversations(self, **a: Any) -> None:
        rand = Rand(a["text_seed"])
        params = self.params
        n_cases = len(a["created"])
        chat_rows: list[tuple[Any, ...]] = []
        mail_rows: list[tuple[Any, ...]] = []
        n_chat = n_mail = 0
        violations: dict[str, dict[str, Any]] = {}
        clean: list[str] = []
        chat_cols = ("Id", "CaseId", "AccountId", "OwnerId", "Body", "EndTime", "LiveChatVisitorId", "ContactId")
        mail_cols = ("Id", "Subject", "TextBody", "ParentId", "FromAddress", "ToAddress", "ToIds", "MessageDate")

        def flush(final: bool = False) -> None:
            nonlocal n_chat, n_mail
            if chat_rows and (final or len(chat_rows) >= 20_000):
                ids = bulk_ids("570", n_chat, len(chat_rows))
                visitors = bulk_ids("571", n_chat, len(chat_rows))
                self.w.insert(
                    "LiveChatTranscript",
                    chat_cols,
                    [(ids[k], *r[:5], visitors[k], r[5]) for k, r in enumerate(chat_rows)],
                )
                n_chat += len(chat_rows)
                chat_rows.clear()
            if mail_rows and (final or len(mail_rows) >= 50_000):
                ids = bulk_ids("02s", n_mail, len(mail_rows))
                self.w.insert("EmailMessage", mail_cols, [(ids[k], *r) for k, r in enumerate(mail_rows)])
                n_mail += len(mail_rows)
                mail_rows.clear()

        for c in range(n_cases):
            has_chat, has_email = bool(a["has_chat"][c]), bool(a["has_email"][c])
            if not (has_chat or has_email):
                continue
            issue, owner, contact = int(a["issue"][c]), int(a["owner"][c]), int(a["contact"][c])
            d = Dialogue(
                company=COMPANY,
                customer=self.contact_name[contact],
                agent=self.user_name[owner],
                product=self.products[int(a["product"][c])].name,
                order_id=self.order_ids[int(self.item_order[int(a["items"][c])])],
                issue=issue,
            )
            rule = self.policies[issue].rules[int(a["rule"][c])]
            violating = bool(a["violating"][c])
            values = rule.values(rand, params, violating)
            fill = {**params, **values, "product": d.product, "cfirst": d.cfirst}
            ask = rule.ask.format(**fill)
            reply = (rule.violate if violating else rule.comply).format(**fill)
            case_id = self.case_ids[c]
            if violating:
                violations[case_id] = {
                    "article_id": self.policy_article_id[issue],
                    "rule": int(a["rule"][c]),
                    "evidence": reply,
                    "medium": "chat" if a["in_chat"][c] else "email",
                }
            else:
                clean.append(case_id)
            closed = bool(a["closed"][c])
            start0 = int(a["last_assign"][c])
            end = int(a["closed_at"][c]) if closed else None
            if has_chat:
                chat_ask, chat_reply = (ask, reply) if a["in_chat"][c] else neutral_exchange(rand)
                remaining = (end - start0) if end is not None else 3600
                start = start0 + min(30 + int(rand.random() * 210), remaining // 10)
                budget = int(0.85 * (end - start)) if end is not None else None
                body, chat_end = chat_body(rand, d, chat_ask, chat_reply, start, budget)
                chat_rows.append(
                    (
                        case_id,
                        self.account_ids[int(a["account"][c])],
                        self.user_ids[owner],
                        body,
                        _fmt_datetimes(np.array([chat_end]))[0],
                        self.contact_ids[contact],
                    )
                )
            if has_email:
                mail_ask, mail_reply = (ask, reply) if not a["in_chat"][c] else neutral_exchange(rand)
                msgs = email_thread(
                    rand,
                    d,
                    self.case_subject[c],
                    self.case_description[c],
                    mail_ask,
                    mail_reply,
                    int(a["n_mails"][c]),
                )
                remaining = (end - start0) if end is not None else 2 * _DAY
                start = start0 + min(60 + int(rand.random() * 1800), remaining // 10)
                budget = int(0.95 * (end - start)) if end is not None else None
                times = spread_times(rand, start, len(msgs), budget, 600, 5 * 3600)
                stamps = _fmt_datetimes(np.array(times))
                agent_email, cust_email = self.user_email[owner], self.contact_email[contact]
                agent_id, cust_id = self.user_ids[owner], self.contact_ids[contact]
                for (from_agent, subject, body), stamp in zip(msgs, stamps, strict=True):
                    if from_agent:
                        frm, to, to_id = agent_email, cust_email, cust_id
                    else:
                        frm, to, to_id = cust_email, agent_email, agent_id
                    mail_rows.append((subject, body, case_id, frm, to, json.dumps([to_id]), stamp))
            if c % 2000 == 0:
                flush()
                self.progress("conversations", self._span[0] + self._span[1] * c / n_cases)
        flush(final=True)
        self.lat_json["violations"] = violations
        self.lat_json["clean_cases"] = clean

    def _store_latents(self, created: np.ndarray) -> None:
        lat = self.lat
        r = lambda x: round(float(x), 6)  # noqa: E731 - short local formatter
        users, issues, products = self.user_ids, self.issue_ids, self.product_ids
        self.first_case, self.last_case = _fmt_datetimes(np.array([created.min(), created.max()]))
        self.lat_json.update(
            {
                "company": COMPANY,
                "month_profiles": {HABITS[h]: [r(x) for x in lat.month_profiles[h]] for h in range(len(HABITS))},
                "account_habit": {self.account_ids[i]: HABITS[int(h)] for i, h in enumerate(lat.account_habit)},
                "account_order_rate": {self.account_ids[i]: r(x) for i, x in enumerate(lat.account_order_rate)},
                "account_complaint": {self.account_ids[i]: r(x) for i, x in enumerate(lat.account_complaint)},
                "product_popularity": {products[i]: r(x) for i, x in enumerate(lat.product_popularity)},
                "product_issue_propensity": {
                    products[p]: {issues[i]: r(lat.product_issue[p, i]) for i in range(N_ISSUES)}
                    for p in range(len(products))
                },
                "agent_skill": {
                    users[a]: {issues[i]: r(lat.agent_skill[a, i]) for i in range(N_ISSUES)} for a in range(N_AGENTS)
                },
                "issue_experts": {issues[i]: [users[int(a)] for a in lat.experts[i]] for i in range(N_ISSUES)},
                "agent_speed": {users[a]: r(lat.agent_speed[a]) for a in range(N_AGENTS)},
                "agent_transfer_rate": {users[a]: r(lat.agent_transfer[a]) for a in range(N_AGENTS)},
                "agent_violation_rate": {users[a]: r(lat.agent_violation[a]) for a in range(N_AGENTS)},
                "state_closure_speed": {STATES[s][0]: r(lat.state_speed[s]) for s in range(len(STATES))},
            }
        )

    def run(self) -> dict[str, Any]:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("users", self.users),
            ("catalog", self.catalog),
            ("pricebooks", self.pricebooks),
            ("issues", self.issues),
            ("knowledge", self.knowledge),
            ("latent", self.draw_latent),
            ("customers", self.customers),
            ("orders", self.orders),
            ("cases", self.cases),
        ]
        for k, (name, step) in enumerate(steps):
            # Steps share the first 90% of the bar; hashing and saving take the rest.
            self._span = (0.9 * k / len(steps), 0.9 / len(steps))
            self.progress(name, self._span[0])
            step()
        return self.lat_json


def generate_org(
    path: str | os.PathLike[str],
    *,
    kind: str = DEFAULT_KIND,
    seed: int = 0,
    scale: float = 1.0,
    latent: bool = True,
    progress: Progress | None = None,
    knobs: Any = None,
) -> Manifest:
    """Generate a synthetic org of one kind into a SQLite file.

    The file is written to a temporary name in the same directory and renamed into place, so
    ``path`` never holds a half-written org. An existing file at ``path`` is replaced.

    Args:
        path: Where to write the org (parent directories are created).
        kind: The org kind: ``service`` (the default: CRMArena's sportswear store, in the original dump's
            layout), ``b2b`` or ``b2c`` (CRMArena-Pro's software vendor and vehicle dealership; see
            ``crmarena_gym.datagen._pro``).
        seed: Any non-negative integer; the same kind, seed and scale give the same content hash.
        scale: Customer-facing volume relative to the original org (0.05 to 1000).
        latent: Draw the latent variables (False: every latent flat, see ``crmarena_gym.datagen``).
        progress: Called as ``progress(stage, fraction)`` while generating, with fraction in [0, 1].
        knobs: For a Pro kind, a :class:`~crmarena_gym.datagen.ProKnobs` (rates of the planted labels);
            None: the defaults. The service kind takes none.

    Returns:
        The :class:`Manifest` stored in the file.

    Raises:
        ValueError: ``kind``, ``seed``, ``scale``, ``latent`` or ``knobs`` is invalid (the message quotes it).
        OSError: The file cannot be written (a full disk, a read-only directory); the message names it.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
        >>> generate_org(out, seed=1, scale=0.05).row_counts["Issue__c"]
        10
    """
    kind = check_kind(kind)
    seed, scale = validate_seed_scale(seed, scale)
    if not isinstance(latent, bool):
        raise ValueError(f"latent must be True or False, got {latent!r}")
    if kind == DEFAULT_KIND and knobs is not None:
        raise ValueError(f"knobs set the planted rates of the Pro kinds (b2b, b2c); the {kind} org takes none")
    if kind != DEFAULT_KIND:
        from crmarena_gym.datagen._pro import check_knobs

        knobs = check_knobs(knobs)
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"cannot write an org to {str(target)!r}: it is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    schema = org_schema(kind)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")
            create_tables(conn, kind)
            conn.execute("BEGIN")
            writer = _Writer(conn, schema)
            hidden: dict[str, int] = {}
            if kind == DEFAULT_KIND:
                org = _Org(seed, scale, latent, writer, progress)
                latents = org.run()
                company, first_case, last_case = COMPANY, org.first_case, org.last_case
                counts = {t: writer.counts.get(t, 0) for t in ORIGINAL_ROW_COUNTS}
            else:
                from crmarena_gym.datagen._pro import build_pro

                built = build_pro(
                    kind, seed=seed, scale=scale, latent=latent, writer=writer, progress=progress, knobs=knobs
                )
                latents, hidden = built.latents, built.hidden_row_counts
                company, first_case, last_case = built.company, built.first_case, built.last_case
                counts = {o.name: writer.counts.get(o.name, 0) for o in schema.objects}
            if progress:
                progress("hashing", 0.9)
            manifest = Manifest(
                generator_version=GENERATOR_VERSIONS[kind],
                seed=seed,
                scale=scale,
                latent=latent,
                company=company,
                row_counts=counts,
                content_hash=content_hash(conn, kind, tuple(hidden)),
                first_case=first_case,
                last_case=last_case,
                kind=kind,
                hidden_row_counts=hidden,
            )
            write_meta(conn, manifest, latents)
            conn.execute("COMMIT")
            create_indexes(conn, kind)
        finally:
            conn.close()
        # mkstemp creates the file private (0600); an org file is ordinary data, readable per the umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except sqlite3.Error as exc:  # "database or disk is full", "disk I/O error" ...
        tmp.unlink(missing_ok=True)
        raise OSError(errno.EIO, f"cannot write the org to {str(target)!r}: {exc}", str(target)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if progress:
        progress("done", 1.0)
    return manifest
