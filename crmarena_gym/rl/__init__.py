"""Reinforcement learning on CRMArena: discrete candidate actions, numeric observations, RLlib glue.

:class:`CandidateActionWrapper` turns a text environment into ``Discrete(K)`` actions over generated
candidate actions and ``Dict({"observations": Box, "action_mask": Box, "action_features": Box})``
observations (each candidate with its feature vector), which RLlib,
and any library that reads Gymnasium spaces, can train on. The knowledge tasks (PVI, KQA) get searches
built from the question or the case's conversation and answers taken from the articles found
(:class:`KnowledgeSlots`, :func:`answer_spans`). The RLlib functions import Ray only when
called (``pip install 'crmarena-gym[rl]'``).

Every wrapper has a help level (``level=``, :data:`HELP_LEVELS`; in every ``info`` as ``help_level``):
``tools`` (the policy names a function and types each argument from the values seen:
:class:`TypedCallCandidates`), ``parsed`` (the default: whole calls, arguments parsed from the question's
text by :func:`parse_question`), ``oracle-args`` (arguments from the instance's hidden parameters,
:func:`question_facts`: privileged) and ``text`` (the text environment itself, :class:`TextLevelWrapper`).
Baselines that learn nothing: :class:`RandomCandidatePolicy`, :func:`search_fixed_orders` with
:class:`FixedSlotOrder`, and :func:`answer_priors`.

Example:
    >>> import gymnasium as gym
    >>> import crmarena_gym.rl  # registers CRMArena-Discrete-v0
    >>> "CRMArena-Discrete-v0" in gym.registry
    True
"""

from __future__ import annotations

import gymnasium as gym

from crmarena_gym.rl._baselines import AnswerPrior, FixedOrder, FixedSlotOrder, answer_priors, search_fixed_orders
from crmarena_gym.rl._candidates import (
    DEFAULT_ANSWER_FUNCTIONS,
    DEFAULT_CHOICES,
    DEFAULT_TEMPLATES,
    MISSING,
    NONE_AFTER,
    PARSED_TEMPLATES,
    Binding,
    CallTemplate,
    CandidateGenerator,
    CandidateState,
    ChoiceTemplate,
    Fact,
    FactItem,
    ResultOf,
    SlotGroup,
    StepRecord,
    ToolPipelineCandidates,
    ValuesById,
    call_text,
    found_nothing,
    observed_values,
)
from crmarena_gym.rl._encoding import Encoder, HashingEncoder, stable_hash
from crmarena_gym.rl._facts import QUESTION_PARAMS, QuestionFacts, question_facts
from crmarena_gym.rl._features import PHRASE_FEATURES, CandidateFeaturizer, SlotFeatures, candidate_context, overlap
from crmarena_gym.rl._knowledge import (
    CONVERSATION_FUNCTIONS,
    SEARCH_FUNCTION,
    KnowledgeSlots,
    KnowledgeView,
    knowledge_view,
    search_term_of,
)
from crmarena_gym.rl._levels import (
    DEFAULT_HELP_LEVEL,
    HELP_LEVEL_NOTES,
    HELP_LEVELS,
    PRIVILEGED_HELP_LEVELS,
    check_help_level,
    level_facts,
)
from crmarena_gym.rl._parse import (
    parse_direction,
    parse_n_cases,
    parse_purchase_date,
    parse_question,
    parse_search_term,
    parse_window,
    question_part,
)
from crmarena_gym.rl._rllib import (
    RLLIB_ENV_NAME,
    action_masking_module_class,
    greedy_policy,
    masked_ppo_config,
    parametric_module_class,
    register_rllib_env,
    rllib_env_creator,
)
from crmarena_gym.rl._rollout import EvaluationResult, RandomCandidatePolicy, evaluate_policy
from crmarena_gym.rl._spans import (
    PHRASE_CUES,
    PHRASE_TRAITS,
    QUESTION_KINDS,
    SPAN_WEIGHTS,
    Span,
    agent_lines,
    answer_spans,
    best_reply,
    number_relation,
    numbers,
    phrase_traits,
    question_kind,
    question_text,
    search_terms,
    sentences,
    span_consensus,
    stem,
)
from crmarena_gym.rl._typed import (
    ARGUMENT_KINDS,
    ArgumentSpec,
    PendingCall,
    TypedCallCandidates,
    TypedEncoder,
    TypedSlotFeatures,
    TypedValue,
    argument_options,
    argument_specs,
)
from crmarena_gym.rl._wrapper import (
    EMPTY_SLOT_ACTION,
    INFO_KEYS,
    CandidateActionWrapper,
    TextLevelWrapper,
    default_generator,
    make_discrete_env,
    make_level_env,
)

