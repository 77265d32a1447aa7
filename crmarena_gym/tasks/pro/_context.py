"""What a Pro instance shows beside its query: the Domain Details block and the personas (our own wording).

PRO.md section 2.2 gives the conventions the Domain Details state (calendar quarters, seasons with the winter's
year, relative windows ending on today's date with both ends inclusive, "past N quarters" as 3N months, "significantly
more" as a strict maximum with the same month of different years counted together); section 2.4 the three persona
pools (an employee's work style for the internal categories and internal_operation_data, a consumer's type for the
customer-facing questions, a business buyer's role for named_entity_disambiguation). The sentences are ours; none is
Pro's text.
"""

from __future__ import annotations

from types import MappingProxyType

#: The Domain Details shown (in aided mode) with every Pro instance: the window conventions of PRO.md 2.2.
PRO_DOMAIN_DETAILS = """\
# Domain details
## Quarters
- Q1 is January 1 through March 31, Q2 April 1 through June 30, Q3 July 1 through September 30, Q4 October 1
  through December 31; the first and the last day both belong to the quarter.
## Seasons
- Winter of a year Y starts on December 1 of Y and ends on the last day of February of Y+1 (so "winter of 2022"
  is December 2022 to February 2023).
- Spring is March 1 through May 31, Summer June 1 through August 31, Autumn (also called Fall) September 1 through
  November 30; first and last days included.
## Periods counted back from today
- "The past N days, weeks, months or quarters" starts N such units before today's date and ends on today's date,
  both days included. A week is 7 days, a fortnight 14 days, a month a calendar month (the day kept, or the last
  day of a shorter month), a quarter three calendar months: "the past 2 quarters" is the six months up to today.
- A record belongs to a period when the date part of the timestamp that matters falls in it.
## Comparisons
- A month has "significantly more" cases than the others when its count is larger than that of every other month
  of the period; when a period spans more than a year, the same month of different years counts as one month.
- When nothing in the period qualifies, the answer is None.
"""

_EMPLOYEE = (
    "You plan your week on Sunday evening and like every number backed by a report you can open.",
    "You are new to the team and ask for the reasoning behind an answer, not only the answer.",
    "You juggle several accounts at once and want replies you can act on between two calls.",
    "You trust data more than anecdotes and double-check anything that looks surprising.",
    "You prefer short bullet points and lose patience with long explanations.",
    "You are a seasoned manager who has seen every dashboard and spots a wrong filter at once.",
    "You like to understand how a figure was computed so that you can repeat it next quarter.",
    "You are calm under deadlines but expect precise answers when the quarter closes.",
    "You think in terms of team performance and fairness when comparing colleagues.",
    "You keep meticulous notes and notice when an answer contradicts an earlier one.",
    "You are an operations lead who cares about process more than about individual cases.",
    "You are curious and often follow up with a second question about the same records.",
    "You work remotely across time zones and write in brief, to-the-point messages.",
    "You are skeptical of tools and want to see the records an answer rests on.",
    "You coach junior staff and ask questions the way you would want them answered.",
    "You are detail-minded about dates and always check which period a figure covers.",
)
_CONSUMER = (
    "You are buying for the first time and do not know the industry's vocabulary.",
    "You compare prices carefully and ask about every discount that might apply.",
    "You are in a hurry and want the shortest possible answer.",
    "You are annoyed after a bad experience and expect the problem to be taken seriously.",
    "You are a loyal customer of several years who expects to be recognised.",
    "You research thoroughly before any purchase and ask precise technical questions.",
    "You are polite but persistent, and you rephrase a question until it is answered.",
    "You are cautious about sharing your own data and ask why anything is needed.",
    "You are shopping on behalf of a relative and relay their questions.",
    "You care about the environmental footprint of what you buy.",
    "You are comparing this company with a competitor and say so openly.",
    "You prefer plain words and ask for jargon to be explained.",
    "You are tech-savvy and expect answers at the level of the specification sheet.",
    "You are budget-constrained and want to know the total cost up front.",
    "You are chatty and mix your question with stories about your situation.",
    "You are elderly and careful, and you like confirmation of each step.",
)
_BUYER = (
    "You are a procurement manager who needs exact product identifiers for a purchase order.",
    "You are an IT director checking what your company already bought before renewing.",
    "You are a chief financial officer reviewing recent spending line by line.",
    "You are an engineering lead who remembers what a product does but not its name.",
    "You are an operations manager reconciling deliveries with invoices.",
    "You are a small-business owner who handles purchasing yourself between other duties.",
    "You are a project manager tracking which tools your team received this month.",
    "You are a security officer auditing the software your company recently installed.",
    "You are a department head preparing a budget request from past purchases.",
    "You are an office administrator who placed the order on someone else's behalf.",
    "You are a consultant buying for a client and need records for their files.",
    "You are a chief technology officer evaluating whether a recent purchase fits your roadmap.",
    "You are a purchasing assistant who must match every item to its catalogue entry.",
    "You are a compliance manager who needs precise records for an audit.",
    "You are a facilities manager who ordered equipment for a new site.",
    "You are a founder of a growing startup, buying quickly and checking later.",
)
#: The three persona pools of 16 sentences each, by :data:`~crmarena_gym.tasks.pro.ProCategorySpec.persona_pool`.
PERSONA_POOLS = MappingProxyType({"employee": _EMPLOYEE, "consumer": _CONSUMER, "buyer": _BUYER})
