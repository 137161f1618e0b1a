"""The language-model task's data: its tokenizer and its token files.

The token stream itself is cached as a memory-mapped file by train/data.py.
"""

from __future__ import annotations

from pathlib import Path

from glassformer.tokenizer.base import Tokenizer


def load_or_train_tokenizer(spec: str, files: list[Path], bpe_vocab_size: int) -> Tokenizer:
    """The tokenizer named by `spec`: a file, or one trained on `files` (char or bpe)."""
    from glassformer.textfiles import read_text_blocks
    from glassformer.tokenizer.char import CharTokenizer
    from glassformer.tokenizer.io import load_tokenizer
    from glassformer.tokenizer.training import train_bpe_from_files

    if spec == "char":
        return CharTokenizer.train(block for path in files for block in read_text_blocks(path))
    if spec == "bpe":
        return train_bpe_from_files(files, bpe_vocab_size, progress=True)
    return load_tokenizer(spec)
