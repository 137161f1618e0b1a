"""Terminal renderings: plain strings, no dependencies, pure functions of their data."""

from __future__ import annotations

from collections.abc import Sequence

# Background colours that keep default-coloured text readable; cycled token by token.
TOKEN_COLOURS = (
    "\x1b[48;5;153m",
    "\x1b[48;5;222m",
    "\x1b[48;5;157m",
    "\x1b[48;5;217m",
    "\x1b[48;5;189m",
)
BLACK_TEXT, RESET = "\x1b[38;5;16m", "\x1b[0m"


def render_tokens(pieces: Sequence[str], colour: bool = True) -> str:
    """Text with its token boundaries shown: coloured backgrounds, or `|` between tokens.

    Whitespace is made visible (space as ·, newline as ↵ then a real newline) so a token made
    of spaces is still seen.
    """

    def visible(piece: str) -> str:
        return piece.replace(" ", "·").replace("\t", "→").replace("\n", "↵\n")

    if not colour:
        return "|".join(visible(p) for p in pieces)
    return "".join(
        f"{TOKEN_COLOURS[i % len(TOKEN_COLOURS)]}{BLACK_TEXT}{visible(p)}{RESET}"
        for i, p in enumerate(pieces)
    )
