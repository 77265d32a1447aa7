"""Text of the Pro orgs, from templates of our own: record descriptions, case text, chats, emails and the
knowledge articles that state the quoting and configuration rules.

Every number a rule article states is the number the generator enforces (both read
:class:`~crmarena_gym.datagen._pro_spec.Rules`), so an article and the data never disagree.
"""

from __future__ import annotations

from crmarena_gym.datagen._pro_spec import KindSpec
from crmarena_gym.datagen._rand import Rand

#: The six rules a quote can break: (key, category). Approval rules are quote_approval's, configuration
#: rules invalid_config's; each has one knowledge article.
RULE_KEYS: tuple[tuple[str, str], ...] = (
    ("discount_tiers", "approval"),
    ("discount_limit", "approval"),
    ("no_discount", "approval"),
    ("quantity_limits", "config"),
    ("exclusions", "config"),
    ("bundles", "config"),
)


def _money(value: float) -> str:
    return f"${value:,.0f}" if value == int(value) else f"${value:,.2f}"


def _pct(value: float) -> str:
    return f"{value:g}%"


def rule_article(spec: KindSpec, key: str) -> tuple[str, str, str]:
    """(title, summary, body) of the article that states rule ``key`` of ``spec``'s kind."""
    r, p, company = spec.rules, spec.products, spec.company
    if key == "discount_tiers":
        if r.quantity_tiers:
            tiers = "; ".join(f"{_pct(pct)} for {low} units or more" for low, pct in r.quantity_tiers)
            lowest = min(low for low, _ in r.quantity_tiers)
            body = (
                f"Volume discounts at {company} are set per quote line by the quantity on that line: {tiers}. "
                f"Lines of fewer than {lowest} units carry no discount. A line may never carry more than its tier "
                f"allows. When a manager has approved pricing against a competitor's written offer (the quote's "
                f"approved competing offer flag), each line may carry up to {_pct(r.offer_bonus)} more than its tier."
            )
            return "Volume Discount Tiers", "How much discount a quote line may carry, by quantity", body
        caps = "; ".join(f"{family}: up to {_pct(pct)}" for family, pct in r.family_caps.items())
        body = (
            f"Discounts at {company} are capped per quote line by what the line is: {caps}. Other lines take no "
            f"discount. When a manager has approved matching a competing dealer's written offer (the quote's "
            f"approved competing offer flag), each capped line may carry up to {_pct(r.offer_bonus)} more."
        )
        return "Discount Caps by Product Type", "How much discount a quote line may carry, by product type", body
    if key == "discount_limit":
        body = (
            f"The discounts on one quote may not add up to more than {_money(r.discount_limit)}: the sum over its "
            f"lines of quantity times unit price times the line's discount. A quote above this limit needs a new "
            f"price from the sales director and may not be sent as it is."
        )
        return "Quote Discount Approval Limit", "The most discount one quote may give in dollars", body
    if key == "no_discount":
        families = ", ".join(r.no_discount_families)
        body = (
            f"Some of what {company} sells is never discounted: {families}. Quote lines of these kinds carry "
            f"their list price, with a discount of 0%, whatever the quantity or any competing offer."
        )
        return "Non-Discountable Products", "Which products never take a discount", body
    if key == "quantity_limits":
        limits = "; ".join(f"{p[i].name}: at most {n}" for i, n in r.quantity_limits.items())
        body = (
            f"Some products may be ordered only in limited quantities on one quote line: {limits}. A quote with "
            f"a line above its product's limit cannot be processed."
        )
        return "Order Quantity Limits", "The most units of some products one quote may carry", body
    if key == "exclusions":
        pairs = "; ".join(f"{p[a].name} with {p[b].name}" for a, b in r.exclusions)
        body = (
            f"These products may not be sold together on one quote: {pairs}. A quote that carries both products "
            f"of a pair must be split or changed before it is sent."
        )
        return "Product Exclusion Rules", "Products that may not be on the same quote", body
    if key == "bundles":
        listed = "; ".join(
            f"{p[primary].name} requires {', '.join(p[c].name for c in companions)}"
            for primary, companions in r.bundles.items()
        )
        body = (
            f"Some products work only together with others and must be quoted with them: {listed}. A quote that "
            f"carries a product without every product it requires is incomplete."
        )
        return "Mandatory Product Bundles", "Products that must be quoted together", body
    raise ValueError(f"no rule {key!r}")


