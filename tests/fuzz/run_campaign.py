#!/usr/bin/env python3
"""Fuzzing campaign through `ipusim run`, as a careless or hostile user would drive it.

Each input is a shipped scenario (its model and config inlined or not) with 1-4 random
mutations: a number set to an extreme (0, -1, 5e-324, 1e308, 2^31-1, 2^63-1, 2^64, a
fraction), a key deleted, a value of the wrong type, deep nesting, NUL and control
characters, execution settings drawn at random (modes, schedules, G, replicas,
recomputation, optimizers, tensor-parallel and batch-norm group widths), plus abusive --set flags. Every run must end in exit 0, 2 or 5
within the timeout, print no sanitizer report, locate every exit-2 message (file, JSON
pointer, rule id) and, when it succeeds, peak at no more memory than the estimate the run
announced ("estimate"/"peakBytes" in its JSON; measured on --release when given, since
a sanitizer build's own overhead is not what the estimate describes).

Usage: tests/fuzz/run_campaign.py --binary build-sanitize/ipusim [--release build/ipusim]
                                  [--runs 10000] [--seed 1] [--jobs 2] [--out DIR]
                                  [--command run|plan|documents|whatif] [--start N | --only I J ...]
--command plan sends mutated scenarios through `plan --top 1 --time-limit 1-3` with abusive flags
(--ipus, --gradient-accumulation 1048576, replicas and placements beyond the system), and holds the
peak to the larger of the two "memory: ... at most" lines plan prints; --command
documents sends mutated real run documents through `compare` and `report` (some grown to tens of
thousands of objects); --command whatif sends mutated scenarios, the V-shaped ones among them, through
`run --schedules all` (every what-if schedule, and the out-of-memory advice where a schedule does not
fit: Adam, larger micro-batches and odd G push them out of memory).
"""
import argparse, copy, json, os, random, re, select, signal, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCATED = re.compile(r"^ipusim: error: .+: at \S.*: .+ \[[a-z0-9-]+(\.[a-z0-9-]+)+\]$")
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer")
# Small scenarios often, the large ones now and then (with a small G).
BASES = ["mlp-inference", "mlp-training", "mlp-training", "bert-tiny-inference", "bert-tiny-training",
         "link-probe-m2000", "bert-base-training", "bert-large-training", "bert-large-pod16"]
EXTREMES = [0, -1, 1, 2, 3, 0.5, 1.5, 5e-324, 1e-308, 1e-9, 1e308, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1,
            2**64, -2**63, 1e15, 1e21, 4294967298]
SETS = ["execution.microBatchSize=9223372036854775807", "execution.gradientAccumulation=1e999",
        "config.ipu.clockHz=1e-308", "config.links.0.bandwidthBytesPerSecond=5e-324", "model=/dev/zero",
        "model.ops.0.virtualGraph=2147483647", "execution.schedule=1f1b", "execution.schedule=gpipe",
        "execution.schedule=tf-grouped", "execution.replicas=2", "config.ipuCount=2048",
        "execution.mode=pipelined", "a..b=1", "=3", "execution.placement=[1,0]", "config.ipu.tiles=1",
        "execution.name=\xff\xfe", "model.name=\"\\u0000x\"", "config.extends=ipu-m2000.json"]


def load(path):
    with open(path) as f:
        return json.load(f)


def leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from leaves(v, path + (i,))
    yield path


def get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def put(doc, path, value):
    if not path:
        return value
    get(doc, path[:-1])[path[-1]] = value
    return doc


def nested(depth):
    """A placeholder that write_input expands to `depth` nested arrays (Python's json would recurse)."""
    return "__NESTED_%d__" % depth


