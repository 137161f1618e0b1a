"""Tokenizers: text -> token ids -> text, the article's "Tokenizing" and "Byte pair encoding".

    CharTokenizer   one id per character (tiny models, the nanoGPT comparison)
    BPETokenizer    byte-level BPE with regex pre-tokenization and special tokens

`load_tokenizer(path)` reads either from its versioned JSON file; `train_bpe_tokenizer`
learns merges from text.
"""