_PRODUCT_ARTICLE = (
    "{name} ({family}). {description} List price: {price} per unit. Questions about {name} go to "
    "{company}'s support team, who can also arrange a demonstration."
)


def product_article(spec: KindSpec, index: int) -> tuple[str, str, str]:
    """(title, summary, body) of the public article about product ``index``."""
    p = spec.products[index]
    body = _PRODUCT_ARTICLE.format(
        name=p.name, family=p.family, description=p.description, price=_money(p.price), company=spec.company
    )
    return f"About {p.name}", p.description, body


_ISSUE_STEPS = (
    "Confirm the customer's account and the product the case is about.",
    "Collect what the customer saw, when it started and what changed just before.",
    "Check the knowledge base for a known fix and walk the customer through it.",
    "If the fix does not help, escalate to the specialist team with the details collected.",
    "Tell the customer what happens next and when they will hear from us.",
)


def issue_article(spec: KindSpec, index: int) -> tuple[str, str, str]:
    """(title, summary, body) of the public article on resolving issue ``index``."""
    name, description = spec.issues[index]
    steps = " ".join(f"{n}. {s}" for n, s in enumerate(_ISSUE_STEPS, 1))
    body = f"{description} How we resolve it: {steps}"
    return f"Resolving: {name}", description, body


def account_description(rand: Rand, spec: KindSpec, name: str, industry: str | None) -> str:
    if spec.households:
        return rand.choice(
            (
                f"{name} bought from us before and prefers to be contacted by email.",
                f"Household of {name}; interested in electric and hybrid models.",
                f"{name} came to the showroom after an online enquiry.",
            )
        )
    return rand.choice(
        (
            f"{name} designs {industry.lower() if industry else 'electronic'} products and runs several design teams.",
            f"{name} is evaluating tools for its next generation of chips and boards.",
            f"Long-standing customer; {name} renews its design tool licences every year.",
        )
    )


def opportunity_description(rand: Rand, spec: KindSpec, account: str, products: list[str]) -> str:
    listed = ", ".join(products[:3])
    if spec.households:
        return rand.choice(
            (
                f"{account} is looking at the {listed}.",
                f"Deal for {account}: {listed}.",
                f"{account} asked for a price on the {listed}.",
            )
        )
    return rand.choice(
        (
            f"{account} wants licences of {listed} for a new project.",
            f"Expansion at {account}: {listed}.",
            f"{account} is replacing part of its design flow with {listed}.",
        )
    )


def lead_description(rand: Rand, spec: KindSpec, source: str) -> str:
    if spec.households:
        return rand.choice(
            (
                f"Came in through {source.lower()}; asked about electric models.",
                f"Enquiry via {source.lower()} about trading in a car.",
                f"Asked via {source.lower()} for a test drive.",
            )
        )
    return rand.choice(
        (
            f"Came in through {source.lower()}; asked about design tool licences.",
            f"Enquiry via {source.lower()} about a simulation or verification evaluation.",
            f"Asked via {source.lower()} for pricing for a design team.",
        )
    )


def task_description(rand: Rand, subject: str, opportunity: str) -> str:
    return rand.choice(
        (
            f"{subject} for {opportunity}.",
            f"{subject}. Opportunity: {opportunity}.",
            f"Next step on {opportunity}: {subject.lower()}.",
        )
    )


_CASE_SUBJECTS = (
    "{issue} with {product}",
    "{product}: {issue_lower}",
    "Problem with {product} ({issue_lower})",
)
_CASE_BODIES = (
    "Hello, we bought {product} and have run into this: {issue_description} Could you help us sort it out?",
    "Our {product} has a problem. {issue_description} Please advise.",
    "We need help with {product}. {issue_description} This is holding us up.",
)


