"""Where a profile's time goes: the training seconds of its runs, by notebook and group.

Usage::

    palviz figures --profile quick           # trains the runs (or reads them from the cache)
    python benchmarks/quick_budget.py        # then: the seconds per group, from the cache
    python benchmarks/quick_budget.py --profile full

For every run the notebooks ask for (``palviz.experiments.plan.experiment`` of each notebook that
trains, with its default parameters), it reads the run's own ``seconds`` (its training time, one CPU
thread, as recorded when it trained) from the run cache and sums them per notebook and group
(06: ``grid``, the orientations, ...; 07: each table, the headline, the s-sweep, ...). A run
two groups share is counted once, in the first group that asks for it. It prints each
group's runs, seconds and share of the total, and, from ``timings.json`` of the last
``palviz figures`` run of the profile, the wall time of training and of each notebook: the
shares are what to trim first when a profile runs over its budget. The numbers are
measurements of one machine, printed as ratios of one run; runs missing from the cache are
counted and named, not guessed.
"""

from __future__ import annotations

import argparse
import json
import sys

from palviz.experiments.plan import EXPERIMENTS, experiment
from palviz.experiments.runcache import read_cached
from palviz.files import figures_dir, resolve_profile


def budget(profile: str) -> tuple[list[dict], int]:
    seen: set[str] = set()
    rows, missing = [], 0
    for notebook in EXPERIMENTS:
        for group, specs in experiment(notebook, profile).items():
            runs, seconds = 0, 0.0
            for spec in specs:
                if spec.key() in seen:
                    continue
                seen.add(spec.key())
                result = read_cached(spec)
                if result is None:
                    missing += 1
                    continue
                runs += 1
                seconds += float(result.metrics.get("seconds", 0.0))
            if runs:
                name = group if isinstance(group, str) else "/".join(map(str, group))
                rows.append({"notebook": notebook, "group": name, "runs": runs, "s": seconds})
    return rows, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="quick")
    args = parser.parse_args(argv)
    profile = resolve_profile(args.profile)
    rows, missing = budget(profile)
    total = sum(r["s"] for r in rows)
    if not rows:
        print(f"no cached run of profile {profile}: run `palviz figures --profile {profile}`")
        return 1
    print(f"training seconds of the {profile} runs (one thread each), by notebook and group")
    print(f"{'notebook':>8} {'group':28} {'runs':>5} {'seconds':>9} {'share':>7} {'s/run':>7}")
    for r in sorted(rows, key=lambda r: -r["s"]):
        share = r["s"] / total if total else 0.0
        per = r["s"] / r["runs"]
        cells = f"{r['runs']:5d} {r['s']:9.0f} {share:7.1%} {per:7.1f}"
        print(f"{r['notebook']:>8} {r['group']:28} {cells}")
    print(f"{'':>8} {'total':28} {sum(r['runs'] for r in rows):5d} {total:9.0f}")
    if missing:
        print(f"{missing} planned run(s) are not in the cache and are not counted")
    path = figures_dir(profile) / "timings.json"
    if path.exists():
        t = json.loads(path.read_text())
        wall = t.get("total_seconds")
        print(
            f"\nlast `palviz figures --profile {profile}` ({'cold' if t.get('cold') else 'warm'}):"
        )
        print(f"  {t.get('training_seconds', 0):7.0f} s wall training, {wall:7.0f} s in total")
        if total and t.get("training_seconds"):
            ratio = total / t["training_seconds"]
            print(f"  training seconds / training wall time = {ratio:.2f} (parallel speed-up)")
        for name, seconds in (t.get("notebook_seconds") or {}).items():
            print(f"  {seconds:7.0f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
