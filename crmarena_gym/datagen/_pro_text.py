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


# -- the article bank: facts a customer question is answered from -------------------------------------------
#
# A public article states each of its facts as one sentence "<label>: <answer>." so that a question about the
# slot is answered by a short span of the article (1-15 words). Values come from pools of our own, drawn per org
# with the org's seed, so the same question has different answers in different orgs.

#: A fact an article states: (slot, label, answer). The label opens the sentence; the answer is the span.
Fact = tuple[str, str, str]

_B2B_SPEC_SLOTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("platforms", "Supported platforms", (
        "Red Hat Enterprise Linux 8 and 9", "Rocky Linux 9 and Ubuntu 22.04", "Windows 11 and Windows Server 2022",
        "SUSE Linux Enterprise 15", "Red Hat Enterprise Linux 9 and Windows 11", "Ubuntu 20.04 and 22.04",
        "any 64-bit Linux with glibc 2.28 or later", "CentOS Stream 9 and Rocky Linux 8",
    )),
    ("memory", "Minimum memory per seat", (
        "16 GB of RAM", "32 GB of RAM", "64 GB of RAM", "128 GB of RAM", "256 GB of RAM", "48 GB of RAM",
    )),
    ("release", "Current release", tuple(f"version {y}.{m}" for y in (2023, 2024, 2025) for m in (1, 2, 3, 4))),
    ("cores", "Parallel runs", tuple(f"up to {n} CPU cores per licence" for n in (4, 8, 16, 24, 32, 64, 128))),
    ("formats", "Input formats", (
        "Verilog and SystemVerilog", "VHDL and Verilog", "LEF, DEF and GDSII", "SPICE netlists and Verilog-A",
        "ODB++ and IPC-2581", "OASIS and GDSII", "SystemC and C++", "Liberty timing libraries and SDC constraints",
        "EDIF and Verilog netlists", "STEP models and Gerber files",
    )),
)  # fmt: skip
_B2B_SUPPORT_SLOTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("licence_model", "Licence model", (
        "floating licences served from a licence server", "node-locked licences tied to one workstation",
        "named-user subscriptions billed yearly", "token-based licences shared across the suite",
        "site licences covering one campus", "cloud seats billed by the hour",
    )),
    ("evaluation", "Evaluation", tuple(f"a free {n}-day evaluation licence" for n in (14, 21, 30, 45, 60, 90))),
    ("response", "Support response target", tuple(f"within {n} business hours" for n in (1, 2, 4, 8, 12, 24))),
    ("training", "Training included", (
        "a two-day instructor-led course", "one seat in the online academy", "a half-day onboarding workshop",
        "three hours of live coaching", "none; courses are sold separately", "a one-day hands-on lab",
    )),
    ("updates", "Updates", (
        "quarterly releases included with maintenance", "monthly patches and two major releases a year",
        "one major release a year and hotfixes as needed", "continuous updates in the cloud edition",
        "two feature releases a year", "service packs every six weeks",
    )),
)  # fmt: skip
_B2C_SPEC_SLOTS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "Vehicle": (
        ("seating", "Seating", ("five adults", "seven passengers in three rows", "four adults", "six passengers",
                                "two adults and two children", "eight passengers")),
        ("charging", "Fast charging", tuple(
            f"10 to 80 percent in about {n} minutes" for n in (18, 22, 25, 30, 35, 40))),
        ("towing", "Towing capacity", tuple(f"up to {n:,} pounds" for n in (1500, 2000, 3500, 5000, 7500, 9000))),
        ("cargo", "Cargo space", tuple(f"{n} cubic feet behind the rear seats" for n in (14, 18, 24, 29, 33, 38))),
        ("drivetrain", "Drivetrain", ("front-wheel drive", "rear-wheel drive", "all-wheel drive with two motors",
                                      "all-wheel drive", "four-wheel drive with a low range")),
    ),
    "": (
        ("compatibility", "Fits", ("every Crestline model from 2021 on", "sedans and hatchbacks only",
                                   "SUVs and trucks only", "electric models only", "every current model",
                                   "hybrid and electric models")),
        ("term", "Term", ("12 months", "24 months", "36 months", "48 months", "60 months", "72 months")),
        ("fitting", "Fitting", ("fitted at the dealership in about 2 hours", "fitted at delivery at no charge",
                                "installed by the owner in minutes", "fitted at the first service visit",
                                "none needed; it starts on the purchase date")),
        ("cancellation", "Cancellation", ("a full refund within 30 days", "a prorated refund at any time",
                                          "a full refund within 60 days", "no refund after 14 days",
                                          "a prorated refund after the first year")),
        ("transfer", "Transfer to a new owner", ("allowed for a $50 fee", "allowed at no charge", "not allowed",
                                                 "allowed once, for a $75 fee")),
    ),
}  # fmt: skip
_B2C_SUPPORT_SLOTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("warranty", "Warranty", (
        "4 years or 50,000 miles", "3 years or 36,000 miles", "5 years or 60,000 miles", "2 years, unlimited miles",
        "1 year, unlimited miles", "8 years or 100,000 miles",
    )),
    ("service_interval", "Service interval", (
        "every 12 months or 10,000 miles", "every 2 years", "every 7,500 miles", "every 15,000 miles",
        "once a year", "no scheduled service needed",
    )),
    ("roadside", "Roadside assistance", (
        "24/7 for 3 years", "24/7 for 5 years", "24/7 for the first year", "included while the warranty lasts",
        "available for $9 a month", "24/7 for 4 years",
    )),
    ("availability", "Availability", (
        "in stock at most dealerships", "built to order in 6 to 8 weeks", "limited stock; ask your dealer",
        "available online and at every showroom", "built to order in 10 to 12 weeks",
    )),
)  # fmt: skip


