"""The ten store policies: one per issue, each with three concrete rules.

Every rule carries the sentence the knowledge article states, a customer question that leads to it,
what a compliant agent says, and what an agent who breaks the rule says. Numbers (days, fees,
points) are drawn per seed, so the articles and the transcripts always agree with each other but
differ between orgs. The policy-violation task asks which article an agent's reply contradicts.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from crmarena_gym.datagen._rand import Rand
from crmarena_gym.datagen._text import COMPANY, template_regex

Values = dict[str, Any]


@dataclass(frozen=True)
class Rule:
    """One rule of a policy.

    Attributes:
        text: The article sentence, formatted with the policy parameters.
        ask: What the customer says that leads to the rule, formatted with the case values.
        comply: A compliant agent reply.
        violate: A reply that breaks the rule.
        values: ``(rand, params, violating) -> dict`` of case-specific numbers for the templates.
    """

    text: str
    ask: str
    comply: str
    violate: str
    values: Callable[[Rand, Values, bool], Values]


@dataclass(frozen=True)
class Policy:
    """A policy article's content: title, summary, intro and rules, plus extra facts for questions."""

    issue: str
    title: str
    summary: str
    intro: str
    rules: tuple[Rule, ...]
    closing: str
    facts: tuple[tuple[str, str], ...]  # (question, answer): the answer is a verbatim part of a rule text


def _none(_rng: Rand, _p: Values, _v: bool) -> Values:
    return {}


def _past(key: str, limit: str, lo_over: int, hi_over: int, lo_in: int = 1) -> Callable[..., Values]:
    """A number beyond ``limit`` when violating, within it otherwise."""

    def f(rng: Rand, p: Values, violating: bool) -> Values:
        bound = int(p[limit])
        if violating:
            return {key: bound + int(rng.integers(lo_over, hi_over + 1))}
        return {key: int(rng.integers(lo_in, bound + 1))}

    return f


def _credit_window(rng: Rand, p: Values, violating: bool) -> Values:
    lo, hi = int(p["return_days"]) + 1, int(p["credit_days"])
    return {"days": int(rng.integers(lo, hi + 1))}


def _late_shipping(rng: Rand, p: Values, violating: bool) -> Values:
    late = int(p["late_days"])
    n = int(rng.integers(1, late + 1)) if violating else late + int(rng.integers(1, 4))
    return {"late": n, "late_unit": "business day" if n == 1 else "business days"}


def _voucher(rng: Rand, p: Values, violating: bool) -> Values:
    return {"voucher": int(rng.choice([15, 20, 25, 30, 40, 50]))}


def _size(rng: Rand, p: Values, violating: bool) -> Values:
    return {"size": str(rng.choice(["S", "M", "L", "XL", "8", "9", "10", "11", "7.5", "10.5"]))}


def _promo(rng: Rand, p: Values, violating: bool) -> Values:
    return {"code": str(rng.choice(["SPRING15", "PEAK20", "WELCOME10", "TRAIL25", "HOLIDAY30", "RUN10"]))}


