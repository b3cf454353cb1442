"""ipusim.run from Python with the scenario already loaded: time per call and the
interpreter's RSS over many calls (docs/benchmark.md, "Python API").
Usage: PYTHONPATH=build/python python3 bench/bench_python.py [SCENARIO] [--calls N] [--mode M]
"""
import argparse
import os
import resource
import time

import ipusim


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", nargs="?", default="scenarios/bert-large-training.json")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--mode", default="pipelined")
    args = parser.parse_args()

    start = time.perf_counter()
    scenario = ipusim.Scenario(args.scenario)
    load_s = time.perf_counter() - start
    first = scenario.run(mode=args.mode)  # warm: the first call faults in what later calls reuse
    rss_before = rss_kib()
    own_before, children_before = time.process_time(), children_cpu()
    start = time.perf_counter()
    for _ in range(args.calls):
        document = scenario.run(mode=args.mode)
    wall = time.perf_counter() - start
    own, children = time.process_time() - own_before, children_cpu() - children_before
    cpu = own + children
    rss_after = rss_kib()
    assert document == first
    run = document["runs"][0]
    print(f"{args.scenario} ({args.mode}): step {run['stepTimeSeconds']:.6g} s, "
          f"{run['throughputSamplesPerSecond']:.6g} samples/s")
    print(f"load once: {load_s * 1e3:.1f} ms; {args.calls} calls: {wall / args.calls * 1e3:.2f} ms wall, "
          f"{cpu / args.calls * 1e3:.2f} ms CPU per call ({own / args.calls * 1e3:.2f} in the interpreter, "
          f"{children / args.calls * 1e3:.2f} in the simulation children)")
    print(f"RSS before the loop {rss_before / 1024:.1f} MiB, after {rss_after / 1024:.1f} MiB "
          f"({(rss_after - rss_before) / 1024:+.2f} MiB)")


if __name__ == "__main__":
    main()