def _pick_facts(rand: Rand, slots: tuple[tuple[str, str, tuple[str, ...]], ...]) -> list[Fact]:
    return [(slot, label, rand.choice(values)) for slot, label, values in slots]


def _fact_body(opening: str, facts: list[Fact], closing: str = "") -> str:
    said = " ".join(f"{label}: {answer}." for _slot, label, answer in facts)
    return f"{opening} {said}{(' ' + closing) if closing else ''}"


def product_articles(rand: Rand, spec: KindSpec, index: int) -> list[tuple[str, str, str, list[Fact]]]:
    """The three public articles about product ``index``: an overview, its specifications, its licensing (b2b)
    or warranty and service (b2c); each ``(title, summary, body, facts)``; every fact's answer is in the body."""
    p = spec.products[index]
    title, summary, body = product_article(spec, index)
    # The overview's list price sentence is the existing article's; the product line is added to it.
    overview: list[Fact] = [
        ("price", "List price", f"{_money(p.price)} per unit"),
        ("family", "Product line", p.family),
    ]
    out = [(title, summary, f"{body} Product line: {p.family}.", overview)]
    if spec.households:
        slots = _B2C_SPEC_SLOTS.get(p.family, _B2C_SPEC_SLOTS[""])
        support = _B2C_SUPPORT_SLOTS
        support_title = f"{p.name}: Warranty and Service"
    else:
        slots, support = _B2B_SPEC_SLOTS, _B2B_SUPPORT_SLOTS
        support_title = f"{p.name}: Licensing and Support"
    facts = _pick_facts(rand, slots)
    out.append((f"{p.name}: Specifications", f"Technical facts about {p.name}",
                _fact_body(f"What {p.name} needs and supports.", facts), facts))  # fmt: skip
    facts = _pick_facts(rand, support)
    out.append((support_title, f"How {p.name} is sold and supported",
                _fact_body(f"How {spec.company} sells and supports {p.name}.", facts), facts))  # fmt: skip
    return out


#: Remedies an agent may offer a customer with a case, per kind (policy_violation_identification's vocabulary).
REMEDIES: dict[str, tuple[str, ...]] = {
    "b2b": (
        "a replacement licence key", "a one-month licence extension", "a 10% service credit", "a full refund",
        "a free training seat", "a remote session with a support engineer", "an on-site visit by a field engineer",
        "a discount on the next renewal", "priority escalation to the product engineering team",
    ),
    "b2c": (
        "a free loaner vehicle", "a full refund", "a complimentary detailing", "a $100 service credit",
        "a replacement part at no cost", "mobile service at your home", "an extended warranty",
        "a free rental car", "a discount on the next service visit",
    ),
}  # fmt: skip
_TEAMS = (
    "Tier 2 Support", "the Licensing Desk", "Product Engineering", "the Field Services team",
    "Customer Success", "the Billing Office", "the Security Response team",
)  # fmt: skip


