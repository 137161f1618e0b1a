"""The first line of an error (errors.first_line): what every door shows of a message it did
not write itself."""

from __future__ import annotations

from glassformer.errors import first_line


def test_the_first_line_of_an_error_or_a_text() -> None:
    assert first_line(ValueError("bad value\n  at line 3")) == "bad value"
    assert first_line(ValueError("\n  spaced  \nmore")) == "spaced"
    assert first_line(KeyError()) == "KeyError"
    assert first_line(ValueError(""), empty="bad request") == "bad request"
    assert first_line("") == "" and first_line("one\ntwo") == "one"
