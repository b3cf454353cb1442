"""A seeded fuzz test of the Python module: calls that start valid (on the shipped
mlp-training scenario, models/mlp.json and configs/ipu-m2000.json) and are then mutated -
values JSON has no word for, bytes, NaN, huge integers, bad and unknown keys, wrong argument
types, unknown keywords, bad run documents. Each must succeed or raise ipusim.InputError
with a file, a pointer and a rule (docs/python.md "Errors"); any other exception is a
finding. Run from the source folder with PYTHONPATH=build/python (as test_ipusim.py)."""
import copy
import decimal
import fractions
import json
import math
import numbers
import os
import random
import re
import reprlib
import time

import pytest

import ipusim

SCENARIO, MODEL, CONFIG = "scenarios/mlp-training.json", "models/mlp.json", "configs/ipu-m2000.json"
SEED, CASES = 39, 400

# A valid execution of mlp-training that names most kinds of field: nested objects, arrays.
EXECUTION = {"training": True, "microBatchSize": 16, "gradientAccumulation": 64, "batchesPerStep": 1,
             "schedule": "popart", "availableMemoryProportion": [0.6, 0.6],
             "optimizer": {"type": "adam", "stateDtype": "float32"},
             "accumulateOuterFragmentSettings": {"schedule": "Serial", "excludedVirtualGraphs": [0]}}

# The python.* rules docs/python.md documents; the C++ side's rules look like "json.type".
PYTHON_RULES = {"python.bad-type", "python.bad-value", "python.bad-key", "python.unknown-keyword", "python.bad-call"}
RULE = re.compile(r"[a-z0-9]+(\.[a-z0-9-]+)+")


def nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def holding_itself(kind):
    value = kind()
    if kind is list:
        value.append(value)
    else:
        value["a"] = value
    return value


def weird_values():
    """Values a careless or unlucky call might pass. No valid-looking large counts (a G of 1e7
    is valid and slow to simulate): integers are small, or past every range."""
    values = [None, True, False, 0, -1, 1, 2, 3, 1.5, -0.0, 1e308, 5e-324, math.nan, math.inf, -math.inf,
              2**53 + 1, 2**63, 2**64, -2**63 - 1, 10**400, 10**5000, 100_000_001,
              "", "x", "both", "pipelined", "\x00", "\ud800", "\udcff", "é\u2028", "a" * 5000, "1e999",
              b"bytes", bytearray(b"x"), memoryview(b"x"), {1, 2}, frozenset(), object(), complex(1, 2),
              decimal.Decimal("1.5"), fractions.Fraction(1, 3), range(3), len, Ellipsis, ipusim,
              [], [1, "a", None], (1, 2), [b"x"], [math.nan], {}, {"a": 1}, {1: 2}, {(1,): 2}, {"": 1},
              {"a": {"b": b"x"}}, nested(70), nested(3000), holding_itself(list), holding_itself(dict)]
    try:
        import numpy
        values += [numpy.int64(4), numpy.float32(0.5), numpy.float64("nan"), numpy.bool_(True), numpy.array([1, 2])]
    except ImportError:
        pass
    return values


WEIRD = weird_values()
WEIRD_KEYS = ["", ".", "a.", ".a", "a..b", "x\ud800", "unknownField", "gradientaccumulation", "a/b~c", "k" * 1000,
              "optimizer.type", "optimizer..type", 1, 1.5, None, True, (1, 2), b"gradientAccumulation", frozenset()]


def mutate(document, rng, changes=1, keys=WEIRD_KEYS):
    """A copy of the valid `document` with a few random changes: a value made weird, a key
    made weird, a weird key added, or a leaf wrapped in a container."""
    document = copy.deepcopy(document)
    places = []  # (container, key) of every value in the document as it was

    def walk(value):
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in list(items):
            places.append((value, key))
            walk(item)

    walk(document)
    for _ in range(changes):
        container, key = rng.choice(places)
        action = rng.randrange(4)
        if (key not in container) if isinstance(container, dict) else (key >= len(container)):
            continue  # renamed by an earlier change
        if action == 0:
            container[key] = rng.choice(WEIRD)
        elif action == 1 and isinstance(container, dict):
            container[rng.choice(keys)] = container.pop(key)
        elif action == 2 and isinstance(container, dict):
            container[rng.choice(keys)] = rng.choice(WEIRD + [1, "x", {"x": 1}])
        else:
            container[key] = rng.choice([{"x": container[key]}, [container[key]], {"": container[key]}])
    return document


