"""Atomic writes: whole or nothing, with the user's umask (not mkstemp's 0600), and never
over a device, FIFO or socket."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.files import (
    atomic_file,
    check_output_directory,
    check_output_file,
    check_output_files,
    open_for_append,
    write_directory_atomically,
    write_text_atomically,
)


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


# --- targets that are not regular files are refused, never replaced ------------------------

DEVICES = [Path("/dev/null"), Path("/dev/full")]


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


@pytest.mark.parametrize("device", DEVICES, ids=str)
def test_a_device_is_refused_by_every_writer_and_stays_a_device(device):
    if not device.exists():
        pytest.skip(f"{device} is missing on this machine")
    with pytest.raises(GlassformerError, match=f"^{device}: is a character device"):
        write_text_atomically(device, "x")
    with pytest.raises(GlassformerError, match="character device"), atomic_file(device):
        pass
    with pytest.raises(GlassformerError, match="character device"):
        check_output_file(device)
    with pytest.raises(GlassformerError, match="not a directory"):
        write_directory_atomically(device, lambda d: None)
    assert is_char_device(device)
    assert not list(device.parent.glob(f".{device.name}.*"))  # no temporary left beside it


def test_a_fifo_and_a_link_to_a_device_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to("/dev/null")
    for target in (fifo, link):
        with pytest.raises(GlassformerError, match="refusing to replace it"):
            write_text_atomically(target, "x")
        with pytest.raises(GlassformerError, match="refusing to replace it"):
            check_output_file(target)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert link.is_symlink() and is_char_device(Path("/dev/null"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "pipe"]


def test_a_file_where_a_directory_goes_is_refused(tmp_path):
    (tmp_path / "d").write_text("keep")
    with pytest.raises(GlassformerError, match="d: is a regular file, not a directory"):
        write_directory_atomically(tmp_path / "d", lambda d: (d / "f").write_text("x"))
    assert (tmp_path / "d").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_a_link_to_a_regular_file_is_followed_and_kept(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    write_text_atomically(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new"
    check_output_file(tmp_path / "link.txt")  # a regular file behind a link may be written


# --- the same rules for every file a command writes (issue 26) -----------------------------


def test_an_empty_path_is_refused_by_every_writer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # Path("") is "." : a writer that took it would write here
    for write in (
        lambda: write_text_atomically("", "x"),
        lambda: check_output_file(""),
        lambda: open_for_append(""),
        lambda: write_directory_atomically("", lambda d: None),
        lambda: check_output_directory(""),
    ):
        with pytest.raises(GlassformerError, match="an empty path"):
            write()
    assert list(tmp_path.iterdir()) == []


def test_appends_refuse_a_fifo_a_device_and_a_link_to_one(tmp_path):
    fifo, link = tmp_path / "metrics.jsonl", tmp_path / "link.jsonl"
    os.mkfifo(fifo)
    link.symlink_to("/dev/null")
    for target in (fifo, link, Path("/dev/null")):
        with pytest.raises(GlassformerError, match="not a regular file"):
            open_for_append(target)  # a FIFO would have hung here, waiting for a reader
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()


def test_appends_follow_a_link_to_a_regular_file_and_keep_it(tmp_path, umask_022):
    (tmp_path / "real.jsonl").write_text("1\n")
    (tmp_path / "link.jsonl").symlink_to("real.jsonl")
    with open_for_append(tmp_path / "link.jsonl") as handle:
        handle.write("2\n")
    with open_for_append(tmp_path / "new.jsonl") as handle:
        handle.write("3\n")
    assert (tmp_path / "real.jsonl").read_text() == "1\n2\n"
    assert (tmp_path / "link.jsonl").is_symlink() and mode(tmp_path / "new.jsonl") == 0o644


def test_a_folder_holding_the_users_files_is_never_replaced(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    written = []
    with pytest.raises(GlassformerError, match="holds notes.txt, not part of a checkpoint"):
        write_directory_atomically(folder, written.append, own_names={"config.json"})
    assert written == [], "refused before any work"
    with pytest.raises(GlassformerError, match="holds notes.txt"):  # no names: after the work
        write_directory_atomically(folder, lambda d: (d / "config.json").write_text("{}"))
    with pytest.raises(GlassformerError, match="holds notes.txt"):
        check_output_directory(folder, {"config.json"})
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"], "no temporary left"
    (folder / "notes.txt").unlink()
    (folder / "sub").mkdir()  # a folder inside is never a checkpoint's own file either
    with pytest.raises(GlassformerError, match="holds sub"):
        check_output_directory(folder, {"sub"})


def test_an_output_and_its_side_file_must_be_different_files(tmp_path):
    (tmp_path / "t.vocab").write_text("x")
    (tmp_path / "alias.json").symlink_to("t.vocab")
    for pair in ([tmp_path / "t.vocab"] * 2, [tmp_path / "alias.json", tmp_path / "t.vocab"]):
        with pytest.raises(GlassformerError, match="must be different files"):
            check_output_files(pair)
    check_output_files([tmp_path / "t.json", tmp_path / "t.vocab"])