def issue_resolution_article(
    rand: Rand, spec: KindSpec, index: int, allowed: list[str]
) -> tuple[str, str, str, list[Fact]]:
    """(title, summary, body, facts) of the public article on resolving issue ``index``; it lists the remedies
    an agent may offer for it (``allowed``) and says no other remedy may be offered."""
    name, description = spec.issues[index]
    steps = " ".join(f"{n}. {s}" for n, s in enumerate(_ISSUE_STEPS, 1))
    facts: list[Fact] = [
        ("first_response", "First response target", rand.choice(tuple(f"within {n} hours" for n in (1, 2, 4, 8, 24)))),
        ("escalation", "Escalation team", rand.choice(_TEAMS)),
    ]
    said = " ".join(f"{label}: {answer}." for _slot, label, answer in facts)
    body = (
        f"{description} How we resolve it: {steps} {said} Remedies agents may offer: {'; '.join(allowed)}. "
        "Agents may not offer any other remedy for this issue."
    )
    return f"Resolving: {name}", description, body, facts


#: (key, title, summary, ((slot, label, values), ...)) of the public policy articles, per kind.
_B2B_POLICIES: tuple[tuple[str, str, str, tuple[tuple[str, str, tuple[str, ...]], ...]], ...] = (
    ("returns", "Returns and Refunds", "When a purchase can be returned and how refunds are paid", (
        ("return_window", "Return window", tuple(f"within {n} days of delivery" for n in (14, 30, 45, 60))),
        ("refund_time", "Refund processing", tuple(f"within {n} business days" for n in (5, 7, 10, 15))),
    )),
    ("payment", "Payment Terms", "When invoices are due and how to pay them", (
        ("payment_due", "Payment due", ("net 30 days from invoice", "net 45 days from invoice",
                                        "net 60 days from invoice", "on receipt of invoice")),
        ("payment_methods", "Accepted payment methods", ("wire transfer, ACH and corporate card",
                                                         "wire transfer and ACH only", "ACH and corporate card")),
    )),
    ("renewal", "Licence Renewals", "How and when licences renew", (
        ("renewal_notice", "Renewal notice", tuple(f"{n} days before the term ends" for n in (30, 45, 60, 90))),
        ("grace", "Grace period", tuple(f"{n} days after expiry" for n in (7, 10, 14, 30))),
    )),
    ("hours", "Support Hours", "When the support team can be reached", (
        ("support_hours", "Support hours", ("6 am to 8 pm Pacific, Monday to Friday",
                                            "8 am to 6 pm Eastern, Monday to Friday",
                                            "around the clock on business days",
                                            "7 am to 7 pm Central, every day")),
        ("emergency", "Emergency line", ("24 hours a day for severity 1 issues", "24 hours a day, 365 days a year",
                                         "weekends from 9 am to 5 pm Pacific")),
    )),
    ("transfer", "Licence Transfers", "Moving seats between users, sites or products", (
        ("transfer_fee", "Transfer fee", tuple(f"${n} per seat" for n in (0, 100, 150, 250, 500))),
        ("transfer_limit", "Transfers allowed", ("once per term per seat", "twice a year per seat",
                                                 "any time, with 5 days' notice")),
    )),
    ("privacy", "Customer Data and Privacy", "How customer design data is kept and deleted", (
        ("retention", "Data retention", tuple(f"deleted {n} days after the contract ends" for n in (30, 60, 90, 180))),
        ("privacy_contact", "Privacy requests", ("through the customer portal's privacy form",
                                                 "by email to the data protection officer",
                                                 "through your account manager")),
    )),
    ("cloud_credits", "Cloud Credits", "How prepaid cloud compute credits work", (
        ("credit_expiry", "Credit expiry", tuple(f"{n} months after purchase" for n in (6, 12, 18, 24))),
        ("credit_rollover", "Unused credits", ("roll over once into the next term", "expire without refund",
                                               "can be converted to training seats")),
    )),
    ("training_policy", "Training Enrolment and Cancellation", "Booking and cancelling courses", (
        ("cancel_deadline", "Cancellation deadline", tuple(f"{n} business days before the course"
                                                           for n in (3, 5, 7, 10))),
        ("class_size", "Class size", tuple(f"at most {n} engineers per course" for n in (8, 10, 12, 16))),
    )),
    ("security_disclosure", "Reporting a Security Vulnerability", "How we handle reported vulnerabilities", (
        ("ack_time", "Acknowledgement", tuple(f"within {n} business days" for n in (1, 2, 3, 5))),
        ("fix_time", "Fix target for critical issues", tuple(f"{n} days" for n in (7, 14, 30, 45))),
    )),
    ("maintenance", "Maintenance and Upgrades", "What annual maintenance covers", (
        ("maintenance_fee", "Maintenance fee", tuple(f"{n}% of the licence price per year" for n in (15, 18, 20, 22))),
        ("upgrade", "Upgrades", ("included while maintenance is current", "half price for customers on maintenance",
                                 "included for the first two years")),
    )),
    ("dongles", "Hardware Licence Keys", "Shipping and replacing USB licence keys", (
        ("dongle_delivery", "Delivery time", tuple(f"{a} to {a + 2} business days" for a in (2, 3, 4, 5))),
        ("dongle_replacement", "Lost key replacement", tuple(f"${n} per key" for n in (75, 95, 120, 150))),
    )),
    ("sla", "Cloud Service Level Agreement", "What uptime we commit to for cloud services", (
        ("uptime", "Uptime commitment", ("99.5% per month", "99.9% per month", "99.95% per month")),
        ("sla_credit", "Credit for missed uptime", tuple(f"{n}% of that month's fee" for n in (5, 10, 15, 25))),
    )),
    ("accounts", "Customer Portal Accounts", "Access to the customer portal", (
        ("portal_users", "Portal users", tuple(f"up to {n} per customer account" for n in (5, 10, 25, 50))),
        ("password_reset", "Password reset", ("self-service from the sign-in page", "through your portal admin",
                                              "by calling the support line")),
    )),
)  # fmt: skip
_B2C_POLICIES: tuple[tuple[str, str, str, tuple[tuple[str, str, tuple[str, ...]], ...]], ...] = (
    ("returns", "Vehicle Return Policy", "Returning a vehicle after purchase", (
        ("return_window", "Return window", tuple(f"{d} days or {m} miles, whichever comes first"
                                                 for d, m in ((3, 150), (7, 250), (7, 500), (14, 500)))),
        ("restocking", "Restocking fee", ("none", "$250", "$500", "1% of the price")),
    )),
    ("test_drives", "Test Drives", "Booking a test drive", (
        ("test_length", "Test drive length", tuple(f"up to {n} minutes" for n in (30, 45, 60, 90))),
        ("test_needs", "What to bring", ("a valid driver's licence", "a driver's licence and proof of insurance")),
    )),
    ("delivery", "Vehicle Delivery", "How a purchased vehicle reaches its owner", (
        ("home_delivery", "Home delivery", ("free within 50 miles of the dealership", "free within 100 miles",
                                            "$199 anywhere in the state", "not offered")),
        ("handover", "Handover session", tuple(f"about {n} minutes with a product specialist" for n in (30, 45, 60))),
    )),
    ("financing_policy", "Financing Applications", "Applying for a loan or lease", (
        ("decision_time", "Credit decision", ("within one business day", "within 2 hours", "while you wait")),
        ("down_payment", "Minimum down payment", tuple(f"{n}% of the price" for n in (0, 5, 10, 20))),
    )),
    ("trade_in", "Trade-In Appraisals", "How we value a trade-in", (
        ("appraisal_valid", "Appraisal valid for", tuple(f"{n} days or 300 miles" for n in (3, 5, 7, 10))),
        ("payoff", "Loan payoff", ("we pay off the old loan directly", "the owner pays off the old loan first")),
    )),
    ("service_booking", "Service Appointments", "Booking service at a dealership", (
        ("booking_lead", "Booking", ("online up to 60 days ahead", "by phone or online, same week",
                                     "online up to 30 days ahead")),
        ("shuttle", "Courtesy shuttle", tuple(f"within {n} miles of the service center" for n in (5, 10, 15, 20))),
    )),
    ("charging_policy", "Home Charger Installation", "Getting a home charger installed", (
        ("install_time", "Installation", tuple(f"within {n} days of purchase" for n in (7, 10, 14, 21))),
        ("charger_credit", "Charging credit", tuple(f"${n} of public charging" for n in (100, 250, 500, 750))),
    )),
    ("registration", "Registration and Plates", "Registering a new vehicle", (
        ("plates", "Plates", tuple(f"mailed within {n} days" for n in (10, 14, 21, 30))),
        ("temp_tag", "Temporary tag valid for", tuple(f"{n} days" for n in (30, 45, 60, 90))),
    )),
    ("recalls", "Recalls", "How recall repairs are handled", (
        ("recall_cost", "Recall repairs", ("free at any Crestline dealer", "free, with a loaner while repaired")),
        ("recall_notice", "Recall notices", ("by mail and email within 30 days", "by email within 14 days")),
    )),
    ("privacy", "Customer Data and Privacy", "How customer data is kept", (
        ("retention", "Data retention", tuple(f"{n} years after the last purchase" for n in (2, 3, 5, 7))),
        ("privacy_contact", "Privacy requests", ("through the owner app's privacy settings",
                                                 "by email to the privacy office", "at any showroom")),
    )),
    ("hours", "Showroom and Service Hours", "When our showrooms and service centers are open", (
        ("showroom_hours", "Showroom hours", ("9 am to 8 pm daily", "9 am to 7 pm, Monday to Saturday",
                                              "10 am to 9 pm daily")),
        ("service_hours", "Service hours", ("7 am to 6 pm, Monday to Friday", "7 am to 7 pm daily",
                                            "8 am to 5 pm, Monday to Saturday")),
    )),
    ("loyalty", "Owner Loyalty Program", "Benefits for returning owners", (
        ("loyalty_bonus", "Loyalty bonus", tuple(f"${n} off the next vehicle" for n in (500, 750, 1000, 1500))),
        ("loyalty_points", "Points", tuple(f"{n} points per dollar spent on service" for n in (1, 2, 3, 5))),
    )),
    ("warranty_claims", "Warranty Claims", "How warranty repairs are claimed", (
        ("claim_where", "Where to claim", ("at any Crestline service center", "at the selling dealership")),
        ("claim_time", "Claim decision", tuple(f"within {n} business days" for n in (1, 2, 3, 5))),
    )),
)  # fmt: skip