def mutated_execution(rng):
    return mutate(EXECUTION, rng, changes=rng.randint(1, 3))


def cases():
    """(name, call): call(env) makes one call of the module. Deterministic for SEED."""
    rng = random.Random(SEED)
    with open(SCENARIO) as f:
        scenario_dict = json.load(f)
    scenario_dict.update(model=MODEL, config=CONFIG)  # a dict's paths are relative to the working folder
    with open(MODEL) as f:
        model_dict = json.load(f)
    makers = [
        # run and Scenario.run with mutated execution dicts (the most common calls)
        (40, "run-execution", lambda: (lambda e, x=mutated_execution(rng): ipusim.run(SCENARIO, execution=x))),
        (30, "scenario-run-execution", lambda: (lambda e, x=mutated_execution(rng): e["scenario"].run(x))),
        (15, "model-config-execution",
         lambda: (lambda e, x=mutated_execution(rng): ipusim.run(MODEL, CONFIG, execution=x, mode="pipelined"))),
        (15, "execution-not-a-dict", lambda: (lambda e, x=rng.choice(WEIRD): e["scenario"].run(execution=x))),
        (15, "mode", lambda: (lambda e, m=rng.choice(WEIRD): ipusim.run(SCENARIO, mode=m))),
        # wrong arguments
        (20, "run-scenario-arg", lambda: (lambda e, s=rng.choice(WEIRD): ipusim.run(s))),
        (15, "run-model-arg", lambda: (lambda e, m=rng.choice(WEIRD): ipusim.run(m, CONFIG))),
        (15, "run-config-arg", lambda: (lambda e, c=rng.choice(WEIRD): ipusim.run(MODEL, c))),
        (10, "scenario-object-and-config", lambda: (lambda e, c=rng.choice(WEIRD): ipusim.run(e["scenario"], c))),
        (15, "Scenario-arg", lambda: (lambda e, s=rng.choice(WEIRD), c=rng.choice(WEIRD + [None] * 5):
                                      ipusim.Scenario(s, c))),
        (25, "scenario-dict", lambda: (lambda e, s=mutate(scenario_dict, rng): ipusim.run(s))),
        (15, "model-dict", lambda: (lambda e, m=mutate(model_dict, rng): ipusim.run(m, CONFIG, mode="sharded"))),
        (25, "signature", lambda: signature_case(rng)),
        # plan and validate: unknown keywords, values of the wrong type
        (35, "plan-keywords", lambda: (lambda e, k=keywords(rng, "plan"): ipusim.plan(SCENARIO, **k))),
        (15, "plan-scenario-arg", lambda: (lambda e, s=rng.choice(WEIRD): ipusim.plan(s, top=1))),
        (25, "validate-keywords", lambda: (lambda e, k=keywords(rng, "validate"): ipusim.validate(SCENARIO, **k))),
        (15, "validate-path-arg", lambda: (lambda e, p=rng.choice(WEIRD): ipusim.validate(p))),
        # to_dataframe of mutated run documents and of what is no run document
        (40, "to_dataframe-document",
         lambda: (lambda e, n=rng.randint(1, 3), r=random.Random(rng.random()):
                  ipusim.to_dataframe(mutate_documents(e["document"], n, r)))),
        (15, "to_dataframe-arg", lambda: (lambda e, r=rng.choice(WEIRD): ipusim.to_dataframe(r))),
    ]
    assert sum(n for n, _, _ in makers) == CASES
    out = []
    for count, name, make in makers:
        out += [(f"{name}-{i}", make()) for i in range(count)]
    return out


def mutate_documents(document, n, rng):
    return mutate([document] * n, rng, changes=rng.randint(1, 3), keys=WEIRD_KEYS + ["runs", "execution", "mode"])


