"""The seeded synthetic org generator.

``generate_org(path, seed=0, scale=1.0, latent=True)`` writes a SQLite file with the 16 object
tables of the original CRMArena dump (same table and column names), filled with a sportswear
store's staff, catalog, customers, orders, cases, case histories, chats, emails and knowledge
articles, plus two tables the query engine hides from agents: ``crmarena_manifest`` (how the file
was made, row counts and a content hash) and ``crmarena_latent`` (the hidden variables).

Data invariants that task generators rely on (and tests check):

- Every case has one 'Case Creation' history row at its CreatedDate, one initial 'Owner
  Assignment' (OldValue__c empty, NewValue__c the first agent) at the same time, one more
  'Owner Assignment' per transfer (old and new owner, strictly between creation and closure), and
  a 'Case Closed' row at ClosedDate exactly when Status is 'Closed' (ClosedDate is empty
  otherwise). Case.OwnerId is the last assigned agent.
- A case's contact belongs to its account; its order item belongs to an activated order of that
  account placed on a day before the case.
- Chats and emails belong to cases, fall within the case's life (after its last transfer) and
  name the case owner as the agent.
- Knowledge__kav holds 45 online en_US articles: 10 policies (one per issue, three concrete rules
  each), 11 store FAQs and 24 product guides. Every stored KQA fact's answer appears verbatim in
  its article.

The latent variables are documented in ``crmarena_gym.datagen._latent``; ``read_latent(path)``
returns them, including what task generators need: ``violations`` (case id -> violated article,
rule and the offending sentence), ``clean_cases``, ``kqa_facts`` (article id, question, short
answer), ``product_attributes`` (category, audience, sport, type, material, colour, ...),
``agent_skill``, ``issue_experts``, ``policy_articles`` (issue id -> policy article id) and the
per-agent, per-customer, per-product and per-state parameters.

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "org.sqlite"
    >>> manifest = generate_org(path, seed=0, scale=0.05)
    >>> read_manifest(path).content_hash == manifest.content_hash
    True
"""

from __future__ import annotations

from crmarena_gym.datagen._articles import care_section
from crmarena_gym.datagen._facts import read_fact_answers
from crmarena_gym.datagen._generator import (
    MAX_SCALE,
    MIN_SCALE,
    ORIGINAL_ROW_COUNTS,
    generate_org,
    validate_seed_scale,
)
from crmarena_gym.datagen._manifest import (
    GENERATOR_VERSION,
    GENERATOR_VERSIONS,
    HIDDEN_PREFIX,
    LATENT_TABLE,
    MANIFEST_TABLE,
    Manifest,
    content_hash,
    manifest_kind,
    manifest_schema,
    read_hidden,
    read_latent,
    read_manifest,
)
from crmarena_gym.datagen._perturb import (
    PERTURBATION_KINDS,
    PERTURBATION_VERSION,
    Perturbation,
    parse_perturbations,
    perturb_org,
    perturbation_hash,
)
from crmarena_gym.datagen._policies import Breach, policy_title, read_breaches, states_rule
from crmarena_gym.datagen._pro import ProKnobs
from crmarena_gym.datagen._text import COMPANY, ISSUES, CaseReading, case_text, read_case_text

__all__ = [
    "COMPANY",
    "GENERATOR_VERSION",
    "GENERATOR_VERSIONS",
    "HIDDEN_PREFIX",
    "ISSUES",
    "LATENT_TABLE",
    "MANIFEST_TABLE",
    "MAX_SCALE",
    "MIN_SCALE",
    "ORIGINAL_ROW_COUNTS",
    "PERTURBATION_KINDS",
    "PERTURBATION_VERSION",
    "Breach",
    "CaseReading",
    "Manifest",
    "Perturbation",
    "ProKnobs",
    "care_section",
    "case_text",
    "content_hash",
    "generate_org",
    "manifest_kind",
    "manifest_schema",
    "parse_perturbations",
    "perturb_org",
    "perturbation_hash",
    "policy_title",
    "read_breaches",
    "read_case_text",
    "read_fact_answers",
    "read_hidden",
    "read_latent",
    "read_manifest",
    "states_rule",
    "validate_seed_scale",
]
