"""The Python module against the CLI: the same run documents, errors and answers. Run by
ctest (tests/CMakeLists.txt) from the source folder with PYTHONPATH=build/python and
IPUSIM_BINARY naming the CLI."""
import json
import os
import re
import subprocess
import sys
import threading

import pytest

import ipusim

CLI = os.environ["IPUSIM_BINARY"]


def cli(*args, code=0):
    done = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert done.returncode == code, done.stderr
    return done


def cli_document(*args):
    document = json.loads(cli("run", *args, "--json").stdout)
    del document["commandLine"]  # the only field that says how it was run
    return document


def test_run_of_a_scenario_is_the_cli_document():
    document = ipusim.run("scenarios/mlp-training.json")
    assert document == cli_document("scenarios/mlp-training.json")
    assert [r["mode"] for r in document["runs"]] == ["sharded", "pipelined"]
    assert document["runs"][1]["stepTimeSeconds"] > 0


def test_execution_settings_are_set_flags():
    document = ipusim.run("scenarios/mlp-training.json", execution={"gradientAccumulation": 128}, mode="pipelined")
    assert document == cli_document("scenarios/mlp-training.json", "--mode", "pipelined",
                                    "--set", "execution.gradientAccumulation=128")
    assert document["overrides"] == ["execution.gradientAccumulation=128"]
    assert document["execution"]["gradientAccumulation"] == 128
    assert len(document["runs"]) == 1


def test_a_generation_is_the_cli_document():
    document = ipusim.run("scenarios/llama-2-7b-serve-pod16.json")
    assert document == cli_document("scenarios/llama-2-7b-serve-pod16.json")
    assert document["generation"]["runs"][0]["timeToFirstTokenSeconds"] > 0


def test_phased_mode_is_the_cli_document():
    document = ipusim.run("scenarios/bert-large-phased-pod16.json", mode="phased",
                          execution={"gradientAccumulation": 64})
    assert document == cli_document("scenarios/bert-large-phased-pod16.json", "--mode", "phased",
                                    "--set", "execution.gradientAccumulation=64")
    assert [r["mode"] for r in document["runs"]] == ["phased"]
    assert document["execution"]["executionPhaseSettings"]["serialiseMicroBatches"] is True


def test_a_loaded_tensor_parallel_scenario_is_resharded_per_run():
    scenario = ipusim.Scenario("scenarios/gpt-j-phased-pod16.json")
    first = scenario.run()
    eight = scenario.run(execution={"tensorParallel": 8, "replicas": 2, "gradientAccumulation": 64})
    assert eight == cli_document("scenarios/gpt-j-phased-pod16.json", "--set", "execution.tensorParallel=8",
                                 "--set", "execution.replicas=2", "--set", "execution.gradientAccumulation=64")
    assert eight["execution"]["tensorParallel"] == 8
    assert scenario.run() == first


def test_a_run_again_with_the_same_execution_reuses_its_plan_and_memory_and_answers_the_same():
    # A loaded scenario keeps the plan and memory reports of its last executions (module.cpp):
    # a run again, after others, is the CLI's document; one that does not fit keeps its fixes.
    scenario = ipusim.Scenario("scenarios/mlp-training.json")
    runs = [({"gradientAccumulation": 64}, "pipelined"), ({"gradientAccumulation": 32}, "both"),
            ({"gradientAccumulation": 64}, "pipelined"), ({"microBatchSize": 65536}, "pipelined"),
            ({"gradientAccumulation": 32}, "both"), ({"microBatchSize": 65536}, "pipelined")]
    documents = [scenario.run(execution=execution, mode=mode) for execution, mode in runs]
    assert documents[2] == documents[0] and documents[4] == documents[1] and documents[5] == documents[3]
    for (execution, mode), document in zip(runs[:2] + runs[3:4], documents[:2] + documents[3:4]):
        (path, value), = execution.items()
        assert document == cli_document("scenarios/mlp-training.json", "--mode", mode,
                                        "--set", f"execution.{path}={value}")
    assert documents[3]["runs"][0]["memory"]["fits"] is False
    assert documents[5]["runs"][0]["memory"]["fixes"] == documents[3]["runs"][0]["memory"]["fixes"] != []


