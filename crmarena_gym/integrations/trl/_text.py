"""Act and ReAct episodes in TRL: a ``rollout_func`` that plays text conversations with the trainer's model.

TRL's own multi-turn loop (``environment_factory``) runs tool calls only: a reply without one ends the
rollout. The text frameworks act in plain text (``execute <query>``, ``submit <answer>``, the paper's
tags), so :class:`TRLTextRollout` is passed as ``GRPOTrainer(..., rollout_func=...)`` beside the text
environment class (``environment_factory=trl_environment(..., framework="react")``). TRL makes one
environment per rollout and resets it with the row, as for function calling; the rollout function then
plays every rollout of the batch turn by turn:

1. the conversation the chat core keeps (:attr:`ChatSession.messages <crmarena_gym.chat.ChatSession>`:
   the system prompt, the question, each reply as the core reads it, each observation as a user message)
   is rendered with the trainer's chat template, exactly as a provider renders the messages evaluation
   sends;
2. the trainer's model generates a reply (through the trainer's own generation, so vLLM, transformers and
   the generation settings apply as configured);
3. the reply's text goes to the environment, which carries out its action through the chat core; the
   observation becomes the next user message; the episode ends at a submission or the turn budget.

The rollout's completion is one token sequence: each reply's tokens and the rendered observations between
them. ``env_mask`` marks the model's own tokens 1 and the environment's 0 (TRL trains on the 1s only); where
the core keeps less of a reply than was generated (text after the action is dropped), only the tokens the
conversation keeps stay in the sequence, as in the next prompt. A rollout stops (end reason ``stopped``)
when its completion would pass ``max_completion_length`` or the model's context. The reward is the
environment's ``get_reward()``, as with function calling.

A reply's text is its tokens decoded without special tokens. A model that writes a reasoning block before
its action (Qwen3's thinking) hands that text to the environment as part of the reply, where evaluation's
providers return reasoning apart: train such a model with thinking off (``GRPOConfig(chat_template_kwargs=
{"enable_thinking": False})``), or let ReAct's ``Thought:`` line carry the reasoning. The chat template must
render a conversation's earlier turns the same whatever follows (the rollout says so otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TRLTextRollout"]

#: ``generate(trainer, prompt_ids) -> (completion_ids, logprobs or None)``: one completion per prompt.
Generate = Callable[[Any, list[list[int]]], tuple[list[list[int]], list[list[float]] | None]]


def _trainer_generate(trainer: Any, prompt_ids: list[list[int]]) -> tuple[list[list[int]], list[list[float]] | None]:
    """One completion per prompt with the trainer's own generation (what its tool loop calls per turn)."""
    return trainer._generate_single_turn(prompt_ids, None, {}, 1)


class _Rollout:
    """One rollout's token sequence and its episode."""

    def __init__(self, env: Any, prompt_ids: list[int]) -> None:
        self.env = env
        self.prompt_ids = prompt_ids
        self.completion: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.done = False

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.completion

    def add(self, ids: Sequence[int], model: int, logprobs: Sequence[float] | None) -> None:
        """Append ``ids``, the first ``model`` of them the model's own tokens (with their ``logprobs``)."""
        self.completion += list(ids)
        self.mask += [1] * model + [0] * (len(ids) - model)
        self.logprobs += list(logprobs[:model]) if logprobs is not None else [0.0] * model
        self.logprobs += [0.0] * (len(ids) - model)


class TRLTextRollout:
    """A ``rollout_func`` for GRPOTrainer that plays Act or ReAct episodes (see the module docs).

    Args:
        generate: How to generate one reply per prompt (token ids in, token ids and their log-probabilities
            or None out); by default the trainer's own generation. A test passes scripted replies here.

    Example:
        >>> from crmarena_gym.integrations.trl import TRLTextRollout, trl_environment
        >>> env_cls = trl_environment(getfixture("tiny_org"), toolset="soql", framework="react")
        >>> [n for n, f in vars(env_cls).items() if callable(f) and not n.startswith("_")]
        []
        >>> rollout = TRLTextRollout()  # GRPOTrainer(..., environment_factory=env_cls, rollout_func=rollout)
    """

    def __init__(self, generate: Generate | None = None) -> None:
        self.generate = generate

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        environments = getattr(trainer, "environments", None)
        if not environments or len(environments) != len(prompts):
            raise ValueError(
                "TRLTextRollout plays the environments TRL made for the batch: pass the text environment class "
                "as environment_factory (trl_environment(..., framework='act' or 'react')) beside rollout_func"
            )
        tokenizer = trainer.processing_class
        template = {"chat_template": getattr(trainer, "chat_template", None)}
        template.update(getattr(trainer, "chat_template_kwargs", None) or {})
        limit = getattr(trainer, "max_completion_length", None)
        config = getattr(getattr(trainer, "model", None), "config", None)
        context = getattr(getattr(config, "text_config", config), "max_position_embeddings", None)
        generate = self.generate or _trainer_generate

        def render(messages: list[dict[str, Any]]) -> list[int]:
            return list(
                tokenizer.apply_chat_template(
                    messages, add_generation_prompt=True, tokenize=True, return_dict=False, **template
                )
            )

        rollouts = []
        for env in environments:
            session = getattr(env, "session", None)
            if session is None or session.framework == "fc" or session.done:
                raise ValueError(
                    "TRLTextRollout needs text environments reset for this batch (trl_environment(..., "
                    f"framework='act' or 'react')); got {type(env).__name__} with "
                    f"{'no episode' if session is None else repr(session.framework) + ' episode'}"
                )
            rollouts.append(_Rollout(env, render(session.messages)))
        active = list(rollouts)
        sampled_logprobs = False  # TRL's transformers generation gives none: the rollout then returns None
        decode = getattr(trainer, "_tokenizer", None) or tokenizer
        while active:
            replies, logprobs = generate(trainer, [r.ids for r in active])
            sampled_logprobs = sampled_logprobs or logprobs is not None
            still = []
            for n, rollout in enumerate(active):
                reply = list(replies[n])
                reply_logprobs = logprobs[n] if logprobs is not None else None
                text = decode.decode(reply, skip_special_tokens=True)
                observation = rollout.env._reply(text)
                if observation is None:  # the episode is over: the last reply stays as generated
                    rollout.add(reply, len(reply), reply_logprobs)
                    continue
                following = render(rollout.env.session.messages)
                before = rollout.ids
                if following[: len(before)] != before:
                    raise ValueError(
                        "the chat template renders the earlier turns differently once a turn is added, so one "
                        "token sequence cannot hold the conversation; use a template that renders a "
                        "conversation's turns the same whatever follows"
                    )
                tail = following[len(before) :]
                kept = 0
                while kept < min(len(reply), len(tail)) and reply[kept] == tail[kept]:
                    kept += 1  # the reply's tokens the conversation keeps as generated
                past_limit = limit is not None and len(rollout.completion) + len(tail) > limit
                if past_limit or (context is not None and len(following) >= context):
                    rollout.add(reply, len(reply), reply_logprobs)
                    rollout.env.session.stop()
                    continue
                rollout.add(tail, kept, reply_logprobs)
                still.append(rollout)
            active = still
        if limit is not None:
            for rollout in rollouts:
                del rollout.completion[limit:], rollout.mask[limit:], rollout.logprobs[limit:]
        return {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion for r in rollouts],
            "logprobs": [r.logprobs for r in rollouts] if sampled_logprobs else None,
            "env_mask": [r.mask for r in rollouts],
        }