def mutate(doc, rng):
    paths = [p for p in leaves(doc) if p]
    path = rng.choice(paths)
    value = get(doc, path)
    kind = rng.randrange(14)  # 8-13: execution settings, so that many inputs run
    if kind <= 2 and isinstance(value, (int, float)) and not isinstance(value, bool):
        return put(doc, path, rng.choice(EXTREMES) if kind else value * 10 ** rng.randint(-12, 12))
    if kind == 3:
        parent = get(doc, path[:-1])
        del parent[path[-1]]
        return doc
    if kind == 4:
        return put(doc, path, rng.choice(["", "x", None, True, [], {}, "\u0000", "\x01\x7f", "é" * 300, -0.0]))
    if kind == 5:
        return put(doc, path, nested(rng.choice([10, 63, 64, 65, 200, 5000])))
    if kind == 6 and isinstance(value, list) and value:
        value.append(copy.deepcopy(rng.choice(value)))
        return doc
    if kind == 7 and isinstance(value, str):
        return put(doc, path, value + rng.choice(["\u0000", "/../x", "\t", "#", "\u202e"]))
    ex = doc.setdefault("execution", {}) if isinstance(doc.get("execution", {}), dict) else {}
    key, values = rng.choice([
        ("mode", ["both", "sharded", "pipelined"]), ("schedule", ["popart", "tf-grouped", "tf-interleaved",
                                                                   "tf-sequential", "gpipe", "1f1b", "x"]),
        ("training", [True, False]), ("gradientAccumulation", [1, 2, 3, 4, 8, 16, 64]),
        ("batchesPerStep", [1, 2, 3, 5, 8]), ("microBatchSize", [1, 2, 8, 64]), ("replicas", [1, 2, 3, 4, 8, 32]),
        ("tensorParallel", [1, 2, 4, 8, 16]), ("distributedBatchNormReplicaGroupSize", [1, 2, 8, 32]),
        ("recomputation", ["none", "pipeline"]), ("hostIo", [True, False]), ("costModel", ["tile", "compute"]),
        ("optimizer", [{"type": "adam"}, {"type": "lamb", "stateLocation": "streaming-memory"}]),
        ("placement", [[1, 0], [0, 1, 2, 3], [3, 2, 1, 0], [0, 0]])])
    ex[key] = rng.choice(values)
    return doc


PLAN_BASES = ["mlp-training", "mlp-inference", "bert-tiny-training", "bert-tiny-inference", "resnet50-training"]
PLAN_FLAGS = [["--ipus", "2"], ["--ipus", "3"], ["--ipus", "4"], ["--ipus", "8"], ["--ipus", "1024"],
              ["--gradient-accumulation", "1,2,4"], ["--gradient-accumulation", "1048576"],
              ["--objective", "latency"], ["--top", "2"], ["--set", "execution.replicas=4"],
              ["--set", "execution.placement=[4,1]"], ["--set", "config=../configs/ipu-pod16.json"]]


def write_doc(tmp, name, doc):
    path = os.path.join(tmp, name)
    text = re.sub(r'"__NESTED_(\d+)__"', lambda m: "[" * int(m.group(1)) + "1" + "]" * int(m.group(1)),
                  json.dumps(doc))
    with open(path, "w") as f:
        f.write(text)
    return path


def make_plan_input(rng, tmp, index):
    """A shipped scenario, mutated, through `plan` with flags drawn at random."""
    base = rng.choice(PLAN_BASES)
    doc = load(os.path.join(ROOT, "scenarios", base + ".json"))
    for key in ("model", "config"):  # absolute, since the input lives elsewhere
        if isinstance(doc.get(key), str):
            doc[key] = os.path.normpath(os.path.join(ROOT, "scenarios", doc[key]))
    for _ in range(rng.randint(0, 2)):
        try:
            doc = mutate(doc, rng)
        except (KeyError, IndexError, TypeError):
            pass
    # A search that runs out of time stops at its best so far: the bound a user sets is what is
    # tested, and a timeout of the campaign is then a hang, not a long search (ResNet-50 at
    # G = 2^20 searches for about 400 s, docs/planner.md). Short limits, so that 1e4 inputs fit in
    # hours on the sanitizer build; the limit is checked after every candidate all the same.
    limit = rng.choice(["1", "2", "3"])
    args = ["plan", write_doc(tmp, "p%d.json" % index, doc), "--top", "1", "--time-limit", limit]
    for _ in range(rng.choice([0, 1, 1, 2])):
        flags = rng.choice(PLAN_FLAGS)
        if flags[1].startswith("config="):
            flags = ["--set", "config=" + os.path.join(ROOT, "configs", "ipu-pod16.json")]
        args += flags
    return args


