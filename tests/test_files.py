"""Atomic writes: whole or nothing, with the user's umask (not mkstemp's 0600)."""

from __future__ import annotations

import os
import stat

import pytest

from glassformer.files import atomic_file, write_directory_atomically, write_text_atomically


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path) -> int:  # noqa: ANN001
    return stat.S_IMODE(os.stat(path).st_mode)


def test_files_and_directories_get_the_users_umask(tmp_path, umask_022):
    write_text_atomically(tmp_path / "a.txt", "hello")
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert mode(tmp_path / "a.txt") == 0o644

    write_directory_atomically(tmp_path / "ckpt", lambda d: (d / "w.bin").write_bytes(b"x"))
    assert mode(tmp_path / "ckpt") == 0o755
    assert mode(tmp_path / "ckpt" / "w.bin") == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    write_text_atomically(tmp_path / "a.txt", "old")
    with pytest.raises(RuntimeError), atomic_file(tmp_path / "a.txt") as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash")
    assert (tmp_path / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_replacing_a_directory_keeps_no_old_copy(tmp_path):
    for text in ("one", "two"):
        write_directory_atomically(tmp_path / "d", lambda d, t=text: (d / "f").write_text(t))
    assert (tmp_path / "d" / "f").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
