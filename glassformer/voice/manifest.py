"""A synthesized dataset's manifest: DATA_DIR/manifest.jsonl, one row per clip, read back checked.

    {"id": "000123", "audio": "clips/000123.wav", "text": ..., "intent": ..., "slots": {...},
     "voice": "espeak-ng:en-us+f2", "split": "train" | "val"}  (+ "spoken": "word by word")

voice/synth.py writes it (atomically, after the clips); training, the demo and a resumed
synthesis read it here. Every row is checked as it is read, so a damaged line (a hand edit, a
copy cut short) is one error naming the file and the line, never a KeyError in training, and
no row can point its audio outside the dataset's folder.
"""

from __future__ import annotations

from pathlib import Path

from glassformer.errors import GlassformerError

MANIFEST = "manifest.jsonl"
MAX_MANIFEST_BYTES = 1 << 30  # manifest.jsonl: MAX_CLIPS rows of about 200 bytes each
MANIFEST_FIELDS = {"id": str, "audio": str, "text": str, "split": str}  # each row needs these


def read_manifest(data_dir: str | Path) -> list[dict]:
    """DATA_DIR/manifest.jsonl: one row per clip, each checked (a JSON object with the string
    fields MANIFEST_FIELDS, split "train" or "val", its audio a path inside DATA_DIR).

    Raises:
        GlassformerError: the manifest is missing, not a regular file, or has a line that is
            not such a row (one line naming the file and the line).
    """
    from glassformer.textfiles import parse_json, read_utf8

    path = Path(data_dir) / MANIFEST
    if not path.exists():
        raise GlassformerError(f"{path}: missing; synthesize data first (glassformer voice synth)")
    text = read_utf8(path, "manifest", MAX_MANIFEST_BYTES)
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rows.append(check_manifest_row(parse_json(line, f"{path}:{number}"), path, number))
    return rows


def check_manifest_row(row: object, path: Path, number: int) -> dict:
    """`row` if it is a manifest row; else one GlassformerError naming the file and line."""
    where = f"{path}:{number}"
    if not isinstance(row, dict):
        raise GlassformerError(f"{where}: expected a JSON object (a clip)")
    for name, kind in MANIFEST_FIELDS.items():
        if not isinstance(row.get(name), kind):
            raise GlassformerError(f"{where}: {name}={row.get(name)!r} is not a {kind.__name__}")
    if row["split"] not in ("train", "val"):
        raise GlassformerError(f"{where}: split={row['split']!r} is not 'train' or 'val'")
    audio = Path(row["audio"])
    if audio.is_absolute() or ".." in audio.parts or not row["audio"]:
        raise GlassformerError(
            f"{where}: audio={row['audio']!r} is not a path inside {path.parent}"
        )
    return row
