"""Help levels: how much of the work the discrete action space does for the policy, stated in every run.

A discrete policy cannot type text, so the candidate actions it chooses among carry help; how much
decides what a success rate measures. Each level is a wrapper option (``level=``), put in every
``info`` as ``help_level`` and in the run's records:

- ``text``: no help. The text environment itself (:class:`~crmarena_gym.envs.CRMArenaEnv`): the policy
  writes its calls and answers. RLlib and Stable-Baselines3 cannot train on text actions; LLM trainers can
  (TRL, SkyRL, OpenEnv: :mod:`crmarena_gym.integrations`). :class:`~crmarena_gym.rl.TextLevelWrapper`
  only records the level (and the step cost).
- ``tools``: the candidates name the tools; the policy types each argument itself, choosing one of the
  values of the right type seen so far (in the question, its context and the results) or leaving an
  optional argument out (:class:`~crmarena_gym.rl.TypedCallCandidates`). Nothing is read for it.
- ``parsed``: today's candidates (whole calls, their arguments filled in), every argument taken from the
  question's text by a parser (:func:`~crmarena_gym.rl.parse_question`: dates, windows, thresholds,
  min/max words, quoted ids, the described product) or from earlier results. The default.
- ``oracle-args``: today's candidates with the arguments taken from the instance's hidden parameters
  (:func:`~crmarena_gym.rl.question_facts`: the window's dates, the threshold, the direction, NED's
  purchase date and product type). Privileged: the figures made before the levels existed are this
  level's, and it reproduces them; a question the parser would misread is read right here.

A leak test (``tests/rl/test_levels.py``) perturbs every hidden parameter of the instances, the question
text unchanged, and requires the same candidates and features at ``text``, ``tools`` and ``parsed``.
"""

from __future__ import annotations

from crmarena_gym.rl._facts import QuestionFacts, question_facts
from crmarena_gym.rl._parse import parse_question
from crmarena_gym.tasks import TaskInstance

__all__ = [
    "DEFAULT_HELP_LEVEL",
    "HELP_LEVELS",
    "HELP_LEVEL_NOTES",
    "PRIVILEGED_HELP_LEVELS",
    "check_help_level",
    "level_facts",
]

#: The help levels, least help first.
HELP_LEVELS: tuple[str, ...] = ("text", "tools", "parsed", "oracle-args")
#: The level of a run that names none: the most help that reads nothing hidden.
DEFAULT_HELP_LEVEL = "parsed"
#: The levels whose candidates read an instance's hidden parameters.
PRIVILEGED_HELP_LEVELS: frozenset[str] = frozenset({"oracle-args"})
#: One line per level, for tables and logs.
HELP_LEVEL_NOTES: dict[str, str] = {
    "text": "the text environment: the policy writes calls and answers (LLM trainers; no discrete actions)",
    "tools": "candidates name tools; the policy types each argument from the values seen so far",
    "parsed": "whole calls, arguments parsed from the question text and taken from earlier results",
    "oracle-args": "whole calls, arguments from the instance's hidden parameters (privileged)",
}


def check_help_level(level: object) -> str:
    """``level`` if it is a help level; a ValueError naming the levels otherwise.

    Example:
        >>> check_help_level("parsed")
        'parsed'
        >>> check_help_level("oracle")
        Traceback (most recent call last):
        ...
        ValueError: unknown help level 'oracle'; the levels are 'text', 'tools', 'parsed', 'oracle-args'
    """
    if not isinstance(level, str) or level not in HELP_LEVELS:
        shown = ", ".join(repr(name) for name in HELP_LEVELS)
        raise ValueError(f"unknown help level {level!r}; the levels are {shown}")
    return level


def level_facts(level: str, instance: TaskInstance, text: str) -> QuestionFacts:
    """The question facts a candidate generator gets at ``level``.

    ``oracle-args`` reads the instance's hidden parameters (:func:`~crmarena_gym.rl.question_facts`);
    ``parsed`` reads the text alone (:func:`~crmarena_gym.rl.parse_question`); ``tools`` gets the text and
    the task and nothing read from them (the policy types the arguments).

    Args:
        level: ``tools``, ``parsed`` or ``oracle-args``.
        instance: The episode's instance (only ``oracle-args`` reads more of it than its task).
        text: The first observation.
    """
    check_help_level(level)
    if level == "oracle-args":
        return question_facts(instance, text)
    if level == "parsed":
        return parse_question(instance.abbrev, text)
    if level == "tools":
        return QuestionFacts(task=instance.abbrev, text=text)
    raise ValueError(
        "the 'text' help level has no candidates and no facts: it is the text environment itself "
        "(TextLevelWrapper records the level)"
    )
