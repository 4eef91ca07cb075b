"""python -m kafkawire.raft.simulate --seeds N --events M --first-seed S

Runs N seeded simulations of M events each (random faults), then a quiet period in which a
leader must emerge and an append must commit. Exits 1 at the first violation, printing the
seed, the rule broken and the trace of events that led to it; the same command with
``--first-seed <seed> --seeds 1`` replays it exactly.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from .invariants import InvariantViolation
from .scenarios import SCENARIOS, settings_for_seed
from .world import Simulation, run_seed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkawire.raft.simulate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, help="how many seeds to run (100; a named scenario: 1)")
    parser.add_argument("--events", type=int, default=500, help="events per seed before the quiet period")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), help="run a named scenario instead of random runs")
    parser.add_argument("--liveness-ms", type=int, default=20_000,
                        help="virtual time a quiet cluster has to elect a leader and commit")
    parser.add_argument("--trace", type=int, default=60, help="trace lines printed on a violation")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--keep-going", action="store_true",
                        help="run every seed even after a failure; list the failed seeds at the end (exit 1)")
    args = parser.parse_args(argv)

    if args.scenario:
        return _run_scenario(args)
    if args.seeds is None:
        args.seeds = 100
    started = time.perf_counter()
    events = 0
    totals: Counter[str] = Counter()
    recoveries: list[int] = []
    failed: list[tuple[int, str]] = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        settings = settings_for_seed(seed)
        sim_holder: dict[str, Simulation] = {}
        try:
            sim = run_seed(seed, args.events, settings, liveness_ms=args.liveness_ms, keep=sim_holder)
        except (InvariantViolation, Exception) as exc:
            _report_failure(seed, exc, settings, sim_holder.get("sim"), args)
            if not args.keep_going:
                return 1
            rule = exc.rule if isinstance(exc, InvariantViolation) else f"CRASH ({type(exc).__name__})"
            failed.append((seed, rule))
            continue
        events += sim.events_run
        totals.update(sim.final_stats())
        if sim.recovery_ms is not None:
            recoveries.append(sim.recovery_ms)
        if not args.quiet and (seed - args.first_seed + 1) % 100 == 0:
            print(f"{seed - args.first_seed + 1} seeds ok ({events} events, {time.perf_counter() - started:.1f} s)")
    elapsed = time.perf_counter() - started
    print(f"{args.seeds - len(failed)} seeds ok: {events} events, every invariant checked after each, liveness "
          f"within {args.liveness_ms} ms virtual; {elapsed:.1f} s")
    recoveries.sort()
    if recoveries:
        print(f"after the faults stopped, an append committed within: median {recoveries[len(recoveries) // 2]} ms, "
              f"p99 {recoveries[min(len(recoveries) - 1, len(recoveries) * 99 // 100)]} ms, max {recoveries[-1]} ms "
              f"(virtual)")
    print("what the runs exercised: " + ", ".join(f"{k}={v}" for k, v in sorted(totals.items())))
    if failed:
        print(f"{len(failed)} seeds FAILED (not counted above): "
              + ", ".join(f"{seed} ({rule})" for seed, rule in failed))
        return 1
    return 0


def _run_scenario(args) -> int:
    """A named scenario on ``--seeds`` seeds from ``--first-seed``; with ``--keep-going``
    every seed runs and the failed ones are listed at the end."""
    scenario = SCENARIOS[args.scenario]
    seeds = range(args.first_seed, args.first_seed + (args.seeds or 1))
    started, failed, events = time.perf_counter(), [], 0
    for seed in seeds:
        try:
            sim = scenario(seed)
        except Exception as exc:
            kind = "VIOLATION" if isinstance(exc, InvariantViolation) else f"CRASH ({type(exc).__name__})"
            print(f"scenario {args.scenario} seed {seed}: {kind} {exc}", file=sys.stderr)
            if not isinstance(exc, InvariantViolation):
                import traceback
                traceback.print_exception(exc)
            failed.append(seed)
            if not args.keep_going:
                return 1
            continue
        events += sim.events_run
        if len(seeds) == 1:
            print(f"scenario {args.scenario} seed {seed}: ok ({sim.events_run} events, {sim.now} ms virtual)")
    if len(seeds) > 1:
        print(f"scenario {args.scenario}: {len(seeds) - len(failed)} of {len(seeds)} seeds ok from {args.first_seed} "
              f"({events} events, {time.perf_counter() - started:.1f} s)"
              + (f"; FAILED: {', '.join(map(str, failed))}" if failed else ""))
    return 1 if failed else 0


def _report_failure(seed: int, exc: BaseException, settings, sim, args) -> None:
    """To stderr: the seed, the rule, the settings, the last events, each node, the replay."""
    kind = "VIOLATION" if isinstance(exc, InvariantViolation) else f"CRASH ({type(exc).__name__})"
    print(f"seed {seed}: {kind}: {exc}", file=sys.stderr)
    print(f"settings: {settings}", file=sys.stderr)
    if sim is not None:
        print(f"last {args.trace} events:", file=sys.stderr)
        for line in list(sim.trace)[-args.trace:]:
            print("  " + line, file=sys.stderr)
        print(sim.describe(), file=sys.stderr)
    if not isinstance(exc, InvariantViolation):
        import traceback
        traceback.print_exception(exc)
    print(f"replay: python -m kafkawire.raft.simulate --first-seed {seed} --seeds 1 --events {args.events}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