def case_text(rand: Rand, spec: KindSpec, issue: int, product: str) -> tuple[str, str]:
    """(subject, description) of a case about ``issue`` on ``product``."""
    name, description = spec.issues[issue]
    fill = {"issue": name, "issue_lower": name.lower(), "product": product, "issue_description": description}
    return rand.choice(_CASE_SUBJECTS).format(**fill), rand.choice(_CASE_BODIES).format(**fill)


def case_email(rand: Rand, spec: KindSpec, from_agent: bool, product: str, issue: int, name: str) -> str:
    issue_name = spec.issues[issue][0].lower()
    if from_agent:
        return rand.choice(
            (
                f"Hello {name}, thank you for reporting the {issue_name} on {product}. We are looking into it and "
                "will update you shortly.",
                f"Hi {name}, could you send us more details about the {issue_name} you see with {product}?",
                f"Dear {name}, we have a fix for the {issue_name} on {product}; the steps are in our knowledge base.",
            )
        )
    return rand.choice(
        (
            f"Hi, the {issue_name} on {product} is still happening. Any news?",
            f"Thanks. Here are the details of the {issue_name} on {product}.",
            f"That worked, thank you. The {issue_name} on {product} is resolved.",
        )
    )


def chat_lines(
    rand: Rand, spec: KindSpec, agent: str, customer: str, product: str, issue: int
) -> list[tuple[str, str]]:
    """(speaker, text) lines of a support chat about ``issue`` on ``product``."""
    issue_name = spec.issues[issue][0].lower()
    return [
        (agent, f"Hi {customer.split()[0]}, thanks for contacting {spec.company}. How can I help?"),
        (customer, f"Hi, I have a {issue_name} with {product}."),
        (agent, "I'm sorry to hear that. Let me look at your account."),
        (customer, rand.choice(("Thanks.", "Sure, take your time.", "Okay."))),
        (agent, f"I found your {product}. I'll walk you through the fix and follow up by email."),
        (customer, rand.choice(("Great, thank you.", "Thanks for the help.", "Appreciate it."))),
    ]


def setup_article(spec: KindSpec) -> tuple[str, str, str]:
    """(title, summary, body) of the internal article stating how long setting up (b2b) or delivery (b2c) takes."""
    if spec.model_days:
        listed = "; ".join(f"{spec.products[i].name}: {days} days" for i, days in spec.model_days.items())
        body = (
            f"How long {spec.company} takes from a signed order to handing over the keys, by model: {listed}. "
            "Option packages and accessories are fitted within that time. A buyer who needs the vehicle sooner "
            "than its model's delivery time cannot be promised it."
        )
        return "Vehicle Delivery Times", "Days from a signed order to delivery, by model", body
    families = "; ".join(f"{family}: {days} days" for family, days in spec.setup_days.items())
    bands = "; ".join(f"{extra} more days for orders of {low} units or more" for low, extra in spec.setup_bands)
    body = (
        f"How long {spec.company} takes from a signed order to a working installation, by product line: {families}. "
        f"Larger orders take longer: {bands} (the larger band applies, not both). A customer who needs the "
        "tools running sooner than this cannot be promised it."
    )
    return "Installation and Onboarding Times", "Days from a signed order to a working installation", body


