"""Known findings a maintainer accepts, so that CI fails only on new ones.

A baseline is a text file of ids, one per line (``#`` starts a comment): a finding id
(``diffprivlib.laplace``, ``diffprivlib.mean@nan``; :func:`dpaudit.library.findings.finding_ids`)
or a cause id (``diffprivlib.float-addition``), which accepts every finding of that cause.
``dpaudit library audit ... --write-baseline FILE`` writes the current findings grouped by cause;
``--baseline FILE`` then sorts each run's findings into *new* (exit 1), *known* (in the baseline)
and *gone* (in the baseline for a row and stage that ran, not found now: fixed, or not reached at
this budget; reported, never an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .findings import cause_of

__all__ = ["Triage", "read", "triage", "write"]


def read(path: Path | str) -> set[str]:
    """The ids of the baseline file at ``path``.

    Raises
    ------
    ValueError
        If the file cannot be read or a line holds more than one id (names the file and line).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read the baseline {path}: {exc.strerror or exc}") from None
    ids = set()
    for n, line in enumerate(text.splitlines(), 1):
        item = line.split("#", 1)[0].strip()
        if not item:
            continue
        if len(item.split()) != 1:
            raise ValueError(f"{path}, line {n}: one finding or cause id per line, got {item!r}")
        ids.add(item)
    return ids


def write(path: Path | str, findings) -> Path:
    """Write ``findings`` (finding ids) as a baseline, grouped under their causes' ids and titles."""
    path = Path(path)
    groups: dict = {}
    for f in sorted(set(findings)):
        c = cause_of(f)
        groups.setdefault((c.id, c.title) if c else ("", "no cause assigned yet"), []).append(f)
    lines = ["# dpaudit library baseline: known findings, one id per line (a cause id accepts all of its findings).",
             "# Written by `dpaudit library audit ... --write-baseline`; read by `--baseline`.", ""]
    for (cid, title), items in sorted(groups.items()):
        lines.append(f"# {cid or '(no cause)'}: {title}")
        lines += items + [""]
    path.write_text("\n".join(lines))
    return path


@dataclass(frozen=True)
class Triage:
    """A run's findings against a baseline.

    Attributes
    ----------
    new, known, gone : tuple of str
        Finding ids not in the baseline; in it (by id or by cause); in the baseline for a row and
        stage that ran but not found now.
    """

    new: tuple
    known: tuple
    gone: tuple


def triage(findings, baseline: set[str], *, ran: dict) -> Triage:
    """Sort ``findings`` by ``baseline``.

    Parameters
    ----------
    findings : iterable of str
        The run's finding ids.
    baseline : set of str
        Finding and cause ids (:func:`read`).
    ran : dict
        ``row key -> set of stages run`` (``"audit"``, ``"adversarial"``): a baseline id counts as
        *gone* only if its row ran the stage that finds it.
    """
    findings = list(dict.fromkeys(findings))
    known, new = [], []
    for f in findings:
        c = cause_of(f)
        (known if f in baseline or (c is not None and c.id in baseline) else new).append(f)
    seen = set(findings)
    gone = []
    for b in sorted(baseline):
        key, _, kind = b.partition("@")
        stage = "search" if kind.startswith("search:") else "adversarial" if kind else "audit"
        if key in ran and stage in ran[key] and b not in seen:
            gone.append(b)
    return Triage(tuple(new), tuple(known), tuple(gone))
