"""Byte-level BPE tokenizers built with Hugging Face `tokenizers`, as Whisper's is built.

Trained on a small multilingual corpus in memory, nothing downloaded; shared by the
tokenizer.json reader's tests and the CTranslate2 conversion tests.
"""

from __future__ import annotations

from typing import Any

from tests.helpers import MULTILINGUAL

WHISPER_SPECIALS = [  # Whisper's special tokens, a few languages only
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|de|>",
    "<|zh|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
]
TIMESTAMPS = [f"<|{i * 0.02:.2f}|>" for i in range(5)]  # "<|0.00|>" ... "<|0.08|>"


def train_byte_level_bpe(vocab_size: int = 600) -> Any:
    """A `tokenizers.Tokenizer`: ByteLevel pre-tokenizer and decoder, BPE over all 256 bytes.

    "<|endoftext|>" is given to the trainer (so it takes id 0, before the alphabet, unlike
    GPT-2's 50256); the other specials and the timestamps are added after training, at the
    end, as Whisper's are. The file's ids are therefore not ours: the reader must renumber.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=WHISPER_SPECIALS[:1],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [MULTILINGUAL] * 5 + ["the quick brown fox jumps over the lazy dog"] * 20
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.add_special_tokens(WHISPER_SPECIALS[1:])
    tokenizer.add_tokens(TIMESTAMPS)  # not special, as in Hugging Face's Whisper files
    return tokenizer
