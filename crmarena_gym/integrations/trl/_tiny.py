"""A tiny, randomly initialised chat model and a tokenizer trained on the given texts, built locally.

For checking the training plumbing (``GRPOTrainer`` with the environment class) on a CPU in seconds, with
nothing downloaded from a model hub. The model learns nothing useful in a few steps: it shows the
plumbing, not learning.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["SPECIAL_TOKENS", "tiny_model", "tiny_tokenizer"]

#: The chat template's special tokens (Qwen3's, whose template TRL knows how to parse tool calls from).
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)


def tiny_tokenizer(texts: Iterable[str], *, vocab_size: int = 1000) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, with Qwen3's chat template (shipped with TRL).

    Args:
        texts: What to train on (the environment's prompts, observations and tool schemas).
        vocab_size: The vocabulary size.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
        padding_side="left",
    )
    fast.chat_template = qwen3_chat_template
    return fast


def tiny_model(tokenizer: Any, *, seed: int = 0, hidden_size: int = 32, max_length: int = 16384) -> Any:
    """A one-layer Qwen3 causal LM with random weights (seeded) over ``tokenizer``'s vocabulary."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=hidden_size // 2,
        max_position_embeddings=max_length,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    return Qwen3ForCausalLM(config)
