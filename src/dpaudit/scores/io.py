"""Reading score files for the CLI and notebooks: the files people have.

* ``.npy`` (a NumPy array, no pickles) and ``.npz`` (one array, or the one named by ``column``);
* ``.csv`` / ``.txt``: numbers separated by commas or whitespace, with or without a header row,
  with or without an index column (pandas' default ``DataFrame.to_csv`` output: a header whose
  first field is empty and a row number before each row); ``#`` lines are comments;
* ``.json``: a list of numbers, a list of records (``[{"score": 0.1, ...}, ...]``), an object of
  columns (``{"score": [...]}``) or pandas' ``to_json`` output (``{"score": {"0": 0.1, ...}}``).

Where a file holds several columns, ``column`` names one (a header name, an ``.npz`` key, a JSON
key, or a number counting from 1); :func:`read_scores` also says, in one line, what it read.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from ..estimators.base import check_scores

__all__ = ["load_scores", "read_scores"]

SUFFIXES = (".npy", ".npz", ".csv", ".txt", ".json")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _pick(columns: dict, column, label: str, where: str) -> tuple[str, object]:
    """The one column of ``columns`` (name -> values) to read: the only one, or the one ``column``
    names (a name, or a number counting from 1); ValueError listing the names otherwise."""
    names = list(columns)
    if column is None:
        if len(names) == 1:
            return names[0], columns[names[0]]
        raise ValueError(f"{label}: {len(names)} {where} ({', '.join(map(str, names[:8]))}"
                         f"{', ...' if len(names) > 8 else ''}); name the one to read with --column")
    key = str(column)
    if key in columns:
        return key, columns[key]
    if key.isdigit() and 1 <= int(key) <= len(names):
        name = names[int(key) - 1]
        return name, columns[name]
    raise ValueError(f"{label}: no column {key!r}; it has {', '.join(map(str, names[:8]))}"
                     f"{', ...' if len(names) > 8 else ''} (or a number from 1 to {len(names)})")


def _read_table(text: str, column, label: str) -> tuple[np.ndarray, str]:
    """A CSV/whitespace table: header row and index column detected, one column chosen."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError(f"{label}: cannot read scores (no numbers found)")
    sample = lines[0]
    if "," in sample or ";" in sample or "\t" in sample:
        delim = "," if "," in sample else (";" if ";" in sample else "\t")
        rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO("\n".join(lines)), delimiter=delim)]
    else:
        rows = [ln.split() for ln in lines]
    header = None
    if any(_number(c) is None for c in rows[0]):  # a header row: names, not numbers
        header, rows = rows[0], rows[1:]
        if not rows:
            raise ValueError(f"{label}: cannot read scores (a header row and no numbers)")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            line = i + 1 + (header is not None)
            raise ValueError(f"{label}: cannot read scores (row {line} has {len(r)} values, the first row {width})")
    notes = []
    if header is not None and len(header) == width and width > 1 and header[0] in ("", "Unnamed: 0", "index"):
        header, rows = header[1:], [r[1:] for r in rows]  # pandas' index column (to_csv's default)
        width -= 1
        notes.append("index column skipped")
    if header is not None and len(header) != width:
        raise ValueError(f"{label}: cannot read scores (a header of {len(header)} names over rows of {width} values)")
    if width == 1 or header is not None or column is not None:
        names = header if header is not None else [str(j + 1) for j in range(width)]
        cols = {n if n else str(j + 1): [r[j] for r in rows] for j, n in enumerate(names)}
        if header is None and column is None and len(rows) == 1:  # one row of numbers: the row is the sample
            cols = {"1": rows[0]}
        name, cells = _pick(cols, column, label, "columns")
        what = f"column {name!r}" if header is not None else (f"column {name}" if width > 1 else "")
    else:  # no header, several values per row
        if len(rows) == 1:
            name, cells, what = "1", rows[0], "one row"
        else:
            _pick({str(j + 1): None for j in range(width)}, None, label, "columns without a header")
    values = []
    for i, c in enumerate(cells):
        v = _number(c)
        if v is None:
            raise ValueError(f"{label}: cannot read scores (row {i + 1 + (header is not None)}: {c!r} is not a number)")
        values.append(v)
    if header is not None:
        notes.insert(0, "header row")
    return np.asarray(values, dtype=float), ", ".join([what] * bool(what) + notes)