WHATIF_BASES = ["mlp-training", "bert-tiny-training", "bert-large-v-training", "gpt2-medium-v-bow-pod16",
                "bert-large-training", "gpt2-small-training"]


def make_whatif_input(rng, tmp, index):
    """A shipped scenario, mutated and often out of memory, through `run --schedules all`."""
    base = rng.choice(WHATIF_BASES)
    doc = load(os.path.join(ROOT, "scenarios", base + ".json"))
    for key in ("model", "config"):
        if isinstance(doc.get(key), str):
            doc[key] = os.path.normpath(os.path.join(ROOT, "scenarios", doc[key]))
    ex = doc.setdefault("execution", {})
    ex["training"] = rng.random() < 0.8
    ex["gradientAccumulation"] = rng.choice([8, 16, 17, 24, 33])
    if rng.random() < 0.6:
        ex["optimizer"] = {"type": rng.choice(["adam", "lamb", "sgd"])}
        ex["microBatchSize"] = rng.choice([1, 2, 3, 4, 8, 16])
        ex["replicas"] = rng.choice([1, 2])
        ex["recomputation"] = rng.choice(["none", "pipeline"])
    for _ in range(rng.randint(0, 2)):
        try:
            doc = mutate(doc, rng)
        except (KeyError, IndexError, TypeError):
            pass
    return ["run", write_doc(tmp, "w%d.json" % index, doc), "--schedules", "all", "--json"]


def grown(doc, rng):
    """The document with one of its arrays repeated to tens of thousands of elements."""
    arrays = [p for p in leaves(doc) if p and isinstance(get(doc, p), list) and get(doc, p)]
    if arrays:
        path = rng.choice(arrays)
        values = get(doc, path)
        put(doc, path, [copy.deepcopy(values[i % len(values)]) for i in range(rng.choice([10000, 40000]))])
    return doc


def make_document_input(rng, tmp, index, documents):
    """Run documents (real ones, mutated) through `compare` or `report`."""
    docs = []
    for k in range(rng.choice([1, 2, 2, 3])):
        doc = copy.deepcopy(rng.choice(documents))
        if rng.random() < 0.05:
            doc = grown(doc, rng)
        for _ in range(rng.randint(1, 3)):
            try:
                doc = mutate(doc, rng)
            except (KeyError, IndexError, TypeError):
                pass
        docs.append(write_doc(tmp, "d%d-%d.json" % (index, k), doc))
    if rng.random() < 0.5:
        return ["compare"] + docs
    return ["report"] + docs + ["-o", os.path.join(tmp, "r%d" % index)]


def make_input(rng, tmp, index):
    base = rng.choice(BASES)
    scenario_path = os.path.join(ROOT, "scenarios", base + ".json")
    doc = load(scenario_path)
    for key in ("model", "config"):
        if isinstance(doc.get(key), str):
            target = os.path.normpath(os.path.join(os.path.dirname(scenario_path), doc[key]))
            doc[key] = load(target) if rng.random() < 0.5 else target
            if isinstance(doc[key], dict) and "extends" in doc[key]:
                doc[key]["extends"] = os.path.normpath(os.path.join(os.path.dirname(target), doc[key]["extends"]))
    ex = doc.setdefault("execution", {})
    if base.startswith("bert-base") or base.startswith("bert-large"):
        ex["gradientAccumulation"] = rng.choice([16, 32, 64])
    for _ in range(rng.randint(1, 3)):
        try:
            doc = mutate(doc, rng)
        except (KeyError, IndexError, TypeError):
            pass
    path = os.path.join(tmp, "s%d.json" % index)
    text = re.sub(r'"__NESTED_(\d+)__"', lambda m: "[" * int(m.group(1)) + "1" + "]" * int(m.group(1)),
                  json.dumps(doc))
    with open(path, "w") as f:
        f.write(text)
    args = ["run", path, "--json"]
    if rng.random() < 0.3:
        args += ["--mode", rng.choice(["sharded", "pipelined", "both"])]
    for _ in range(rng.choice([0, 0, 0, 0, 1, 2])):
        args += ["--set", rng.choice(SETS)]
    return args


