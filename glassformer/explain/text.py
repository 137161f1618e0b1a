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


# Tables: the explain sections' numbers, as plain JSON-able dicts that the terminal renders.
Cell = float | int | str


def table(
    title: str, rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[Cell]]
) -> dict:
    """A labelled matrix: values[i][j] sits in row rows[i], column columns[j].

    Example: table("P(next | my)", ["my"], ["files"], [[0.3]])
    """
    if len(values) != len(rows) or any(len(row) != len(columns) for row in values):
        shape = [len(row) for row in values]
        raise ValueError(f"{title}: values of row lengths {shape} for {len(rows)}x{len(columns)}")
    return {"title": title, "rows": list(rows), "columns": list(columns), "values": values}


def lookup(labelled: dict, row: str, column: str) -> Cell:
    """The cell of a table() at the named row and column."""
    return labelled["values"][labelled["rows"].index(row)][labelled["columns"].index(column)]


def format_number(value: Cell) -> str:
    """Whole numbers without a point, others to at most 3 decimals (1 decimal from 100 up).

    Example: 1.0 -> "1", 0.25 -> "0.25", -613.44 -> "-613.4"
    """
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return str(int(value))
    text = f"{value:.{1 if abs(value) >= 100 else 3}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def render_table(labelled: dict) -> str:
    """A table() as aligned text: its title, a header of column labels, one line per row."""
    header = ["", *labelled["columns"]]
    lines = [header] + [
        [label, *(format_number(v) for v in row)]
        for label, row in zip(labelled["rows"], labelled["values"], strict=True)
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [labelled["title"]]
    for line in lines:
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        text.append("  " + "  ".join(cells).rstrip())
    return "\n".join(text)