def test_a_run_that_fails_after_its_plan_was_lent_fails_alike_again():
    # The kept plan is moved into the run and taken back after it (module.cpp): a run refused
    # inside simulate (too many program steps, checked after the plan) must not leave an
    # emptied plan behind for the next call with the same execution.
    scenario = ipusim.Scenario("scenarios/mlp-training.json")
    huge = {"gradientAccumulation": 10 ** 8, "batchesPerStep": 4}
    messages = []
    for _ in range(2):
        with pytest.raises(ipusim.InputError) as error:
            scenario.run(execution=huge, mode="pipelined")
        assert error.value.rule == "scenario.too-large"
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert scenario.run(mode="pipelined") == cli_document("scenarios/mlp-training.json", "--mode", "pipelined")


def test_a_loaded_scenario_is_reused_and_left_as_loaded():
    scenario = ipusim.Scenario("scenarios/mlp-training.json")
    first = scenario.run(mode="pipelined")
    deeper = scenario.run(execution={"gradientAccumulation": 256}, mode="pipelined")
    # The loaded scenario with G changed is the file with --set, and is left as loaded.
    assert deeper == cli_document("scenarios/mlp-training.json", "--mode", "pipelined",
                                  "--set", "execution.gradientAccumulation=256")
    assert deeper["runs"][0]["stepTimeSeconds"] > first["runs"][0]["stepTimeSeconds"]
    assert scenario.run(mode="pipelined") == first
    assert ipusim.run(scenario, mode="pipelined") == first