def run_measured(binary, args, timeout):
    """Runs with wait4 to get the peak RSS (the largest of the run and its simulation child)."""
    out_r, out_w = os.pipe()
    err_file = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        try:  # a child that cannot exec must never return into the campaign (it would run it again)
            os.setsid()
            os.dup2(out_w, 1)
            os.dup2(err_file.fileno(), 2)
            os.execv(binary, [binary] + args)
        finally:
            os._exit(127)
    os.close(out_w)
    chunks = []
    deadline = time.time() + timeout
    while True:
        r, _, _ = select.select([out_r], [], [], max(0, deadline - time.time()))
        if not r:
            os.killpg(pid, signal.SIGKILL)
            break
        data = os.read(out_r, 1 << 16)
        if not data:
            break
        chunks.append(data)
    os.close(out_r)
    _, status, usage = os.wait4(pid, 0)
    err_file.seek(0)
    code = os.waitstatus_to_exitcode(status)
    return {"code": code if time.time() < deadline else "timeout", "out": b"".join(chunks),
            "err": err_file.read(), "rss": usage.ru_maxrss * 1024}


PLAN_MEMORY = re.compile(rb"^memory: (?:the search|each engine run above) needs at most .*? \((\d+) bytes", re.M)


def announced_bytes(command, out):
    """What the run announced it needs at most: run's estimate in its JSON, plan's lines (the
    search's, and its engine runs'): the larger. None when it announced nothing."""
    if command in ("run", "whatif"):
        try:
            return json.loads(out)["estimate"]["peakBytes"]
        except (ValueError, KeyError, TypeError):
            return None
    figures = [int(m) for m in PLAN_MEMORY.findall(out)]
    return max(figures) if figures else None