def _read_json(text: str, column, label: str) -> tuple[np.ndarray, str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{label}: cannot read scores (not JSON: {exc})") from None
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):  # records
        keys = list(dict.fromkeys(k for r in data for k in r))
        name, _ = _pick({k: None for k in keys}, column, label, "keys")
        try:
            return np.asarray([r[name] for r in data], dtype=float), f"key {name!r} of {len(data):,} record{'' if len(data) == 1 else 's'}"
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{label}: cannot read scores (key {name!r} is missing or not a number in a record)") from None
    if isinstance(data, dict):
        name, values = _pick(data, column, label, "keys")
        if isinstance(values, dict):  # pandas' to_json: {"column": {"row": value}}
            values = list(values.values())
        data, what = values, f"key {name!r}"
    else:
        what = ""
    try:
        return np.asarray(data, dtype=float), what
    except (TypeError, ValueError):
        raise ValueError(f"{label}: cannot read scores (expected a list of numbers)") from None


def read_scores(path, *, name: str | None = None, column=None) -> tuple[np.ndarray, str]:
    """Load a 1-D sample of scores and say what was read.

    Parameters
    ----------
    path : str or Path
        File to read: ``.npy``, ``.npz``, ``.csv``, ``.txt`` or ``.json`` (see the module).
    name : str, optional
        Name used in messages (default: the path).
    column : str or int, optional
        The column to read where the file holds several: a header name, an ``.npz`` or JSON key,
        or a number counting from 1 (a column of a headerless table or of a 2-D ``.npy``).

    Returns
    -------
    scores : ndarray, shape (n,)
        Finite scores, ``n >= 1``.
    description : str
        One line: how many scores, from what (``"1,000 scores from column 'score' of s.csv
        (header row, index column skipped)"``).

    Raises
    ------
    ValueError
        If the file is missing, has an unknown suffix, cannot be parsed, holds several columns
        and ``column`` names none of them, is empty, or contains NaN/inf; the message names the
        file (and the columns it has).
    """
    p = Path(path)
    label = name or str(p)
    if not p.is_file():
        raise ValueError(f"{label}: no such file")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{label}: unknown file type {suffix or '(none)'!r}; use .npy, .npz, .csv, .txt or .json")
    what = ""
    try:
        if suffix in (".npy", ".npz"):
            loaded = np.load(p, allow_pickle=False)
            if suffix == ".npz":
                with loaded:
                    key, _ = _pick({k: None for k in loaded.files}, column, label, "arrays")
                    arr, what = loaded[key], f"array {key!r}"
            else:
                arr = loaded
                if arr.ndim == 2 and 1 not in arr.shape:
                    j, _ = _pick({str(i + 1): None for i in range(arr.shape[1])}, column, label, "columns")
                    arr, what = arr[:, int(j) - 1], f"column {j}"
        elif suffix == ".json":
            arr, what = _read_json(p.read_text(), column, label)
        else:
            arr, what = _read_table(p.read_text(), column, label)
    except ValueError as exc:
        text = str(exc)
        raise ValueError(text if text.startswith(label) else f"{label}: cannot read scores ({text})") from None
    except OSError as exc:
        raise ValueError(f"{label}: cannot read file ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{label}: expected numbers, got an array of dtype {arr.dtype}")
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    try:
        scores = check_scores(arr, label)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    head, _, notes = what.partition(", ") if what.startswith(("column", "key", "array")) else ("", "", what)
    return scores, (f"{scores.size:,} scores from " + (f"{head} of " if head else "") + p.name
                    + (f" ({notes})" if notes else ""))


def load_scores(path, *, name: str | None = None, column=None) -> np.ndarray:
    """Load a 1-D sample of scores: :func:`read_scores` without the description.

    Parameters and errors as :func:`read_scores`; returns the scores, ndarray of shape (n,).
    """
    return read_scores(path, name=name, column=column)[0]
