"""Spoken commands: grammars (what can be said) and speech synthesis (how it sounds)."""