def policy_articles(rand: Rand, spec: KindSpec) -> list[tuple[str, str, str, str, list[Fact]]]:
    """The public policy articles: ``(key, title, summary, body, facts)``."""
    out = []
    for key, title, summary, slots in _B2C_POLICIES if spec.households else _B2B_POLICIES:
        facts = _pick_facts(rand, slots)
        out.append((key, title, summary, _fact_body(f"{spec.company}'s policy on {title.lower()}.", facts), facts))
    return out


_STRENGTHS = (
    "lower list prices", "a faster solver", "a larger partner network", "better documentation",
    "a longer free trial", "tighter cloud integration", "more flexible licensing", "stronger brand recognition",
    "quicker support replies", "a bigger training catalogue",
)  # fmt: skip
_WEAKNESSES = (
    "frequent crashes on large designs", "slow support in Europe", "no on-premises option", "a steep learning curve",
    "hidden renewal fees", "weak security certifications", "an outdated user interface", "poor scaling past 32 cores",
    "limited warranty coverage", "long delivery times",
)  # fmt: skip


_DEALER_STRENGTHS = (
    "lower sticker prices", "more showrooms nearby", "a longer battery warranty", "faster delivery",
    "better trade-in offers", "a bigger used-car selection", "cheaper financing rates", "free home charging installs",
)  # fmt: skip
_DEALER_WEAKNESSES = (
    "slow service appointments", "hidden dealer fees", "pushy financing offers", "a thin charging network",
    "poor resale value", "long delivery times", "few loaner cars", "limited test-drive slots",
)  # fmt: skip


