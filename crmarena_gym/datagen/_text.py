"""Text an agent reads: issue descriptions, case subjects and descriptions, chats and emails.

All templates are ours. Each case's text names its product and varies in phrasing, so that tasks
cannot be solved by matching fixed strings. A chat or email thread walks through one policy rule of
the case's issue; the agent's reply either follows the rule or breaks it (a policy violation).

Example:
    >>> from crmarena_gym.datagen._rand import Rand
    >>> subject, description = case_text(Rand(1), 4, "Women's Trail Running Shorts")
    >>> "Women's Trail Running Shorts" in subject + description
    True
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from crmarena_gym.datagen._rand import Rand

COMPANY = "Northpeak Athletics"
COMPANY_DOMAIN = "northpeakathletics.com"

#: The ten issues, exactly as the original benchmark names them, with our descriptions.
ISSUES: tuple[tuple[str, str], ...] = (
    ("Incorrect Item Received", "The package held a different product, size or colour from the one ordered."),
    ("Billing/Payment Issue", "Unexpected, duplicate or wrong charges, promo codes and refunds of the difference."),
    ("Return Policy Issue", "Questions or disputes about returning an item for a refund or store credit."),
    ("Product Defect", "The product arrived damaged or failed because of a manufacturing fault."),
    ("Size Mismatch", "The product does not fit as the size chart promised; exchanges for another size."),
    ("Shipping Delay", "The order is late or stuck in transit past the promised delivery date."),
    ("Product Availability", "The product is sold out, backordered or missing in the wanted size or colour."),
    ("Order Cancellation", "The customer wants to cancel an order, or could not cancel it online."),
    ("Warranty Issue", "Claims under the product warranty for faults that appear after some use."),
    ("Loyalty Program Inquiry", "Questions about rewards points: earning, redeeming, expiry and tiers."),
)

# Per issue: subject templates and description templates. {product} is the product's name.
_SUBJECTS: tuple[tuple[str, ...], ...] = (
    (
        "Incorrect Item Received",
        "Wrong item in my {product} order",
        "Received something other than the {product}",
        "Order mix-up: not the {product} I bought",
    ),
    (
        "Billing/Payment Issue",
        "Charged twice for the {product}",
        "Billing question about my {product} order",
        "Promo code not applied to {product}",
    ),
    (
        "Return Policy Issue",
        "Return request for {product}",
        "Can I still return the {product}?",
        "Question about returning my {product}",
    ),
    (
        "Product Defect",
        "Defective {product}",
        "{product} damaged after first use",
        "Quality problem with my {product}",
    ),
    (
        "Size Mismatch",
        "Size Mismatch for {product}",
        "{product} does not fit as the chart says",
        "Wrong fit on my {product}",
    ),
    (
        "Shipping Delay",
        "Where is my {product}?",
        "{product} delivery is late",
        "Shipping delay on order with {product}",
    ),
    (
        "Product Availability",
        "{product} out of stock",
        "When will the {product} be available again?",
        "Availability of {product} in my size",
    ),
    (
        "Order Cancellation",
        "Unable to Cancel Order for {product}",
        "Please cancel my {product} order",
        "Cancellation request: {product}",
    ),
    (
        "Warranty Issue",
        "Warranty claim for {product}",
        "{product} stopped working: warranty",
        "Is my {product} still under warranty?",
    ),
    (
        "Loyalty Program Inquiry",
        "Rewards points question after buying {product}",
        "Points missing for my {product} purchase",
        "How do I use my rewards points?",
    ),
)

_DESCRIPTIONS: tuple[tuple[str, ...], ...] = (
    (
        "I ordered the {product}, but the box contained a completely different item. I need the right one.",
        "The package that arrived today has someone else's item in it instead of my {product}.",
        "I received the wrong product. My order was for the {product} and what came is not even close.",
        "Instead of the {product} I was sent a different model in another colour. Please sort this out.",
    ),
    (
        "My card was charged twice for the {product}. Only one order was placed.",
        "The amount charged for the {product} is higher than the price shown at checkout.",
        "I entered a promo code when buying the {product}, but the discount was never taken off.",
        "I see a charge for the {product} on my statement after I was told the order was refunded.",
    ),
    (
        "I want to return the {product} but I'm not sure whether it still qualifies for a refund.",
        "The {product} isn't what I expected. What are my options for sending it back?",
        "I was refused a return for the {product} online and I don't understand why.",
        "Can I get my money back for the {product}, or only store credit?",
    ),
    (
        "The {product} came apart after only a few uses. The stitching gave way along the seam.",
        "My {product} arrived with a visible flaw: the material is torn near the logo.",
        "After a week, the {product} is already falling apart. This can't be normal wear.",
        "The {product} has a manufacturing fault: one part cracked the first time I used it.",
    ),
    (
        "The size chart said my usual size would fit, but the {product} is a full size too small.",
        "I ordered the {product} in my normal size and it is far too big. I need to exchange it.",
        "The {product} runs much smaller than the chart on the website. I need another size.",
        "The {product} fits nothing like the size guide suggested. Can I swap it for the right size?",
    ),
    (
        "My order with the {product} was supposed to arrive days ago and tracking hasn't moved.",
        "The {product} still hasn't been delivered, and the promised date has passed.",
        "Tracking for my {product} has said 'in transit' for a week. Where is it?",
        "I needed the {product} for an event and the delivery is now very late.",
    ),
    (
        "The {product} has been sold out in my size for weeks. Will it come back?",
        "I'm trying to buy another {product}, but the site says it's unavailable.",
        "The {product} shows as backordered. How long would I have to wait?",
        "I'd like to reserve a {product} before it sells out again.",
    ),
    (
        "I am unable to cancel my {product} order online, even though I placed it recently.",
        "I changed my mind about the {product} and need to cancel the order.",
        "The cancel button doesn't work for my order of the {product}. Please cancel it.",
        "I ordered the {product} by mistake and want to cancel before it ships.",
    ),
    (
        "My {product} stopped working properly and I'd like to make a warranty claim.",
        "The {product} developed a fault after a few months. Is it covered by the warranty?",
        "I'm having trouble filing a warranty claim for my {product}.",
        "The {product} broke during normal use. I'd like it repaired or replaced under warranty.",
    ),
    (
        "I didn't receive rewards points for my {product} purchase.",
        "How can I redeem my rewards points? I recently bought the {product}.",
        "Some of my points seem to have vanished since I bought the {product}.",
        "Can I combine my points with my family's account? I just bought the {product}.",
    ),
)

_OPENERS: tuple[tuple[str, ...], ...] = (
    (
        "Hi, I got my order today but it's not the {product} I ordered.",
        "Hello, the box I received has the wrong item in it. I ordered the {product}.",
        "Hi there, you sent me something other than the {product}.",
    ),
    (
        "Hi, I think I was overcharged for the {product}.",
        "Hello, there's a charge on my card for the {product} that doesn't look right.",
        "Hi, my discount wasn't applied when I bought the {product}.",
    ),
    (
        "Hi, I'd like to return the {product}.",
        "Hello, can I send back the {product} I bought?",
        "Hi, I have a question about returning my {product}.",
    ),
    (
        "Hi, my {product} is defective.",
        "Hello, the {product} I received is damaged.",
        "Hi, something is wrong with the {product}, it broke almost right away.",
    ),
    (
        "Hi, the {product} doesn't fit at all.",
        "Hello, I followed the size chart but the {product} is the wrong size.",
        "Hi, I need a different size of the {product}.",
    ),
    (
        "Hi, my {product} still hasn't arrived.",
        "Hello, my order with the {product} is late.",
        "Hi, where is my {product}? It was due days ago.",
    ),
    (
        "Hi, the {product} is out of stock and I really want one.",
        "Hello, when will the {product} be available again?",
        "Hi, I can't find the {product} in my size anywhere on the site.",
    ),
    (
        "Hi, I need to cancel my order for the {product}.",
        "Hello, the website won't let me cancel my {product} order.",
        "Hi, please cancel the {product} I ordered.",
    ),
    (
        "Hi, I'd like to make a warranty claim for my {product}.",
        "Hello, my {product} stopped working and I think it's under warranty.",
        "Hi, is my {product} covered by the warranty?",
    ),
    (
        "Hi, I have a question about my rewards points.",
        "Hello, I didn't get points for my {product} purchase.",
        "Hi, I'm confused about how the rewards program works.",
    ),
)

_GREETINGS = (
    "Hi {cfirst}, thanks for contacting {company}. I'm sorry to hear that, let's get it sorted.",
    "Hello {cfirst}, my name is {afirst} and I'll be helping you today.",
    "Thanks for reaching out, {cfirst}. I'm {afirst}, happy to help with this.",
    "Hi {cfirst}, I'm sorry for the trouble. I can help you with that.",
)
_ASK_ORDER = (
    "Could you give me the order ID, please?",
    "Can you share the order ID so I can pull up the details?",
    "May I have your order ID?",
)
_GIVE_ORDER = (
    "Sure, it's {order_id}.",
    "The order ID is {order_id}.",
    "Here it is: {order_id}.",
)
_CHECKING = (
    "Thank you. Give me a moment to look at the order.",
    "Thanks, I'm checking the details now.",
    "Got it, one moment while I review your order.",
)
_REACTIONS = (
    "Okay, thanks for explaining.",
    "Great, thank you!",
    "Alright, I appreciate the help.",
    "Thanks, that works for me.",
)
_CLOSINGS = (
    "Is there anything else I can help you with today?",
    "You'll get an email confirmation shortly. Anything else I can do for you?",
    "Thanks for your patience, {cfirst}. Is there anything else before you go?",
)
_BYES = ("No, that's all. Thanks!", "That's everything, bye.", "Nope, thanks again.")
_NEUTRAL_ASK = (
    "Could you look into this for me?",
    "What are the next steps?",
    "Can you help me with this?",
)
_NEUTRAL_REPLY = (
    "I've noted everything on your case, and I'll follow up with you once the team has reviewed it.",
    "I've passed the details to the right team and you'll hear back from us soon.",
    "I've updated your case with these details and will keep you posted.",
)
_SIGNOFF_CUSTOMER = ("Thanks", "Thank you", "Best", "Regards", "Cheers")
_SIGNOFF_AGENT = ("Best regards", "Kind regards", "Sincerely", "Warm regards")


def issue_description(issue: int) -> str:
    """The Issue__c.Description__c of an issue (0-based index into ISSUES)."""
    return ISSUES[issue][1]


# What a customer may add at the end of a case description.
_EXTRAS = (
    " I've been a customer for years and this is the first time this has happened.",
    " I'd appreciate a quick reply.",
    " Please let me know what you need from me.",
    " This is pretty frustrating.",
    " Thanks in advance for your help.",
)


def case_text(rand: Rand, issue: int, product: str) -> tuple[str, str]:
    """A case subject and description for a product and an issue (0-based index into ISSUES).

    Task generators use this too, to phrase new cases for routing; :func:`read_case_text` reads them back.
    """
    subject = rand.choice(_SUBJECTS[issue]).format(product=product)
    description = rand.choice(_DESCRIPTIONS[issue]).format(product=product)
    if rand.chance(0.5):
        description += rand.choice(_EXTRAS)
    return subject, description


@dataclass(frozen=True)
class CaseReading:
    """What a case's text says: the issue it is about (by its name in :data:`ISSUES`) and the product it names.

    Attributes:
        issue: The issue's name (``"Product Defect"``).
        product: The product's name as the text writes it.
    """

    issue: str
    product: str


#: A ``{field}`` of a generator's template.
FIELD = re.compile(r"\{(\w+)\}")


def template_regex(
    template: str,
    any_text: str,
    *,
    texts: Mapping[str, str] | None = None,
    patterns: Mapping[str, str] | None = None,
    capture: bool = True,
) -> str:
    """A generator's text template (``{field}`` where a text varies) as a regular expression, for the readers that
    stand for a perfect reader of what the generator writes.

    Args:
        template: The template.
        any_text: The expression of a field's text (``[^\\n]+?``: any text of a line).
        texts: Fields whose text is known, matched as that text.
        patterns: Fields matched by an expression of their own.
        capture: Capture every other field under its name the first time (the same text where it comes back).

    Example:
        >>> print(template_regex("Hi {name}, {name}!", ".+"))
        Hi\\ (?P<name>.+),\\ (?P=name)!
    """
    texts, patterns = texts or {}, patterns or {}
    parts: list[str] = []
    seen: set[str] = set()
    at = 0
    for match in FIELD.finditer(template):
        parts.append(re.escape(template[at : match.start()]))
        name = match.group(1)
        if name in texts:
            parts.append(re.escape(texts[name]))
        elif name in patterns:
            parts.append(patterns[name])
        elif not capture:
            parts.append(any_text)
        elif name in seen:
            parts.append(f"(?P={name})")
        else:
            parts.append(f"(?P<{name}>{any_text})")
            seen.add(name)
        at = match.end()
    parts.append(re.escape(template[at:]))
    return "".join(parts)


def _pattern(template: str) -> re.Pattern[str]:
    """``template`` as a pattern that matches the whole text, ``{product}`` read as any non-empty text."""
    return re.compile(template_regex(template, ".+"), re.DOTALL)


@functools.cache
def _case_patterns() -> tuple[tuple[tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], ...], ...]], ...]:
    """Per issue, its subjects' patterns and, per description template, the patterns with each closing sentence
    before the bare template (a description that ends with one ends with that sentence, no part of the product's
    name): built at the first read (compiling them all at import cost every command's start-up some 15 ms)."""
    subjects = tuple(tuple(_pattern(t) for t in templates) for templates in _SUBJECTS)
    descriptions = tuple(
        tuple(tuple(_pattern(t + extra) for extra in (*_EXTRAS, "")) for t in templates) for templates in _DESCRIPTIONS
    )
    return tuple(zip(subjects, descriptions, strict=True))


def read_case_text(subject: str, description: str) -> tuple[CaseReading, ...]:
    """Every reading of a case's subject and description as :func:`case_text` writes them: the issues whose
    templates give both texts, each with the product the texts name (the same in both where the subject names
    one). It stands for a perfect reader of the case: an issue is recognised by what the text says, not by its
    name, which most texts never write ("Defective ..." is a Product Defect).

    Returns:
        The readings, sorted; none for a text no template writes, several where the text fits more than one.

    Example:
        >>> subject, description = case_text(Rand(1), 3, "Men's Trail Running Shoes")
        >>> read_case_text(subject, description)
        (CaseReading(issue='Product Defect', product="Men's Trail Running Shoes"),)
        >>> read_case_text("Hello", "My shoes are fine.")
        ()
    """
    subject, description = subject.strip(), description.strip()
    found: set[CaseReading] = set()
    for issue, (subjects, descriptions) in enumerate(_case_patterns()):
        named = [m for m in (p.fullmatch(subject) for p in subjects) if m is not None]
        if not named:
            continue
        in_subject = {m.groupdict().get("product") for m in named}
        for closings in descriptions:
            match = next((m for m in (p.fullmatch(description) for p in closings) if m is not None), None)
            if match is not None and (None in in_subject or match["product"] in in_subject):
                found.add(CaseReading(ISSUES[issue][0], match["product"]))
    return tuple(sorted(found, key=lambda r: (r.issue, r.product)))


@dataclass(frozen=True)
class Dialogue:
    """The people and facts of one case's conversation."""

    company: str
    customer: str  # full name
    agent: str  # full name
    product: str
    order_id: str
    issue: int

    @property
    def cfirst(self) -> str:
        return self.customer.split(" ", 1)[0]

    @property
    def afirst(self) -> str:
        return self.agent.split(" ", 1)[0]


def _fmt(template: str, d: Dialogue, values: dict[str, object]) -> str:
    return template.format(
        cfirst=d.cfirst,
        afirst=d.afirst,
        company=d.company,
        product=d.product,
        order_id=d.order_id,
        **values,
    )


def _stamp(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def spread_times(rand: Rand, start: int, n: int, budget: int | None, lo: int, hi: int) -> list[int]:
    """``n`` increasing times from ``start``, gaps drawn in [lo, hi], squeezed into ``budget`` seconds."""
    gaps = [lo + int(rand.random() * (hi - lo)) for _ in range(n)]
    gaps[0] = min(gaps[0], lo)
    total = sum(gaps)
    if budget is not None and total > budget:
        factor = max(budget, 0) / total
        gaps = [int(g * factor) for g in gaps]
    out, t = [], start
    for g in gaps:
        t += g
        out.append(t)
    return out


def chat_body(rand: Rand, d: Dialogue, ask: str, reply: str, start: int, budget: int | None) -> tuple[str, int]:
    """A chat transcript, one ``[time] Name (Role): text`` line per message, and its end time.

    ``ask`` and ``reply`` are the customer's question and the agent's answer on the policy rule
    (already formatted). Lines fall within ``budget`` seconds of ``start`` when a budget is given.
    """
    lines: list[tuple[str, str]] = [
        ("C", rand.choice(_OPENERS[d.issue]).format(product=d.product)),
        ("A", _fmt(rand.choice(_GREETINGS), d, {})),
        ("A", rand.choice(_ASK_ORDER)),
        ("C", _fmt(rand.choice(_GIVE_ORDER), d, {})),
        ("A", rand.choice(_CHECKING)),
        ("C", ask),
        ("A", reply),
        ("C", rand.choice(_REACTIONS)),
        ("A", _fmt(rand.choice(_CLOSINGS), d, {})),
    ]
    if rand.chance(0.6):
        lines.append(("C", rand.choice(_BYES)))
    times = spread_times(rand, start, len(lines), budget, 20, 200)
    out = []
    for (role, text), t in zip(lines, times, strict=True):
        who = f"{d.customer} (Customer)" if role == "C" else f"{d.agent} (Agent)"
        out.append(f"[{_stamp(t)}] {who}: {text}")
    return "\n".join(out), times[-1]


def email_thread(
    rand: Rand, d: Dialogue, subject: str, description: str, ask: str, reply: str, n: int
) -> list[tuple[bool, str, str]]:
    """An email thread of ``n`` (2-6) messages: ``(from_agent, subject, body)`` in order.

    The agent's reply on the policy rule is always part of the thread.
    """
    signoff_c = rand.choice(_SIGNOFF_CUSTOMER)
    signoff_a = rand.choice(_SIGNOFF_AGENT)
    agent_sig = f"{signoff_a},\n{d.agent}\n{d.company} Customer Care"
    re = f"Re: {subject}"
    first = f"Hello,\n\n{description}\n\nThe order ID is {d.order_id}.\n\n{signoff_c},\n{d.customer}"
    first_with_ask = f"Hello,\n\n{description} {ask}\n\nThe order ID is {d.order_id}.\n\n{signoff_c},\n{d.customer}"
    ack = (
        f"Dear {d.cfirst},\n\nThank you for contacting {d.company}. "
        f"{rand.choice(('I am sorry for the inconvenience.', 'I understand how frustrating this is.', 'I can help.'))} "
        f"I have found your order {d.order_id}. Could you tell me a little more so I can resolve this?\n\n{agent_sig}"
    )
    detail = f"Hi {d.afirst},\n\n{ask}\n\n{signoff_c},\n{d.customer}"
    after = rand.choice(("Please let me know if you have any other questions.", "I hope this helps.", "Thanks."))
    resolution = f"Dear {d.cfirst},\n\n{reply}\n\n{after}\n\n{agent_sig}"
    thanks = f"Hi {d.afirst},\n\n{rand.choice(_REACTIONS)}\n\n{signoff_c},\n{d.customer}"
    close = f"Dear {d.cfirst},\n\nYou're welcome. Your case is now resolved.\n\n{agent_sig}"
    if n <= 2:
        seq = [(False, subject, first_with_ask), (True, re, resolution)]
    elif n == 3:
        seq = [(False, subject, first_with_ask), (True, re, resolution), (False, re, thanks)]
    else:
        seq = [(False, subject, first), (True, re, ack), (False, re, detail), (True, re, resolution)]
        if n >= 5:
            seq.append((False, re, thanks))
        if n >= 6:
            seq.append((True, re, close))
    return seq


def neutral_exchange(rand: Rand) -> tuple[str, str]:
    """A customer question and agent answer that touch no policy rule."""
    return rand.choice(_NEUTRAL_ASK), rand.choice(_NEUTRAL_REPLY)
