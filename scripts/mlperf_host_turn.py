#!/usr/bin/env python3
"""The host's turn per program run (hostLink.runOverheadSeconds), from the evaluation phases of
Graphcore's MLPerf Training v2.0 BERT logs, which `ipusim validation` does not compare.

Between two training blocks bert.py (v2.0:1297-1370) evaluates: it runs the forward-only
program ("implicitPipeliningFwdOnly") once per step of the evaluation set and swaps the
optimizer twice (updateOptimizerFromHost). A span is block_stop to the eval_accuracy event
that follows it. v1.1 evaluates with the training program instead, and there 4 evaluation
steps and their 2 swaps take what 4 training steps take (to within 10 ms), so a swap costs
nothing measurable and every run of a span is a forward-only run:

    host's turn = (median span - runs x simulated forward-only run) / runs

runs = ceil(packs of the evaluation set on one instance / packs per run); the set holds 10,000
sequences at the dataset's 2.0368 sequences per pack (scripts/mlperf_throughput.py, rule B4),
split over the poprun instances. The forward-only run is ipusim's, of the entry's scenario as
inference over G micro-batches with no host's turn (--set config.hostLink.runOverheadSeconds=0).
Only the Pod128 and Pod256 share a model and configuration in everything but G and the
replicas, so their two answers check each other.

Usage: scripts/mlperf_host_turn.py --repo GITDIR_OF_training_results_v2.0 [--ipusim build/ipusim]
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlperf_throughput as mlperf  # noqa: E402

EVAL_SEQUENCES = 10000
SEQUENCES_PER_PACK = 2.0368
# system folder: (scenario, G, packs per run on one instance, instances)
SYSTEMS = {
    "ipu-pod128-POPART-closed": ("mlperf-v2.0-bert-closed-pod128", 64, 3 * 64 * 8, 2),
    "ipu-pod256-POPART-closed": ("mlperf-v2.0-bert-closed-pod256", 36, 3 * 36 * 8, 4),
}


def spans(repo, system):
    names = mlperf.read_git(repo, ["ls-tree", "-r", "--name-only", "HEAD", f"Graphcore/results/{system}/bert"])
    out = []
    for name in names.split():
        events = mlperf.parse_mllog(mlperf.read_git(repo, ["show", f"HEAD:{name}"]), name)
        for i, e in enumerate(events):
            if e["key"] != "block_stop":
                continue
            after = next((x for x in events[i + 1:] if x["key"] == "eval_accuracy"), None)
            if after:
                out.append((after["time_ms"] - e["time_ms"]) / 1000)
    return out


def forward_run(ipusim, root, scenario, g):
    path = os.path.join(root, "scenarios", "validation", scenario + ".json")
    text = subprocess.run([ipusim, "run", path, "--json", "--set", "execution.training=false",
                           "--set", "execution.gradientAccumulation=1", "--set", f"execution.batchesPerStep={g}",
                           "--set", "config.hostLink.runOverheadSeconds=0"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)["runs"][0]["stepTimeSeconds"]


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="git directory of mlcommons/training_results_v2.0")
    parser.add_argument("--ipusim", default=os.path.join(root, "build", "ipusim"))
    args = parser.parse_args(argv)
    print("system                     spans  median span  runs  forward-only run  host's turn")
    for system, (scenario, g, packs_per_run, instances) in SYSTEMS.items():
        found = spans(args.repo, system)
        median = statistics.median(found)
        runs = math.ceil(EVAL_SEQUENCES / SEQUENCES_PER_PACK / instances / packs_per_run)
        forward = forward_run(args.ipusim, root, scenario, g)
        print("%-26s %5d  %9.4f s  %4d  %13.2f ms  %8.1f ms"
              % (system, len(found), median, runs, forward * 1e3, (median - runs * forward) / runs * 1e3))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except mlperf.InputError as err:
        print(f"mlperf_host_turn.py: error: {err}", file=sys.stderr)
        sys.exit(2)