# Calls with a lead: what each BANT factor sounds like when it holds and when it does not. Numbers are numerals.
_NEED_YES = (
    "We need {q} {unit} of {product} for {purpose}.",
    "The plan is {q} {unit} of {product}; we have {purpose} coming up.",
)
_NEED_NO = (
    "Honestly, we have no specific project yet. If we ever did it, maybe {q} {unit} of {product}.",
    "We're only gathering information for now, nothing concrete. Something like {q} {unit} of {product}, perhaps.",
)
_NEED_YES_HOUSEHOLD = (
    "We need a new car for {purpose}, and the {product} is the one we want.",
    "It's for {purpose}; we've settled on the {product}.",
)
_NEED_NO_HOUSEHOLD = (
    "Honestly, we're just browsing, no real need yet. The {product} caught my eye, that's all.",
    "Nothing urgent or definite; I saw the {product} online and got curious.",
)
_AUTHORITY_YES = (
    "I sign off on purchases like this myself.",
    "The decision is mine; I approve this budget.",
)
_AUTHORITY_NO = (
    "I'd have to take this to our {boss}, who makes the final call.",
    "Our {boss} decides on anything like this, not me.",
)
_BUDGET = ("Our budget for this is ${budget:,}.", "We have set aside ${budget:,} for it.")
_BUDGET_CHANGED = (
    "Since we last spoke, the budget moved: it is now ${budget:,}.",
    "One update: our budget is now ${budget:,}, not what I said before.",
)
_TIMELINE = ("We need it {ready} within {days} days.", "It has to be {ready} in {days} days at the latest.")
_TIMELINE_CHANGED = ("The timing changed too: we now need it {ready} within {days} days.",)


def bant_call(
    rand: Rand,
    spec: KindSpec,
    rep: str,
    lead: str,
    facts: dict[str, object],
    *,
    first: bool,
    changed: bool,
) -> list[tuple[str, str]]:
    """(speaker, utterance) lines of a sales call with a lead, stating every BANT fact of ``facts``.

    ``facts``: product (name), quantity, unit_price, budget, days (the time the lead needs), need, authority.
    ``changed``: the budget and timing are said as updates of what an earlier call said.
    """
    household = spec.households
    unit = "vehicle" if household else "licences"
    purpose = rand.choice(
        ("a growing family", "a longer commute", "replacing an old car")
        if household
        else ("a new chip project", "a board redesign next quarter", "our verification backlog")
    )
    boss = rand.choice(("spouse", "partner")) if household else rand.choice(("CFO", "VP of Engineering", "board"))
    ready = "delivered" if household else "installed and running"
    q = facts["quantity"]
    fill = {
        "q": q,
        "unit": unit,
        "product": facts["product"],
        "purpose": purpose,
        "boss": boss,
        "budget": facts["budget"],
        "days": facts["days"],
        "ready": ready,
    }
    opener = (
        f"Hi {lead.split()[0]}, this is {rep} from {spec.company}. Thanks for taking the call."
        if first
        else f"Hi {lead.split()[0]}, {rep} again from {spec.company}, following up on our last conversation."
    )
    lines = [
        (rep, opener),
        (lead, rand.choice(("Thanks for calling.", "Sure, happy to talk.", "Good to hear from you."))),
    ]
    lines.append((rep, "What are you looking for?" if first else "Where do things stand on your side?"))
    if household:
        need = _NEED_YES_HOUSEHOLD if facts["need"] else _NEED_NO_HOUSEHOLD
    else:
        need = _NEED_YES if facts["need"] else _NEED_NO
    lines.append((lead, rand.choice(need).format(**fill)))
    lines.append(
        (rep, f"{facts['product']} lists at ${facts['unit_price']:,.0f} per {'vehicle' if household else 'licence'}.")
    )
    budget = rand.choice(_BUDGET_CHANGED if changed else _BUDGET).format(**fill)
    lines.append((lead, budget))
    lines.append((rep, "And when do you need it by?"))
    lines.append((lead, rand.choice(_TIMELINE_CHANGED if changed else _TIMELINE).format(**fill)))
    lines.append((rep, "Who else is involved in the decision?"))
    lines.append((lead, rand.choice(_AUTHORITY_YES if facts["authority"] else _AUTHORITY_NO).format(**fill)))
    lines.append(
        (rep, rand.choice(("Thanks, I'll follow up by email.", "Great, I'll send details over.", "Noted. Talk soon.")))
    )
    return lines


# Calls about an opportunity: competitor mentions and discussion subtopics, each in one sentence of our own.
_THEY_LEAD = (
    "We're also talking to {competitor}, and honestly their {topic} is ahead of yours.",
    "{competitor} looks stronger than you on {topic}, from what our team saw.",
)
_WE_LEAD = (
    "We looked at {competitor} too, but your {topic} is clearly better than theirs.",
    "Compared with {competitor}, you win on {topic}.",
)
_MENTION = ("{competitor} came up in our evaluation as well.", "Our team also had a call with {competitor}.")
_OFFER = ("{competitor} has offered us {pct}% off if we sign with them this quarter.",)
_POSITIVE = (
    "I'm really pleased with what I've seen on {topic}.",
    "The {topic} is a big plus for us.",
)
_NEGATIVE = (
    "I'm worried about the {topic}.",
    "The {topic} is a real concern on our side.",
)