def check(result, json_out=True):
    """The problems with one result, as strings."""
    problems = []
    err = result["err"].decode("utf-8", "replace")
    if result["code"] == "timeout":
        problems.append("hang (timeout)")
    elif result["code"] not in (0, 2, 5):
        problems.append("exit %s" % result["code"])
    if SANITIZER.search(err):
        problems.append("sanitizer report")
    if result["code"] == 2:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if not LOCATED.match(last):
            problems.append("unlocated exit-2 message: " + last[:200])
    if result["code"] == 0 and json_out:
        try:
            json.loads(result["out"])
        except ValueError:
            problems.append("exit 0 without a JSON document")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--release")
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--start", type=int, default=0,
                    help="resume a campaign: draw all --runs inputs of --seed as before, run those from here on")
    ap.add_argument("--only", type=int, nargs="*",
                    help="run only these inputs of the campaign (e.g. earlier findings, after a fix)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--out", default="fuzz-run-campaign")
    ap.add_argument("--command", choices=["run", "plan", "documents", "whatif"], default="run",
                    help="run: scenarios through run; plan: through plan; documents: run documents through "
                         "compare and report; whatif: scenarios through run --schedules all")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="ipusim-campaign-")
    if a.command == "plan":
        inputs = [make_plan_input(rng, tmp, i) for i in range(a.runs)]
    elif a.command == "documents":
        documents = []
        for base in ("mlp-training", "bert-tiny-training", "mlp-inference"):
            r = run_measured(a.release or a.binary, ["run", os.path.join(ROOT, "scenarios", base + ".json"), "--json"], 600)
            documents.append(json.loads(r["out"]))
        inputs = [make_document_input(rng, tmp, i, documents) for i in range(a.runs)]
    elif a.command == "whatif":
        inputs = [make_whatif_input(rng, tmp, i) for i in range(a.runs)]
    else:
        inputs = [make_input(rng, tmp, i) for i in range(a.runs)]
    tally, rules, findings, ratios = {}, {}, [], []
    closest = [0.0, None]  # the accepted input whose peak came nearest its estimate
    started = time.time()

    def one(i):
        r = run_measured(a.binary, inputs[i], a.timeout)
        problems = check(r, json_out=a.command in ("run", "whatif"))
        ratio = None
        # Accepted inputs (plan: also exit 5, nothing fits, after its search) must peak within
        # what they announced; measured on the release build, whose memory the estimate describes.
        if (r["code"] == 0 or (r["code"] == 5 and a.command == "plan")) and not problems and a.command != "documents":
            measured = r
            # A sanitizer build peaks above the release build (shadow memory, quarantine): one
            # within its own announcement needs no release run to show it.
            own = announced_bytes(a.command, r["out"])
            if a.release and not (own and r["rss"] <= own):
                measured = run_measured(a.release, inputs[i], a.timeout)
            estimate = announced_bytes(a.command, measured["out"])
            if estimate is None and a.command == "plan" and measured["code"] in (0, 5):
                problems.append("plan exit %s without its memory lines" % measured["code"])
            elif estimate:
                ratio = measured["rss"] / estimate
                if ratio > 1:
                    problems.append("peak %d B above the estimate %d B" % (measured["rss"], estimate))
        return i, r, problems, ratio

    def summarise(done):
        return {"runs": a.runs, "start": a.start, "done": done, "seed": a.seed, "command": a.command,
                "seconds": round(time.time() - started, 1), "exit_codes": tally,
                "findings": len(findings), "rules": dict(sorted(rules.items(), key=lambda kv: -kv[1])),
                "accepted_with_estimate": len(ratios),
                "peak_over_estimate_max": max(ratios) if ratios else None,
                "peak_over_estimate_max_input": closest[1],
                "peak_over_estimate_median": sorted(ratios)[len(ratios) // 2] if ratios else None}

    def write_summary(summary):
        # Rewritten every 500 inputs, so a campaign stopped for lack of time still says how far it got.
        path = os.path.join(a.out, "summary.json")
        with open(path + ".tmp", "w") as f:
            json.dump({**summary, "finding_list": findings}, f, indent=2)
        os.replace(path + ".tmp", path)

    done = 0
    with ThreadPoolExecutor(a.jobs) as pool:
        chosen = a.only if a.only else range(a.start, a.runs)
        for i, r, problems, ratio in pool.map(one, chosen):
            done += 1
            if done % 500 == 0:
                write_summary(summarise(done))
            tally[str(r["code"])] = tally.get(str(r["code"]), 0) + 1
            if r["code"] == 2:
                m = re.search(r"\[([a-z0-9.-]+)\]\s*$", r["err"].decode("utf-8", "replace"))
                if m:
                    rules[m.group(1)] = rules.get(m.group(1), 0) + 1
            if ratio is not None:
                ratios.append(ratio)
                if ratio > closest[0]:
                    closest[0], closest[1] = ratio, i
            if problems:
                keep = os.path.join(a.out, "finding-%d" % i)
                os.makedirs(keep, exist_ok=True)
                for arg in inputs[i]:
                    if arg.startswith(tmp) and os.path.isfile(arg):
                        with open(arg) as src, open(os.path.join(keep, os.path.basename(arg)), "w") as dst:
                            dst.write(src.read())
                with open(os.path.join(keep, "finding.txt"), "w") as f:
                    f.write("args: %r\nproblems: %r\nstderr:\n%s\n" % (inputs[i], problems, r["err"].decode("utf-8", "replace")))
                findings.append({"input": i, "problems": problems})
    summary = summarise(done)
    write_summary(summary)
    print(json.dumps(summary, indent=2))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
