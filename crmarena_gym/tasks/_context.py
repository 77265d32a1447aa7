"""Task context shown to agents: domain conventions and the policies that define the answers.

The wording is ours. The conventions match :mod:`crmarena_gym.tasks._periods` and the gold code.
"""

from __future__ import annotations

import datetime as dt
import re

DOMAIN_DETAILS = """\
# Conventions
## Calendar quarters
- Q1 covers January 1 through March 31; Q2 April 1 through June 30; Q3 July 1 through
  September 30; Q4 October 1 through December 31 (first and last days included).
## Seasons
- Winter of a year starts on December 1 of that year and lasts through the end of February of the next year.
- Spring: March 1 through May 31. Summer: June 1 through August 31. Autumn (Fall): September 1 through
  November 30. First and last days included.
## Relative periods
- "The past N days, weeks, months or quarters" means the stretch that ends at the start of today and
  begins that many units earlier (a quarter is three months), so "the past 2 quarters" is the six months
  before today.
- "A month with significantly more cases than the others" means the month whose case count is larger than
  that of every other month in the period; the same month of different years counts together.
"""

ROUTING_POLICY = """\
## How new cases are routed
Assign a new case to the agent who fits it best, deciding by these rules in order:
1. Issue experience: the agent who has closed the most cases filed under the issue that best matches the new case.
2. Product experience: among agents still tied, the one who has closed the most cases about the product the
   new case concerns.
3. Workload: among agents still tied, the one with the fewest cases whose Status is not 'Closed'.
"""

HANDLE_TIME_POLICY = """\
## Handle time
- Handle time is how long a case took to close: its ClosedDate minus its CreatedDate.
- "Agents who handled more than N cases" counts, for each agent, the 'Owner Assignment' history entries
  naming that agent as the new owner within the period, whether the case was first assigned to them or
  transferred to them.
- Average handle time over an agent's cases leaves out cases that were transferred: a case counts only if
  it has a single 'Owner Assignment' entry within the period.
"""

TRANSFER_POLICY = """\
## Transfers
- A transfer is an 'Owner Assignment' history entry that moves a case from one agent to another; it counts
  for the agent the case was taken from (the entry's OldValue__c).
- The first assignment of a new case (no previous owner) is not a transfer.
- Only agents who made at least one transfer in the period are compared; when none of the qualifying agents
  made one, the question has no answer (None).
- "Agents who handled more than N cases" counts, for each agent, the 'Owner Assignment' history entries
  naming that agent as the new owner within the period, whether the case was first assigned to them or
  transferred to them.
"""

KNOWLEDGE_GUIDANCE = "- Answer briefly, using what the knowledge articles say."


def todays_date_line(today: str) -> str:
    """The context line that tells an agent the date (``- Today's date: 2023-04-01``)."""
    return f"- Today's date: {today}"


_TODAY_LINE = re.compile(r"^- Today's date: (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def read_todays_date(text: str) -> dt.date | None:
    """The date the first :func:`todays_date_line` in ``text`` gives; None if there is none (or it is no date).

    Example:
        >>> read_todays_date("- Contact Id: 003\\n- Today's date: 2023-04-01")
        datetime.date(2023, 4, 1)
    """
    match = _TODAY_LINE.search(text)
    if match is None:
        return None
    try:
        return dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None