def competitor_article(rand: Rand, spec: KindSpec, competitor: str) -> tuple[str, str, str, list[Fact]]:
    """(title, summary, body, facts) of the internal competitive brief on ``competitor``: its strength, its
    weakness and how representatives answer it (internal-only knowledge)."""
    strengths, weaknesses = (_DEALER_STRENGTHS, _DEALER_WEAKNESSES) if spec.households else (_STRENGTHS, _WEAKNESSES)
    strength, weakness = rand.choice(strengths), rand.choice(weaknesses)
    ours = rand.choice(tuple(s for s in strengths if s != strength))
    facts: list[Fact] = [("strength", "Where they beat us", strength), ("weakness", "Where they fall short", weakness)]
    body = _fact_body(
        f"Internal only: how {competitor} compares with {spec.company}.",
        facts,
        f"When a customer mentions {competitor}, stress {ours} on our side and never share this brief.",
    )
    return f"Competitive Brief: {competitor}", f"How we position against {competitor}", body, facts


def rule_facts(spec: KindSpec, key: str) -> list[Fact]:
    """The internal facts of rule article ``key`` (each item the article lists, as the article words it)."""
    r, p = spec.rules, spec.products
    if key == "discount_tiers":
        if r.quantity_tiers:
            items = [f"{_pct(pct)} for {low} units or more" for low, pct in r.quantity_tiers]
        else:
            items = [f"{family}: up to {_pct(pct)}" for family, pct in r.family_caps.items()]
        return [("tier", "tier", i) for i in items] + [("offer_bonus", "offer bonus", _pct(r.offer_bonus))]
    if key == "discount_limit":
        return [("limit", "limit", _money(r.discount_limit))]
    if key == "no_discount":
        return [("family", "family", f"never discounted: {', '.join(r.no_discount_families)}")]
    if key == "quantity_limits":
        return [("limit", p[i].name, f"{p[i].name}: at most {n}") for i, n in r.quantity_limits.items()]
    if key == "exclusions":
        return [("pair", p[a].name, f"{p[a].name} with {p[b].name}") for a, b in r.exclusions]
    if key == "bundles":
        return [
            ("bundle", p[q].name, f"{p[q].name} requires {', '.join(p[c].name for c in cs)}")
            for q, cs in r.bundles.items()
        ]
    raise ValueError(f"no rule {key!r}")


