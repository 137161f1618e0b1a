"""Every file the package reads at run time is declared as package data, so a wheel (not only
an editable install) holds it: grammars, the web page."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_data_file_in_the_package_is_declared() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    data_files = [
        p
        for p in (ROOT / "glassformer").rglob("*")
        if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
    ]
    assert data_files, "the package should hold its grammars and web page"
    for path in data_files:
        relative = path.relative_to(ROOT)
        covered = any(
            fnmatch.fnmatch(str(relative.relative_to(Path(*package.split(".")))), pattern)
            for package, patterns in declared.items()
            if relative.is_relative_to(Path(*package.split(".")))
            for pattern in patterns
        )
        assert covered, f"{relative} is not in [tool.setuptools.package-data]"
