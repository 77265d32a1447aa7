from __future__ import annotations

import pytest

from crmarena_gym.tasks import extract_answer, normalize_answer, score_answer, token_f1


def test_exact_match_is_case_sensitive_and_null_means_none() -> None:
    assert score_answer("March", "March", metric="exact_match").reward == 1.0
    assert score_answer("march", "March", metric="exact_match").reward == 0.0
    assert score_answer(" March\n", "March", metric="exact_match").reward == 1.0
    assert score_answer("None", None, metric="exact_match").reward == 1.0
    assert score_answer("none", None, metric="exact_match").reward == 0.0
    assert score_answer("The answer is March", "March", metric="exact_match").reward == 0.0


def test_token_f1_by_hand() -> None:
    # pred tokens {30, days}, gold {within, 30, days, of, purchase}: P=1, R=2/5 -> F1 = 4/7.
    assert token_f1("30 days.", "Within 30 days of the purchase") == pytest.approx(4 / 7)
    assert token_f1("The Answer!", "answer") == 1.0
    assert token_f1("", "") == 1.0
    assert token_f1("x", "") == 0.0
    assert token_f1("red blue", "green") == 0.0
    assert normalize_answer("An apple, a PEAR and the plum.") == "apple pear and plum"
    assert score_answer("30 days", "30 days of purchase", metric="fuzzy_match").reward == pytest.approx(2 * 0.5 / 1.5)


@pytest.mark.parametrize(
    ("reply", "kind", "expected"),
    [
        ("The best agent is 005Ws000001xSR9IAM.", "user_id", "005Ws000001xSR9IAM"),
        ("005Ws000001xSR9IAM or 005Ws000001xa6vIAA", "user_id", "005Ws000001xSR9IAM or 005Ws000001xa6vIAA"),
        ("'ka0Ws000000QriDIAS'", "article_id", "ka0Ws000000QriDIAS"),
        ("No violation: None", "article_id", "None"),
        ("It peaked in MARCH.", "month", "March"),
        ("Cases peaked in March; I may be wrong.", "month", "March"),
        ("OK, the state is CA.", "state", "CA"),
        ("005Ws000001iZTSIA2 (None of the others qualify)", "user_id", "005Ws000001iZTSIA2"),
        ("march", "month", "march"),  # lower case is not read as a month
        ("Oregon (OR) closes fastest", "state", "OR"),
        ("  free text answer ", "text", "free text answer"),
        ("product 01tWs000002wRgDIAU", "user_id", "product 01tWs000002wRgDIAU"),
    ],
)
def test_lenient_extraction(reply: str, kind: str, expected: str) -> None:
    assert extract_answer(reply, kind) == expected  # type: ignore[arg-type]


def test_lenient_mode_scores_the_extracted_answer() -> None:
    score = score_answer("I think it's March.", "March", metric="exact_match", kind="month", mode="lenient")
    assert (score.reward, score.compared, score.mode) == (1.0, "March", "lenient")
    with pytest.raises(ValueError, match="'loose'"):
        score_answer("x", "x", metric="exact_match", mode="loose")  # type: ignore[arg-type]