def setup_facts(spec: KindSpec) -> list[Fact]:
    """The internal facts of the setup-times article (each product line's or model's days)."""
    if spec.model_days:
        return [
            ("days", spec.products[i].name, f"{spec.products[i].name}: {d} days") for i, d in spec.model_days.items()
        ]
    return [("days", family, f"{family}: {days} days") for family, days in spec.setup_days.items()]


_OFFERS = (
    "To make this right, I can offer you {remedy}.",
    "As a remedy, we will provide {remedy}.",
    "I have arranged {remedy} for you.",
    "We would like to offer {remedy} for the trouble.",
)


def remedy_email(rand: Rand, spec: KindSpec, customer: str, agent: str, product: str, issue: int, remedy: str) -> str:
    """The body of an agent's email on a case that offers the customer ``remedy``."""
    issue_name = spec.issues[issue][0].lower()
    offer = rand.choice(_OFFERS).format(remedy=remedy)
    return (
        f"Hello {customer}, thank you for your patience with the {issue_name} on {product}. {offer} "
        f"Please reply if anything is still unclear. Regards, {agent}"
    )


def remedy_chat_line(rand: Rand, remedy: str) -> str:
    """An agent's chat line offering ``remedy``."""
    return rand.choice(_OFFERS).format(remedy=remedy)


_REQUESTS = (
    "Would you be able to offer {remedy}?",
    "I think {remedy} would be fair here.",
    "Could we get {remedy} for the trouble?",
)


def remedy_request(rand: Rand, remedy: str) -> str:
    """A customer's sentence asking for ``remedy``."""
    return rand.choice(_REQUESTS).format(remedy=remedy)
