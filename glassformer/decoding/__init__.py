"""Decoding strategies, outside the models and shared by every task (see search.py)."""
