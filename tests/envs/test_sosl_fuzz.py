"""Fuzzing the environment with wildcard-heavy SOSL: every action answers, nothing raises out of ``step``."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crmarena_gym.envs import CRMArenaEnv
from crmarena_gym.org import ERROR_CODES

_LETTERS = "abcdeilnorstu"
_word = st.text(_LETTERS, min_size=1, max_size=5)
# Wildcard-heavy words: wildcards anywhere (leading ones included, which Salesforce refuses), escapes.
_pattern = st.lists(st.one_of(_word, st.sampled_from(["*", "?", "**", "*?", "\\*", "\\-", "-", ":", "'"])), max_size=6)
_term = st.one_of(
    _pattern.map("".join),
    _pattern.map(lambda parts: '"' + " ".join(parts) + '"'),
)
_operator = st.sampled_from([" OR ", " AND ", " AND NOT ", " "])
_terms = st.lists(st.tuples(_operator, _term), min_size=1, max_size=60).map(
    lambda pairs: pairs[0][1] + "".join(op + t for op, t in pairs[1:])
)
_returning = st.sampled_from(
    [
        "",
        " RETURNING EmailMessage(Id), LiveChatTranscript(Id), Case(Id)",
        " IN NAME FIELDS RETURNING Product2(Id, Name)",
        " RETURNING Knowledge__kav(Id, Title WHERE PublishStatus = 'Online')",
        " IN EMAIL FIELDS RETURNING User(Id), Contact(Id) LIMIT 5",
    ]
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=_terms, tail=_returning, wrap=st.sampled_from(["execute {}", "<execute>{}</execute>", "```\n{}\n```"]))
def test_wildcard_heavy_sosl_never_raises(terms: str, tail: str, wrap: str, env_org: Path, env_tasks: list) -> None:
    env = CRMArenaEnv("HTU", org=env_org, tasks=env_tasks, toolset="soql")
    env.reset(seed=0)
    action = wrap.format("FIND {" + terms + "}" + tail)
    if wrap.startswith("```"):
        action = "execute " + action
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs)
    assert (reward, terminated, truncated) == (0.0, False, False)
    if "error" in info:
        assert info["error"] in ERROR_CODES - {"QUERY_TIMEOUT", "UNKNOWN_EXCEPTION"}, obs
    else:
        assert info["action_kind"] == "query" and isinstance(info["result"].value, list)
