"""Run every reproducer from its own install line in a fresh environment without dpaudit.

One virtual environment per distinct ``pip install`` line of ``reproducers/*.py`` (created, the line
installed, ``import dpaudit`` checked to fail), then each script with ``python -I`` at its default
N; the install and run times and each script's verdict go to
``benchmarks/results/library_reproducers_fresh.json`` and ``.md``::

    PYTHONPATH=src python benchmarks/library_reproducers_fresh.py [--venvs DIR] [--runs N] [LIBRARY]

(the same as ``dpaudit library reproducers --run-fresh``, with the results written down).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from dpaudit.library import reproducers as lr

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "library_reproducers_fresh"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library", nargs="?")
    ap.add_argument("--venvs", type=Path)
    ap.add_argument("--runs", type=int)
    args = ap.parse_args(argv)
    items = lr.scripts(None, args.library)
    problems = lr.check(items)
    t0 = time.perf_counter()
    results = lr.run_fresh(items, venvs=args.venvs, runs=args.runs, log=lambda text: print(text, flush=True))
    total = time.perf_counter() - t0
    load = os.getloadavg()
    data = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_average": [round(x, 2) for x in load], "seconds": round(total, 1), "problems": problems,
            "runs": [r.to_dict() for r in results]}
    OUT.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    lines = ["# Reproducers run from their install lines in fresh environments", "",
             f"`PYTHONPATH=src python benchmarks/library_reproducers_fresh.py` on {data['machine']}, load average "
             f"{load[0]:.1f} at the end; {total:.0f} s in all (installs included). Each environment is a new "
             "`python -m venv` with only the script's `pip install` line; `import dpaudit` fails in each.", "",
             "| install line | install (s) | dpaudit importable |", "|---|---:|---|"]
    for line in dict.fromkeys(r.install for r in results):
        r = next(x for x in results if x.install == line)
        lines.append(f"| `pip install {line}` | {r.install_seconds:.0f} | {'yes' if r.dpaudit_importable else 'no'} |")
    lines += ["", "| script | run (s) | verdict |", "|---|---:|---|"]
    for r in results:
        lines.append(f"| {r.script} | {r.run_seconds:.1f} | {r.verdict} |")
    ok = sum(r.reproduced for r in results)
    lines += ["", f"{ok} of {len(results)} reproduced; run time {sum(r.run_seconds for r in results):.0f} s in all."]
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"{ok}/{len(results)} reproduced; wrote {OUT.with_suffix('.md').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