# Values `write` refuses (True is no prefix, False and None leave it out): a str or number is
# a prefix the plan's files would be written at.
UNWRITABLE = [v for v in WEIRD if v is True or v is False or v is None
              or not isinstance(v, (str, numbers.Number, list, tuple))]


def keywords(rng, command):
    """Valid keywords, then one unknown or of a weird value (for `write`, only one it refuses)."""
    options = {"ipus": [2], "micro_batch": [8], "top": 1} if command == "plan" else {}
    known = [k for k in ipusim._KEYWORDS[command] if k != "write"]  # the CLI's flags (test_ipusim.py)
    if rng.random() < 0.3:
        options[rng.choice(["nonsense", "microbatch", "scenario", "path", "file", "execution", "mode", "Top",
                            "write_", "help", "h", "batch-size"])] = 1
    elif command == "plan" and rng.random() < 0.1:
        options["write"] = rng.choice(UNWRITABLE)
    else:
        options[rng.choice(known)] = rng.choice(WEIRD + [[rng.choice(WEIRD)], "execution.mode=diagonal", ["="]])
    return options


def signature_case(rng):
    """Missing, extra and unknown arguments of each entry point."""
    calls = [lambda e: ipusim.run(), lambda e: ipusim.run(SCENARIO, None, None, None, None),
             lambda e: ipusim.run(SCENARIO, executoin={}), lambda e: ipusim.run(SCENARIO, scenario=SCENARIO),
             lambda e: ipusim.Scenario(), lambda e: ipusim.Scenario(SCENARIO, CONFIG, 1),
             lambda e: ipusim.Scenario(SCENARIO, cfg=CONFIG), lambda e: e["scenario"].run(None, None, None),
             lambda e: e["scenario"].run(modes="both"), lambda e: e["scenario"].run(self=1),
             lambda e: ipusim.plan(), lambda e: ipusim.plan(SCENARIO, True, 1),
             lambda e: ipusim.validate(), lambda e: ipusim.validate(SCENARIO, 1),
             lambda e: ipusim.to_dataframe(), lambda e: ipusim.to_dataframe([], []),
             lambda e: ipusim.to_dataframe(runs=[], frame=1)]
    return rng.choice(calls)


CASE_LIST = cases()
EXECUTION_CASES = {"run-execution", "scenario-run-execution", "model-config-execution", "execution-not-a-dict"}
_timing = {"seconds": 0.0}


@pytest.fixture(scope="module")
def env():
    scenario = ipusim.Scenario(SCENARIO)
    first = scenario.run(mode="pipelined")
    files = set(os.listdir("."))
    yield {"scenario": scenario, "document": ipusim.run(SCENARIO)}
    # Nothing a bad call did is left in the loaded scenario, and no call wrote a file (plan's write).
    assert scenario.run(mode="pipelined") == first
    assert set(os.listdir(".")) - files == set()


@pytest.mark.parametrize("name,call", CASE_LIST, ids=[name for name, _ in CASE_LIST])
def test_fuzz_case(env, name, call):
    start = time.monotonic()
    try:
        call(env)
    except ipusim.InputError as e:
        where = f"{name}: {e!s:.300}"
        assert e.file and isinstance(e.file, str), where
        assert e.pointer.startswith("/") or e.file == "--set", where  # a --set's error is at its path
        assert RULE.fullmatch(e.rule) and (not e.rule.startswith("python.") or e.rule in PYTHON_RULES), where
        assert e.message and f"[{e.rule}]" in str(e), where
        # Only the execution dict of these calls is bad: the error is the call's, or else one of
        # the combination that names a value of the file the call's made wrong (training false
        # with the file's gradientAccumulation: scenario.accumulation-without-training).
        if name.rsplit("-", 1)[0] in EXECUTION_CASES:
            assert e.file == "execution" or (e.file in (SCENARIO, "command line")
                                             and e.rule.startswith("scenario.")), where
    except ImportError as e:  # to_dataframe of good input without pandas
        assert "needs pandas" in str(e) and name.startswith("to_dataframe"), name
    finally:
        _timing["seconds"] += time.monotonic() - start


def test_fuzz_is_quick(env):
    """The cases above stay cheap (mlp-training runs take milliseconds): under a minute in all."""
    assert _timing["seconds"] < 60, reprlib.repr(_timing)