def test_threads_share_a_scenario():
    scenario = ipusim.Scenario("scenarios/mlp-training.json")
    expected = {g: scenario.run(execution={"gradientAccumulation": g}, mode="pipelined") for g in (64, 128)}
    results = {}

    def run(g):
        results[g] = [scenario.run(execution={"gradientAccumulation": g}, mode="pipelined") for _ in range(3)]

    threads = [threading.Thread(target=run, args=(g,)) for g in (64, 128)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {g: [document] * 3 for g, document in expected.items()}


def test_model_on_a_config_is_the_cli_document():
    document = ipusim.run("models/mlp.json", "configs/ipu-m2000.json")
    assert document == cli_document("models/mlp.json", "--config", "configs/ipu-m2000.json")
    assert document["scenarioFile"] == "command line"
    assert document["execution"]["batchesPerStep"] == 64


def test_dicts_run_as_their_files():
    with open("models/mlp.json") as f:
        model = json.load(f)
    with open("configs/ipu-m2000.json") as f:
        config = json.load(f)
    config["extends"] = "configs/" + config["extends"]  # a dict's "extends" is relative to the working folder
    from_dicts = ipusim.run(model, config, mode="pipelined")
    from_files = ipusim.run("models/mlp.json", "configs/ipu-m2000.json", mode="pipelined")
    assert from_dicts["runs"] == from_files["runs"]
    assert from_dicts["modelHash"] == from_files["modelHash"]
    assert from_dicts["modelFile"] == ""  # inline, as in a scenario


def test_a_changed_file_is_reloaded(tmp_path):
    scenario = json.load(open("scenarios/mlp-training.json"))
    for key in ("model", "config"):
        scenario[key] = os.path.abspath(os.path.join("scenarios", scenario[key]))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    before = ipusim.run(str(path), mode="pipelined")
    scenario["execution"]["gradientAccumulation"] = 128
    path.write_text(json.dumps(scenario))
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    after = ipusim.run(str(path), mode="pipelined")
    assert before["execution"]["gradientAccumulation"] == 64
    assert after["execution"]["gradientAccumulation"] == 128


def test_bad_input_raises_the_cli_error():
    with pytest.raises(ipusim.InputError) as raised:
        ipusim.run("scenarios/no-such-scenario.json")
    stderr = cli("run", "scenarios/no-such-scenario.json", code=2).stderr
    assert stderr == "ipusim: error: " + str(raised.value) + "\n"
    assert raised.value.file == "scenarios/no-such-scenario.json"
    assert raised.value.rule in stderr


def test_a_bad_execution_value_names_the_call():
    with pytest.raises(ipusim.InputError) as raised:
        ipusim.run("scenarios/mlp-training.json", execution={"mode": "diagonal"})
    assert raised.value.rule == "scenario.bad-mode"
    assert raised.value.file == "execution"
    assert raised.value.pointer == "/mode"
    # Found after loading (the schedule is looked up when the run builds it): the call's too.
    with pytest.raises(ipusim.InputError) as raised:
        ipusim.run("scenarios/mlp-training.json", execution={"schedule": "zigzag"})
    assert (raised.value.file, raised.value.pointer, raised.value.rule) == ("execution", "/schedule",
                                                                            "scenario.unknown-schedule")
    stderr = cli("run", "scenarios/mlp-training.json", "--set", "execution.schedule=zigzag", code=2).stderr
    assert "[scenario.unknown-schedule]" in stderr
    with pytest.raises(ipusim.InputError) as raised:
        ipusim.run("scenarios/mlp-training.json", mode="diagonal")
    assert raised.value.rule == "cli.bad-value"


def test_validate_is_the_cli_answer():
    assert ipusim.validate("scenarios/mlp-training.json") == cli("validate", "scenarios/mlp-training.json").stdout
    assert ipusim.validate("models/mlp.json").startswith("models/mlp.json: valid model, ")
    with pytest.raises(ipusim.InputError) as raised:
        ipusim.validate("scenarios/mlp-training.json", set=["execution.mode=diagonal"])
    assert raised.value.rule == "scenario.bad-mode"
    assert raised.value.file == "--set"


def test_plan_is_the_cli_answer():
    args = ["scenarios/mlp-training.json", "--ipus", "2", "--micro-batch", "8,16", "--top", "2"]
    answer = ipusim.plan(args[0], ipus=[2], micro_batch=[8, 16], top=2)
    assert answer["fits"]
    def untimed(text):  # the searches' own durations are the figures that differ (0.00 s or 0.01 s under load)
        text = re.sub(r"search: [0-9.]+ s", "search: ? s", text)
        return re.sub(r"searched apart in [0-9.]+ s", "searched apart in ? s", text)
    assert untimed(answer["text"]) == untimed(cli("plan", *args, "--quiet").stdout)
    assert "micro-batch" in answer["text"]
    # The candidates as data: plan --json's, the same ones with the same figures.
    document = json.loads(cli("plan", *args, "--quiet", "--json").stdout)
    assert answer["candidates"] == document["candidates"]
    assert len(answer["candidates"]) == 2
    assert (answer["candidates"][0]["engine"]["throughputSamplesPerSecond"]
            >= answer["candidates"][1]["engine"]["throughputSamplesPerSecond"])
    assert answer["whatIf"] == document["whatIf"]
    # What has no candidates as data keeps the text: the layers, a phased scenario's plan.
    layers = ipusim.plan(args[0], explain_layers=True)
    assert set(layers) == {"text", "fits"} and "dense" in layers["text"]


def test_to_dataframe_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails, as when it is not installed
    with pytest.raises(ImportError, match="needs pandas"):
        ipusim.to_dataframe([])


def test_to_dataframe():
    pytest.importorskip("pandas")
    document = ipusim.run("scenarios/mlp-training.json")
    frame = ipusim.to_dataframe([document])
    assert list(frame["mode"]) == ["sharded", "pipelined"]
    assert list(frame["stepTimeSeconds"]) == [r["stepTimeSeconds"] for r in document["runs"]]


def test_bad_input_of_any_type_is_an_input_error():
    scenario = ipusim.Scenario("scenarios/mlp-training.json")

    def raised(call):
        with pytest.raises(ipusim.InputError) as e:
            call()
        error = e.value
        # The line the CLI would print: "FILE: at POINTER: MESSAGE [RULE]" (sim/io/input_error.cpp).
        assert str(error) == f"{error.file}: at {error.pointer}: {error.message} [{error.rule}]"
        return error.file, error.pointer, error.rule

    assert raised(lambda: scenario.run({"gradientAccumulation": b"64"})) == (
        "execution", "/gradientAccumulation", "python.bad-type")
    assert raised(lambda: scenario.run({"optimizer": {"type": float("nan")}})) == (
        "execution", "/optimizer/type", "python.bad-value")
    assert raised(lambda: scenario.run([("gradientAccumulation", 64)])) == ("execution", "/", "python.bad-type")
    assert raised(lambda: scenario.run({1: 64})) == ("execution", "/1", "python.bad-key")
    assert raised(lambda: scenario.run({"": 1})) == ("execution", "/", "python.bad-key")
    assert raised(lambda: scenario.run({"optimizer": {"": 2}})) == ("execution", "/optimizer/", "python.bad-key")
    # Found by the C++ side, still the call's: the value it gave made /execution/schedule an object.
    assert raised(lambda: scenario.run({"schedule": {"name": "popart"}})) == ("execution", "/schedule", "json.type")
    assert raised(lambda: scenario.run(mode=2)) == ("mode", "/", "python.bad-type")
    assert raised(lambda: ipusim.run(b"scenarios/mlp-training.json")) == ("scenario", "/", "python.bad-type")
    assert raised(lambda: ipusim.run(None)) == ("scenario", "/", "python.bad-type")
    assert raised(lambda: ipusim.run("models/mlp.json", 3)) == ("config", "/", "python.bad-type")
    assert raised(lambda: ipusim.run(["models/mlp.json"], "configs/ipu-m2000.json")) == (
        "model", "/", "python.bad-type")
    assert raised(lambda: ipusim.run(scenario, "configs/ipu-m2000.json")) == ("config", "/", "python.bad-value")
    assert raised(lambda: ipusim.run({"name": "s", "model": b"models/mlp.json"})) == (
        "scenario", "/model", "python.bad-type")
    assert raised(lambda: ipusim.Scenario("")) == ("scenario", "/", "python.bad-value")
    assert raised(lambda: ipusim.validate(7)) == ("path", "/", "python.bad-type")
    assert raised(lambda: ipusim.plan("scenarios/mlp-training.json", top=b"1")) == ("plan", "/top", "python.bad-type")
    assert raised(lambda: ipusim.plan("scenarios/mlp-training.json", top=0)) == ("plan", "/top", "cli.bad-value")
    assert raised(lambda: ipusim.plan("scenarios/mlp-training.json", quiet="no")) == (
        "plan", "/quiet", "python.bad-type")
    assert raised(lambda: ipusim.to_dataframe("x")) == ("runs", "/", "python.bad-type")
    assert raised(lambda: ipusim.to_dataframe([{"runs": [1]}])) == ("runs", "/0/runs/0", "python.bad-type")
    assert raised(lambda: ipusim.run()) == ("run", "/", "python.bad-call")


def test_an_unknown_keyword_is_named():
    with pytest.raises(ipusim.InputError) as raised:
        ipusim.plan("scenarios/mlp-training.json", nonsense=1)
    assert (raised.value.file, raised.value.pointer, raised.value.rule) == \
        ("plan", "/nonsense", "python.unknown-keyword")
    assert "micro_batch, gradient_accumulation" in raised.value.message  # the keywords there are
    with pytest.raises(ipusim.InputError, match='did you mean "batch_size"') as raised:
        ipusim.validate("models/mlp.json", batchsize=4)
    assert (raised.value.file, raised.value.pointer) == ("validate", "/batchsize")
    with pytest.raises(ipusim.InputError, match='did you mean "execution"') as raised:
        ipusim.run("scenarios/mlp-training.json", executon={"gradientAccumulation": 2})
    assert (raised.value.file, raised.value.pointer, raised.value.rule) == \
        ("run", "/executon", "python.unknown-keyword")


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_keywords_are_the_cli_flags(command):
    # ipusim/__init__.py writes the flags out; they must be the CLI's, flags without a value included.
    help_text = cli(command, "--help").stdout
    flags = re.findall(r"^\s+(?:-\w,)?--([a-z-]+)( [A-Z]+)?", help_text, re.MULTILINE)
    # plan's --json is the module's own: ipusim.plan always returns the document.
    own = {"help"} | ({"json"} if command == "plan" else set())
    expected = {name.replace("-", "_"): not takes_value for name, takes_value in flags if name not in own}
    assert ipusim._KEYWORDS[command] == expected
