"""Every ```python block of docs/walkthrough.md runs, each in a fresh namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

WALKTHROUGH = Path(__file__).resolve().parents[2] / "docs" / "walkthrough.md"
BLOCKS = re.findall(
    r"^```python\n(.*?)^```", WALKTHROUGH.read_text(), flags=re.DOTALL | re.MULTILINE
)


def test_the_walkthrough_has_snippets() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_snippet_runs(code: str, capsys: pytest.CaptureFixture) -> None:
    exec(compile(code, str(WALKTHROUGH), "exec"), {"__name__": "walkthrough"})
