"""Reading a knowledge question's answer off an article's text, as the generator's articles state it.

Every knowledge fact the generator stores (``kqa_facts``) is a question and a short answer that is a verbatim part
of one sentence of its article: a policy's rule (:mod:`crmarena_gym.datagen._policies`, its numbers drawn per org),
a general article's or a category guide's sentence, or a care section's line about a product
(:data:`~crmarena_gym.datagen._articles.CARE_FORMS`). :func:`read_fact_answers` knows those sentences as templates
(what comes before and after the answer, and the answer's own template) and reads the answer where the article's
text puts it: the sentence as the generator writes it first, else whatever one sentence's text stands where the answer
goes (a reworded answer), so that an article lost or altered changes what is read.

Where a fact's answer has no field (the general articles' and the category guides' facts, the same in every org),
its words are the generator's own: reading them off an intact article only finds the sentence that states them;
where it has fields (a policy's numbers, a care line's warranty, cleaning, storage and material, drawn per org) those
are read off the text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from crmarena_gym.datagen._articles import CARE_FORMS, CATEGORY_GUIDES, GENERAL_ARTICLES
from crmarena_gym.datagen._policies import build_policies
from crmarena_gym.datagen._text import COMPANY, FIELD, template_regex

__all__ = ["read_fact_answers"]

_ANSWER = "answer"


@dataclass(frozen=True)
class _Form:
    """A fact's question and the sentence that answers it, each a template (``{field}``: text that varies, the same
    in both where the name is; ``{answer}`` in the sentence: where the answer is), and the answer's own template
    (its words and fields, as the generator writes it)."""

    question: str
    sentence: str
    answer: str = "{" + _ANSWER + "}"

    def question_pattern(self) -> re.Pattern[str]:
        return re.compile(_pattern(self.question, {}))

    def sentence_patterns(self, fields: dict[str, str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """The sentence as the generator writes it (the answer in its own words), then the sentence with any text of
        one sentence where the answer goes (what a reworded answer reads as)."""
        written = f"(?P<{_ANSWER}>{_pattern(self.answer, fields, nested=True)})"
        anything = f"(?P<{_ANSWER}>{_IN_SENTENCE})"
        return (
            re.compile(_pattern(self.sentence, fields, answer=written)),
            re.compile(_pattern(self.sentence, fields, answer=anything)),
        )


# Any text within one sentence of a line: it never runs on past a full stop that ends one ("... cash. Gift ...").
_IN_SENTENCE = r"(?:(?!\. [A-Z])[^\n])+?"


def _pattern(template: str, fields: dict[str, str], *, answer: str | None = None, nested: bool = False) -> str:
    """``template`` as a regular expression: a field given in ``fields`` as its text, ``{answer}`` as ``answer``, any
    other field as any text of one sentence (captured by its name the first time, unless ``nested``)."""
    given = {_ANSWER: answer} if answer is not None else {}
    return template_regex(template, _IN_SENTENCE, texts=fields, patterns=given, capture=not nested)


def _literal(text: str) -> str:
    """``text`` (written out: no field left) as a template, which it is as long as it holds no brace."""
    assert "{" not in text and "}" not in text, f"a written-out fact holds a brace: {text!r}"
    return text


def _stated(question: str, answer: str, sentence: str) -> _Form:
    """The form of a fact whose ``answer`` is a verbatim part of ``sentence`` (templates of the same fields)."""
    at = sentence.index(answer)
    return _Form(question, sentence[:at] + "{" + _ANSWER + "}" + sentence[at + len(answer) :], answer)


def _forms() -> tuple[_Form, ...]:
    forms: list[_Form] = []
    for _title, _summary, _intro, facts in GENERAL_ARTICLES:
        for question, answer, sentence in facts:
            filled = (_literal(text.format(company=COMPANY)) for text in (question, answer, sentence))
            forms.append(_stated(*filled))
    for guides in CATEGORY_GUIDES:
        for _title, _summary, facts in guides:
            forms += [_stated(*(_literal(text) for text in fact)) for fact in facts]
    for policy in build_policies(COMPANY):
        texts = [rule.text for rule in policy.rules] + [policy.intro, policy.closing, policy.summary]
        for question, answer in policy.facts:
            forms.append(_stated(question, answer, next(t for t in texts if answer in t)))
    forms += [_Form(question, sentence) for question, sentence, _key in CARE_FORMS]
    return tuple(forms)


@functools.cache
def _anchored() -> tuple[tuple[_Form, str], ...]:
    """Each fact's form and the longest fixed text of its question, built at the first read (not at import: most
    commands read no fact). A question that text is not in cannot be the form's, so most forms' patterns are
    never compiled: compiling all 148 cost an evaluation's first knowledge episode some 20 ms."""
    return tuple((form, max(FIELD.split(form.question)[::2], key=len)) for form in _forms())


@functools.cache
def _question_pattern(form: _Form) -> re.Pattern[str]:
    return form.question_pattern()


@functools.lru_cache(maxsize=1024)
def _sentence_patterns(form: _Form, fields: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return form.sentence_patterns(dict(fields))


@functools.lru_cache(maxsize=256)
def _asked(question: str) -> tuple[tuple[_Form, tuple[tuple[str, str], ...]], ...]:
    """The facts ``question`` asks: each one's form and the fields the question gives (a question is read once
    however many articles are read for it)."""
    found = []
    for form, anchor in _anchored():
        if anchor in question:
            for asked in _question_pattern(form).finditer(question):
                found.append((form, tuple((k, v) for k, v in asked.groupdict().items() if v is not None)))
    return tuple(found)


def read_fact_answers(question: str, article: str) -> tuple[str, ...]:
    """The answers ``article``'s text gives to ``question`` (a text that asks one of the generator's knowledge
    questions, in any wrapping): for each fact the question asks, what the article's sentence of that fact says where
    the answer goes. None for a question no fact asks or an article that states none of its sentences.

    Example:
        >>> article = "Care:\\nThe Trail Pack is covered by a warranty of 3 years from the date of purchase."
        >>> read_fact_answers("A customer asks: How long is the warranty on the Trail Pack?", article)
        ('3 years',)
        >>> read_fact_answers("How long is the warranty on the Trail Pack?", article.replace("3 years", "a decade"))
        ('a decade',)
        >>> read_fact_answers("How long is the warranty on the Summit Tent?", article)
        ()
    """
    found: list[str] = []
    for form, fields in _asked(question):
        written, reworded = _sentence_patterns(form, fields)
        read = [m.group(_ANSWER) for m in written.finditer(article)]
        found += read or [m.group(_ANSWER) for m in reworded.finditer(article)]
    return tuple(dict.fromkeys(found))
