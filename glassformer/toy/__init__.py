"""Toy models from the article, small enough to check by hand: n-gram counts and word-level BPE."""