def _partial(rng: Rand, p: Values, violating: bool) -> Values:
    cap = int(p["partial_pct"])
    pct = cap + 5 * int(rng.integers(2, 8)) if violating else 5 * int(rng.integers(1, cap // 5 + 1))
    return {"pct": pct}


def _restock_date(rng: Rand, p: Values, violating: bool) -> Values:
    month = str(rng.choice(["the 3rd", "the 10th", "the 15th", "the 21st", "the 28th", "next Monday", "next Friday"]))
    return {"when": month}


def _goodwill(rng: Rand, p: Values, violating: bool) -> Values:
    cap = int(p["goodwill_points"])
    pts = cap + 250 * int(rng.integers(2, 9)) if violating else 50 * int(rng.integers(1, cap // 50 + 1))
    return {"points": f"{pts:,}"}


def _months_late(rng: Rand, p: Values, violating: bool) -> Values:
    w = int(p["warranty_months"])
    return {"months": w + int(rng.integers(2, 10)) if violating else int(rng.integers(2, w))}


def _hours(rng: Rand, p: Values, violating: bool) -> Values:
    return {"hours": int(p["cancel_hours"]) + int(rng.integers(3, 40))}


#: Parameter choices: each org draws one value per key.
PARAM_CHOICES: dict[str, tuple[Any, ...]] = {
    "return_days": (30, 45, 60),
    "cancel_hours": (2, 6, 12),
    "refund_bd": (3, 5, 7),
    "warranty_months": (12, 18, 24),
    "late_days": (3, 4, 5),
    "ship_fee": ("6.95", "7.95", "8.95"),
    "exchange_days": (30, 45, 60),
    "exchange_fee": ("5", "8", "10"),
    "price_adjust_days": (7, 10, 14),
    "defect_days": (60, 90, 120),
    "partial_pct": (15, 20, 25),
    "backorder_weeks": (3, 4, 6),
    "wrong_days": (7, 10, 14),
    "expiry_months": (12, 18, 24),
    "goodwill_points": (200, 250, 500),
}


def draw_params(rng: np.random.Generator) -> Values:
    """One value per policy parameter (and the derived ones).

    Example:
        >>> p = draw_params(np.random.default_rng(0))
        >>> p["credit_days"] - p["return_days"]
        30
    """
    p: Values = {k: v[int(rng.integers(len(v)))] for k, v in PARAM_CHOICES.items()}
    p["credit_days"] = int(p["return_days"]) + 30
    return p


def build_policies(company: str) -> tuple[Policy, ...]:
    """The ten policies, in the order of the issues they govern. Texts still hold ``{param}`` fields."""
    c = company
    return (
        Policy(
            "Incorrect Item Received",
            f"Wrong Item Shipments: How {c} Makes It Right",
            "What happens when a package holds a different item from the one ordered: reporting window, "
            "prepaid return labels and when the correct item ships.",
            f"Mistakes in the warehouse are rare, but when {c} ships the wrong item we fix it at our cost.",
            (
                Rule(
                    "Customers never pay to return an item we sent in error; we email a prepaid return label.",
                    "Do I have to pay to send the wrong item back?",
                    "Not at all: I've emailed you a prepaid return label for the item we sent by mistake.",
                    "Please ship the incorrect item back at your own expense and keep the postage receipt.",
                    _none,
                ),
                Rule(
                    "A wrong item must be reported within {wrong_days} days of delivery.",
                    "The package was delivered {days} days ago and the item inside isn't what I ordered.",
                    "Thanks for telling us within {wrong_days} days of delivery; I've started the replacement.",
                    "You're reporting this {days} days after delivery, but I've started the replacement anyway.",
                    _past("days", "wrong_days", 3, 25),
                ),
                Rule(
                    "The correct item ships as soon as the carrier scans the returned wrong item, never before.",
                    "Can you send the right {product} now? I need it soon.",
                    "The correct {product} will ship the moment the carrier scans your return.",
                    "I'm shipping the correct {product} today, before the wrong item is scanned by the carrier.",
                    _none,
                ),
            ),
            "Keep the wrong item in its original packaging until the label arrives.",
            (
                ("Within how many days of delivery must a wrong item be reported?", "{wrong_days} days"),
                ("What do we email customers who received an item sent in error?", "a prepaid return label"),
                (
                    "When does the correct item ship after a wrong item is sent?",
                    "as soon as the carrier scans the returned wrong item",
                ),
            ),
        ),
        Policy(
            "Billing/Payment Issue",
            f"Billing, Payments and Promo Codes at {c}",
            "How we handle charges, promo codes and price drops, and the card details we never ask for.",
            f"{c} keeps payments simple and safe. These rules apply to every order placed online.",
            (
                Rule(
                    "Agents must never ask a customer for a full card number, security code or password.",
                    "I see a charge I don't recognise on my card. What do you need from me?",
                    "Please don't share card details here; the last four digits on your statement are enough.",
                    "Could you type your full card number and the security code here so I can find the charge?",
                    _none,
                ),
                Rule(
                    "Promo codes cannot be applied to an order after it has been placed.",
                    "I forgot to use my {code} code at checkout. Can you add it now?",
                    "I'm sorry, a code can't be added once an order is placed, but {code} will work next time.",
                    "No problem, I've applied {code} to your order retroactively and refunded the difference.",
                    _promo,
                ),
                Rule(
                    "If a product's price drops within {price_adjust_days} days of purchase, "
                    "we refund the difference on request.",
                    "The {product} went on sale {days} days after I bought it. Can I get the difference back?",
                    "The price dropped {days} days after your purchase, so I've refunded the difference.",
                    "The price dropped {days} days after your purchase, and I've refunded the difference for you.",
                    _past("days", "price_adjust_days", 3, 20),
                ),
            ),
            "Refunds appear on the original payment method once the bank processes them.",
            (
                (
                    "Within how many days of purchase must a price drop happen to get the difference refunded?",
                    "{price_adjust_days} days",
                ),
                (
                    "Can a promo code be added after an order is placed?",
                    "cannot be applied to an order after it has been placed",
                ),
                (
                    "What must agents never ask a customer for?",
                    "a full card number, security code or password",
                ),
            ),
        ),
        Policy(
            "Return Policy Issue",
            f"Returns and Refunds at {c}",
            "Which items can be returned, for how long, and whether you get a refund or store credit.",
            f"We want you to love what you buy from {c}. If you don't, here is how returns work.",
            (
                Rule(
                    "Unworn, unwashed items with their original tags can be returned for a full refund "
                    "within {return_days} days of delivery.",
                    "I'd like to return my {product}. I've worn it a couple of times but it just isn't right.",
                    "Since the {product} has been worn it can't be refunded, but I can help you with fit advice.",
                    "I know the {product} has been worn a few times, but I've approved a full refund anyway.",
                    _none,
                ),
                Rule(
                    "After day {return_days} and up to day {credit_days} after delivery, returns earn store credit "
                    "only; after day {credit_days} we cannot accept a return.",
                    "It's been {days} days since the {product} was delivered. Can I still get my money back?",
                    "At {days} days after delivery the return qualifies for store credit, which I've issued.",
                    "It's been {days} days since delivery, but I'll process a full refund to your card this time.",
                    _credit_window,
                ),
                Rule(
                    "Items bought as final-sale clearance cannot be returned or exchanged.",
                    "The {product} was on clearance, final sale, but I'd like to send it back.",
                    "Final-sale clearance items can't be returned, so I'm unable to accept this one, I'm sorry.",
                    "The {product} was a final-sale clearance item, but I've made an exception and accepted "
                    "the return.",
                    _none,
                ),
            ),
            "Start a return from the Orders page of your account to get a prepaid label.",
            (
                (
                    "Within how many days of delivery can unworn items be returned for a full refund?",
                    "{return_days} days",
                ),
                ("What do returns made after the full-refund window earn?", "store credit only"),
                ("Can final-sale clearance items be returned?", "cannot be returned or exchanged"),
            ),
        ),
        Policy(
            "Product Defect",
            f"Defective Product Claims at {c}",
            "How to report a manufacturing defect, what evidence we need and what remedies are available.",
            f"Every {c} product is inspected, yet defects can slip through. This is how claims are handled.",
            (
                Rule(
                    "Defects reported within {defect_days} days of delivery qualify for a replacement or a full "
                    "refund.",
                    "The {product} started falling apart. I got it {days} days ago.",
                    "You reported it within {defect_days} days of delivery, so I've arranged a free replacement.",
                    "You're reporting the defect {days} days after delivery, but I've approved a full refund anyway.",
                    _past("days", "defect_days", 5, 60, lo_in=3),
                ),
                Rule(
                    "A claim is approved only after the customer sends a photo of the defect.",
                    "Do you need anything from me to process the claim for the {product}?",
                    "Could you send a photo of the defect? I'll approve the claim as soon as I see it.",
                    "No need to send a photo of the defect, I've already approved your claim.",
                    _none,
                ),
                Rule(
                    "A customer who keeps a defective item may be offered a partial refund of at most "
                    "{partial_pct}% of the price.",
                    "I'd rather keep the {product} if you can give me something back.",
                    "If you'd like to keep it, I can offer a {pct}% partial refund.",
                    "If you keep the {product}, I can refund {pct}% of the price right away.",
                    _partial,
                ),
            ),
            "Normal wear and damage from misuse are not manufacturing defects.",
            (
                ("Within how many days of delivery must a defect be reported to qualify?", "{defect_days} days"),
                ("What must a customer send before a defect claim is approved?", "a photo of the defect"),
                (
                    "What is the largest partial refund for keeping a defective item?",
                    "{partial_pct}% of the price",
                ),
            ),
        ),
        Policy(
            "Size Mismatch",
            f"Size Exchanges at {c}: Getting the Right Fit",
            "How free size exchanges work, what they cover and when a fee applies.",
            f"Fit matters for performance. {c} makes swapping sizes easy within these rules.",
            (
                Rule(
                    "Each item gets one free size exchange within {exchange_days} days of delivery; any further "
                    "exchange of the same item costs ${exchange_fee}.",
                    "This is the second time I need to swap the size of my {product}.",
                    "As this is a second exchange of the {product}, a ${exchange_fee} fee applies; I've set it up.",
                    "This is already the second exchange on your {product}, but I've waived the ${exchange_fee} fee.",
                    _none,
                ),
                Rule(
                    "Exchanges are for the same product in a different size only; a different model must be bought "
                    "separately.",
                    "Could I exchange the {product} for a different model instead of another size?",
                    "Exchanges cover another size of the same {product}, so I've set up size {size} for you.",
                    "I've swapped your {product} for a different, more expensive model at no extra cost.",
                    _size,
                ),
                Rule(
                    "The new size ships once the carrier scans the returned item, never before.",
                    "Can you send the size {size} now so I have it for the weekend?",
                    "As soon as the carrier scans your return, we'll ship size {size}.",
                    "I'm shipping size {size} today, before you send back the original {product}.",
                    _size,
                ),
            ),
            "Check the size chart on each product page before ordering.",
            (
                ("Within how many days of delivery is a size exchange free?", "{exchange_days} days"),
                ("How much does a further exchange of the same item cost?", "${exchange_fee}"),
                ("When does the new size ship?", "once the carrier scans the returned item"),
            ),
        ),
        Policy(
            "Shipping Delay",
            f"Shipping Delays and Compensation at {c}",
            "What we refund when an order arrives late, and what we cannot offer.",
            f"{c} promises a delivery date at checkout. When we miss it, these rules decide the compensation.",
            (
                Rule(
                    "If a standard order arrives more than {late_days} business days after the promised date, "
                    "the shipping fee is refunded.",
                    "My {product} is now {late} {late_unit} past the promised delivery date.",
                    "Your package is {late} {late_unit} past the promised date, so I've refunded the shipping fee.",
                    "Your package is only {late} {late_unit} late, but I've refunded your shipping fee anyway.",
                    _late_shipping,
                ),
                Rule(
                    "Delay compensation never exceeds the standard shipping fee of ${ship_fee}; no extra vouchers "
                    "or store credit are issued for a delay.",
                    "This delay ruined my plans. What will you do to make up for it?",
                    "I've refunded the ${ship_fee} shipping fee for the delay, and I'll keep tracking the package.",
                    "To make up for the delay, I've added a ${voucher} store credit to your account.",
                    _voucher,
                ),
                Rule(
                    "Free upgrades to express shipping are offered on replacement shipments only, not on delayed "
                    "original orders.",
                    "Can you speed up the delivery of my {product}?",
                    "I can't upgrade the original shipment, but I'll keep an eye on it and update you.",
                    "I've upgraded your delayed original order to express shipping at no charge.",
                    _none,
                ),
            ),
            "Tracking links are emailed when the order leaves our warehouse.",
            (
                ("What is the standard shipping fee?", "${ship_fee}"),
                (
                    "How late must a standard order be before its shipping fee is refunded?",
                    "more than {late_days} business days",
                ),
                ("Which shipments can get a free upgrade to express shipping?", "replacement shipments only"),
            ),
        ),
        Policy(
            "Product Availability",
            f"Stock, Backorders and Restocks at {c}",
            "What we can and cannot promise about sold-out items, backorders and restock dates.",
            f"Popular {c} items sell out quickly. These rules keep promises about stock honest.",
            (
                Rule(
                    "We cannot reserve or hold out-of-stock items for individual customers.",
                    "Can you hold a {product} for me when it comes back?",
                    "I can't hold one for you, but a back-in-stock alert on the product page will email you first.",
                    "I've put one {product} aside for you so it's reserved the moment it's back.",
                    _none,
                ),
                Rule(
                    "Agents must not promise a restock date; only the estimate on the product page may be shared.",
                    "When exactly will the {product} be back in stock?",
                    "I don't have a confirmed restock date; the product page shows the latest estimate.",
                    "I can promise the {product} will be back in stock on {when}.",
                    _restock_date,
                ),
                Rule(
                    "Backordered items ship within {backorder_weeks} weeks, and a backorder can be cancelled at no "
                    "cost any time before it ships.",
                    "If I backorder the {product}, can I still cancel later?",
                    "Backorders ship within {backorder_weeks} weeks and you can cancel at no cost before it ships.",
                    "Once a backorder is placed it can't be cancelled, so please be sure before you order.",
                    _none,
                ),
            ),
            "Sign up for back-in-stock alerts on any product page.",
            (
                ("Within how many weeks do backordered items ship?", "{backorder_weeks} weeks"),
                ("Can out-of-stock items be reserved for a customer?", "cannot reserve or hold out-of-stock items"),
                ("Where can customers see the latest restock estimate?", "the product page"),
            ),
        ),
        Policy(
            "Order Cancellation",
            f"Cancelling an Order at {c}",
            "When an order can still be cancelled, how refunds for cancellations are paid, and what cannot be "
            "cancelled.",
            f"Changed your mind? {c} lets you cancel, within these limits.",
            (
                Rule(
                    "An order can be cancelled free of charge within {cancel_hours} hours of being placed; after that "
                    "it is in fulfilment and must be returned once it arrives.",
                    "I placed my order {hours} hours ago and want to cancel the {product}.",
                    "The order is past the {cancel_hours}-hour window and in fulfilment, so please return it instead.",
                    "Your order was placed {hours} hours ago, past the window, but I've cancelled it free of charge.",
                    _hours,
                ),
                Rule(
                    "Refunds for cancelled orders go to the original payment method within {refund_bd} business days, "
                    "never as gift cards or cash.",
                    "How will I get my money back for the cancelled order?",
                    "The refund goes back to your original payment method within {refund_bd} business days.",
                    "Instead of refunding your card, I've issued the amount as a gift card so you get it right away.",
                    _none,
                ),
                Rule(
                    "Personalised items cannot be cancelled once production has started.",
                    "I ordered the {product} with a custom name print. Can I still cancel it?",
                    "Production on your personalised {product} has started, so I'm unable to cancel it.",
                    "Production on your personalised {product} has started, but I've cancelled it and refunded you.",
                    _none,
                ),
            ),
            "You can see whether an order is still cancellable on the Orders page of your account.",
            (
                ("Within how many hours can an order be cancelled free of charge?", "{cancel_hours} hours"),
                ("How long do refunds for cancelled orders take?", "{refund_bd} business days"),
                (
                    "When can personalised items no longer be cancelled?",
                    "once production has started",
                ),
            ),
        ),
        Policy(
            "Warranty Issue",
            f"The {c} Product Warranty",
            "What the warranty covers, for how long, and what a claim needs.",
            f"{c} stands behind its footwear and equipment with a limited warranty.",
            (
                Rule(
                    "Footwear and equipment are covered against manufacturing faults for {warranty_months} months "
                    "from the date of purchase.",
                    "I bought the {product} {months} months ago and it has stopped working properly.",
                    "The {product} is within the {warranty_months}-month warranty, so I've approved a free repair.",
                    "The {product} was bought {months} months ago, but I've approved a free warranty replacement.",
                    _months_late,
                ),
                Rule(
                    "Warranty periods cannot be extended or renewed, including after a replacement.",
                    "Will the replacement {product} come with a fresh warranty?",
                    "The replacement keeps the remainder of your original warranty period.",
                    "I've also extended the warranty on your {product} by an extra year at no charge.",
                    _none,
                ),
                Rule(
                    "A warranty claim needs proof of purchase, such as the order confirmation.",
                    "I can't find the receipt for my {product}. Can you still file the claim?",
                    "Could you share your order confirmation as proof of purchase so I can file the claim?",
                    "Don't worry about a receipt, I've filed the warranty claim without proof of purchase.",
                    _none,
                ),
            ),
            "Damage from misuse, accidents or normal wear is not covered.",
            (
                (
                    "How long are footwear and equipment covered against manufacturing faults?",
                    "{warranty_months} months",
                ),
                ("What does a warranty claim need?", "proof of purchase"),
                ("Can a warranty period be extended after a replacement?", "cannot be extended or renewed"),
            ),
        ),
        Policy(
            "Loyalty Program Inquiry",
            f"{c} Rewards: Program Terms",
            "How members earn and redeem points, when points expire and what agents can add.",
            f"Members of {c} Rewards earn points on every purchase.",
            (
                Rule(
                    "Members earn 1 point per dollar spent, and points expire {expiry_months} months after they are "
                    "earned; expired points cannot be reinstated.",
                    "Some of my points disappeared. Can you put them back?",
                    "Those points expired after {expiry_months} months, and expired points can't be restored.",
                    "Those points expired last month, but I've reinstated all of them to your account.",
                    _none,
                ),
                Rule(
                    "Points cannot be transferred between accounts.",
                    "Can I move my points to my partner's account?",
                    "Points stay with the account that earned them, so I can't move them to another account.",
                    "I've transferred your points to your partner's account as you asked.",
                    _none,
                ),
                Rule(
                    "Agents may add at most {goodwill_points} goodwill points per case.",
                    "I've had a lot of trouble with this order of the {product}. Is there anything you can do?",
                    "I've added {points} goodwill points to your account for the trouble.",
                    "I've added {points} bonus points to your account to make up for the trouble.",
                    _goodwill,
                ),
            ),
            "Every 100 points can be redeemed for a $5 reward at checkout.",
            (
                ("When do loyalty points expire?", "{expiry_months} months after they are earned"),
                ("How many points do members earn per dollar spent?", "1 point per dollar spent"),
                ("What are 100 points worth?", "a $5 reward"),
            ),
        ),
    )


# ---- reading a conversation and an article back


@dataclass(frozen=True)
class Breach:
    """A reply that breaks a rule, as :func:`read_breaches` finds it in a conversation.

    Attributes:
        policy: The policy's index in :func:`build_policies` (the issue's).
        rule: The rule's index in that policy.
        values: What the reply states for each field of its template (``{"days": "40"}``).
    """

    policy: int
    rule: int
    values: tuple[tuple[str, str], ...]


def _template_regex(template: str) -> re.Pattern[str]:
    """``template`` as a pattern found within a line: each ``{field}`` any text of the line (the same text where a
    field comes back), captured by its name."""
    return re.compile(template_regex(template, r"[^\n]+?"))


@functools.cache
def _policies() -> tuple[Policy, ...]:
    """The policies as the generator writes them for its company (COMPANY); their numbers are read, never known."""
    return tuple(build_policies(COMPANY))


@functools.cache
def _breaches() -> dict[tuple[int, int], tuple[re.Pattern[str], re.Pattern[str]]]:
    """Per rule (policy, rule): what breaking it sounds like, and how an article states it. Built at the first read:
    compiling them at import cost every command's start-up."""
    return {
        (p, r): (_template_regex(rule.violate), _template_regex(rule.text))
        for p, policy in enumerate(_policies())
        for r, rule in enumerate(policy.rules)
    }


def read_breaches(text: str) -> tuple[Breach, ...]:
    """The rules a conversation's text (a chat transcript, an email) has an agent break: each reply in the words of a
    rule's breaking reply (:attr:`Rule.violate`), as the generator writes them. A perfect reader of its
    conversations: a compliant reply (:attr:`Rule.comply`) or a neutral one breaks nothing.

    Example:
        >>> read_breaches("[2023-04-01T10:06:00] Ann Lee (Agent): I've transferred your points to your "
        ...               "partner's account as you asked.")
        (Breach(policy=9, rule=1, values=()),)
        >>> read_breaches("Not at all: I've emailed you a prepaid return label for the item we sent by mistake.")
        ()
    """
    found: list[Breach] = []
    for (policy, rule), (breaking, _stating) in _breaches().items():
        for match in breaking.finditer(text):
            found.append(Breach(policy, rule, tuple(sorted(match.groupdict().items()))))
    return tuple(dict.fromkeys(found))


def policy_title(breach: Breach) -> str:
    """The title of the policy whose rule ``breach`` broke, as the generator's article about it is titled (what a
    reader who recognised the rule searches the knowledge base for)."""
    return _policies()[breach.policy].title


def states_rule(article: str, breach: Breach) -> bool:
    """Whether an article's text states the rule ``breach`` broke (:attr:`Rule.text`, its numbers whatever the article
    gives), each value the breaking reply and the rule both name being the same."""
    stating = _breaches()[breach.policy, breach.rule][1]
    said = dict(breach.values)
    return any(
        all(said.get(name, value) == value for name, value in match.groupdict().items())
        for match in stating.finditer(article)
    )