#: The Gymnasium id of :func:`make_discrete_env`.
DISCRETE_ENV_ID = "CRMArena-Discrete-v0"

if DISCRETE_ENV_ID not in gym.registry:
    gym.register(id=DISCRETE_ENV_ID, entry_point="crmarena_gym.rl.crmarena_gym:make_discrete_env")

__all__ = [
    "ARGUMENT_KINDS",
    "CONVERSATION_FUNCTIONS",
    "DEFAULT_ANSWER_FUNCTIONS",
    "DEFAULT_CHOICES",
    "DEFAULT_HELP_LEVEL",
    "DEFAULT_TEMPLATES",
    "DISCRETE_ENV_ID",
    "EMPTY_SLOT_ACTION",
    "HELP_LEVELS",
    "HELP_LEVEL_NOTES",
    "INFO_KEYS",
    "MISSING",
    "NONE_AFTER",
    "PARSED_TEMPLATES",
    "PHRASE_CUES",
    "PHRASE_FEATURES",
    "PHRASE_TRAITS",
    "PRIVILEGED_HELP_LEVELS",
    "QUESTION_KINDS",
    "QUESTION_PARAMS",
    "RLLIB_ENV_NAME",
    "SEARCH_FUNCTION",
    "SPAN_WEIGHTS",
    "AnswerPrior",
    "ArgumentSpec",
    "Binding",
    "CallTemplate",
    "CandidateActionWrapper",
    "CandidateFeaturizer",
    "CandidateGenerator",
    "CandidateState",
    "ChoiceTemplate",
    "Encoder",
    "EvaluationResult",
    "Fact",
    "FactItem",
    "FixedOrder",
    "FixedSlotOrder",
    "HashingEncoder",
    "KnowledgeSlots",
    "KnowledgeView",
    "PendingCall",
    "QuestionFacts",
    "RandomCandidatePolicy",
    "ResultOf",
    "SlotFeatures",
    "SlotGroup",
    "Span",
    "StepRecord",
    "TextLevelWrapper",
    "ToolPipelineCandidates",
    "TypedCallCandidates",
    "TypedEncoder",
    "TypedSlotFeatures",
    "TypedValue",
    "ValuesById",
    "action_masking_module_class",
    "agent_lines",
    "answer_priors",
    "answer_spans",
    "argument_options",
    "argument_specs",
    "best_reply",
    "call_text",
    "candidate_context",
    "check_help_level",
    "default_generator",
    "evaluate_policy",
    "found_nothing",
    "greedy_policy",
    "knowledge_view",
    "level_facts",
    "make_discrete_env",
    "make_level_env",
    "masked_ppo_config",
    "number_relation",
    "numbers",
    "observed_values",
    "overlap",
    "parametric_module_class",
    "parse_direction",
    "parse_n_cases",
    "parse_purchase_date",
    "parse_question",
    "parse_search_term",
    "parse_window",
    "phrase_traits",
    "question_facts",
    "question_kind",
    "question_part",
    "question_text",
    "register_rllib_env",
    "rllib_env_creator",
    "search_fixed_orders",
    "search_term_of",
    "search_terms",
    "sentences",
    "span_consensus",
    "stable_hash",
    "stem",
]
