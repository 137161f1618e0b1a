"""Tokenizers: text -> token ids -> text, the article's "Tokenizing" and "Byte pair encoding".

    CharTokenizer   one id per character (tiny models, the nanoGPT comparison)
    BPETokenizer    byte-level BPE with regex pre-tokenization and special tokens
    RenumberedTokenizer  a BPETokenizer with a published vocabulary's ids (GPT-2, Whisper)

`load_tokenizer(path)` reads any of them from its versioned JSON file; `train_bpe_tokenizer`
learns merges from text; `tokenizer_from_hf_json` reads a Hugging Face byte-level tokenizer.json.
"""