def insight_call(
    rand: Rand,
    spec: KindSpec,
    rep: str,
    contact: str,
    opportunity: str,
    mentions: list[tuple[str, str | None, str | None, int | None]],
    topics: list[tuple[str, str]],
) -> list[tuple[str, str]]:
    """(speaker, utterance) lines of a call about an opportunity.

    ``mentions``: (competitor, relation 'advantage' | 'disadvantage' | None, the topic the relation is about,
    the percent of a competing offer or None); ``topics``: (subtopic, 'positive' | 'negative').
    """
    lines = [
        (
            rep,
            f"Hi {contact.split()[0]}, {rep} from {spec.company}. Thanks for making time to talk about {opportunity}.",
        ),
        (contact, rand.choice(("Happy to. We've had a few discussions internally.", "Sure, we have some thoughts."))),
    ]
    for topic, sentiment in topics:
        lines.append((rep, f"How do you see the {topic.lower()} side of things?"))
        lines.append(
            (contact, rand.choice(_POSITIVE if sentiment == "positive" else _NEGATIVE).format(topic=topic.lower()))
        )
    for competitor, relation, topic, pct in mentions:
        lines.append((rep, "Are you looking at anyone else?"))
        if relation == "disadvantage":
            said = rand.choice(_THEY_LEAD)
        elif relation == "advantage":
            said = rand.choice(_WE_LEAD)
        else:
            said = rand.choice(_MENTION)
        lines.append((contact, said.format(competitor=competitor, topic=(topic or "").lower())))
        if pct is not None:
            lines.append((contact, rand.choice(_OFFER).format(competitor=competitor, pct=pct)))
            lines.append((rep, "Thanks for telling me; let me see what we can do."))
    lines.append(
        (rep, rand.choice(("I'll follow up with a summary.", "Let's talk again next week.", "Thanks, this helps.")))
    )
    return lines


_SALES_EMAILS = (
    (
        "Next steps on {opportunity}",
        "Hi {contact}, thanks for your time today. As discussed, I'll send over {what} by {when}. Best, {rep}",
    ),
    (
        "{company}: {what}",
        "Hi {contact}, please find {what} for {opportunity}. Happy to walk you through it. Best, {rep}",
    ),
    (
        "Checking in",
        "Hi {contact}, just checking in on {opportunity}. Is there anything else your team needs from us? {rep}",
    ),
    (
        "Meeting follow-up",
        "Hi {contact}, following up on our meeting about {opportunity}; let me know a good time to talk. {rep}",
    ),
)
_REPLIES = (
    "Thanks {rep}, we'll review it this week and get back to you.",
    "Got it, thanks. I'll share it with the team.",
    "Thanks. Could we schedule a call next week to go over a few questions?",
)


def sales_email(
    rand: Rand, spec: KindSpec, rep: str, contact: str, opportunity: str, from_rep: bool
) -> tuple[str, str]:
    """(subject, body) of an email between a representative and a customer about an opportunity."""
    if from_rep:
        what = rand.choice(
            ("the price quote", "the brochure and spec sheet", "financing options")
            if spec.households
            else ("the price quote", "the licence terms", "the technical overview", "the evaluation plan")
        )
        subject, body = rand.choice(_SALES_EMAILS)
        fill = {"opportunity": opportunity, "contact": contact.split()[0], "rep": rep.split()[0], "what": what,
                "when": rand.choice(("Friday", "tomorrow", "early next week")), "company": spec.company}  # fmt: skip
        return subject.format(**fill), body.format(**fill)
    return f"Re: {opportunity}", rand.choice(_REPLIES).format(rep=rep.split()[0])
