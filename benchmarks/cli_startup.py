"""How long the command line takes to start, and to answer bad input (issue 44, item 7).

Each command runs ``--repeats`` times as a new process of the installed ``dpaudit`` in an empty
folder (a file ``mymech.py`` written there for the file targets); the script prints the median wall
time, the median CPU time of the process and its exit code, with the machine's load. Bad input is
reported before the testers, scipy and Optuna are imported (``tests/test_cli_first_hour.py`` checks
that with ``sys.modules``); this measures what that saves.

    python benchmarks/cli_startup.py [--repeats 5] [--out benchmarks/results/cli_startup.md]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = [
    ["--version"],
    ["zoo"],
    ["test", "./nosuch.py:f", "-e", "1"],
    ["test", "mymech.py:nosuch", "-e", "1"],
    ["test", "nosuchmod:f", "-e", "1"],
    ["test", "zoo:dp-laplce", "-e", "1"],
    ["test", "zoo:dp-laplace", "-e", "1", "--beta", "2"],
    ["test", "zoo:dp-laplace", "-e", "1", "--report", "out.pdf"],
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    exe = Path(sys.executable).with_name("dpaudit")
    folder = Path(tempfile.mkdtemp(prefix="dpaudit-startup-"))
    (folder / "mymech.py").write_text("import numpy as np\n\ndef noisy_sum(d, rng):\n    return float(np.sum(d)) + rng.laplace(0, 1)\n")
    load = os.getloadavg()[0]
    rows = []
    for argv in COMMANDS:
        walls, cpus, code = [], [], None
        for _ in range(args.repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            res = subprocess.run([str(exe), *argv], capture_output=True, text=True, cwd=folder)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            code = res.returncode
        rows.append((" ".join(argv), code, statistics.median(walls), statistics.median(cpus)))
        print(f"exit {code}  {statistics.median(walls):.2f} s wall  {statistics.median(cpus):.2f} s CPU  dpaudit {' '.join(argv)}",
              flush=True)
    after_load = os.getloadavg()[0]
    print(f"load average (1 min) {load:.1f} before, {after_load:.1f} after; {os.cpu_count()} cores")
    if args.out:
        lines = ["# dpaudit start-up and bad-input times", "",
                 f"`python benchmarks/cli_startup.py --repeats {args.repeats}`: medians of {args.repeats} runs, each a new "
                 f"process; load average {load:.1f} before, {after_load:.1f} after (1 min), {os.cpu_count()} cores.", "",
                 "| command | exit | wall s | CPU s |", "|---|---:|---:|---:|"]
        lines += [f"| `dpaudit {c}` | {code} | {w:.2f} | {u:.2f} |" for c, code, w, u in rows]
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
