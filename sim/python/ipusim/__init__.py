"""ipusim from Python: run a scenario (or a model on a config) and get the run document
`ipusim run --json` writes, as a dict. Scenarios load once (ipusim.Scenario, or the cache
behind paths and dicts); each run simulates in forked children, so a script or notebook
can run thousands. docs/python.md has an example.
"""
import json
import os

__all__ = ["InputError", "EngineError", "Scenario", "run", "to_dataframe", "plan", "validate", "version"]


class InputError(ValueError):
    """Bad input, as the CLI reports with exit code 2: which file, where in it (a JSON
    pointer), which rule (a stable id such as "scenario.bad-mode") and what is wrong."""

    def __init__(self, text, file="", pointer="", rule="", message=""):
        super().__init__(text)
        self.file = file
        self.pointer = pointer
        self.rule = rule
        self.message = message


class EngineError(RuntimeError):
    """The simulation itself failed (the CLI's exit code 3)."""


from ._ipusim import version  # noqa: E402  (the exception classes above are what it raises)
from . import _ipusim  # noqa: E402


def _mtimes(loaded):
    files = [loaded.file, loaded.model_file, loaded.config_file]
    return tuple(os.stat(f).st_mtime_ns if os.path.isfile(f) else None for f in files)


class Scenario:
    """A scenario loaded once: `Scenario(path_or_dict)`, or `Scenario(model, config)` for a
    model (path or dict) on a config (path or dict) without a scenario file, every execution
    setting at its default (batchesPerStep 64, as `ipusim run MODEL --config CONFIG`)."""

    def __init__(self, scenario, config=None):
        if config is not None:
            name = os.path.splitext(os.path.basename(scenario))[0] if isinstance(scenario, str) else "model"
            document = {"name": name, "model": _path_or_dict(scenario, "model"),
                        "config": _path_or_dict(config, "config"), "execution": {"batchesPerStep": 64}}
            self._loaded = _ipusim.scenario_from_json(json.dumps(document), "command line")
        elif isinstance(scenario, dict):
            self._loaded = _ipusim.scenario_from_json(json.dumps(scenario), "<scenario dict>")
        elif isinstance(scenario, (str, os.PathLike)):
            self._loaded = _ipusim.load_scenario(os.fspath(scenario))
        else:
            raise TypeError("a scenario is a path, a dict, or a model and a config")
        self._mtimes = _mtimes(self._loaded)

    @property
    def name(self):
        return self._loaded.name

    def run(self, execution=None, mode=None):
        """The run document (dict) of this scenario with `execution` fields changed, as
        `--set execution.KEY=VALUE` would change them; `mode` "sharded", "pipelined" or "both"
        (default: the scenario's)."""
        settings = [(path, json.dumps(value)) for path, value in _flatten(execution or {})]
        return json.loads(self._loaded.run(settings, mode or ""))


def _path_or_dict(value, what):
    if isinstance(value, (str, os.PathLike)):
        return os.path.normpath(os.fspath(value))
    if isinstance(value, dict):
        return value
    raise TypeError(f"a {what} is a path or a dict, got {type(value).__name__}")


def _flatten(execution, prefix=""):
    """Dotted paths to leaves, so that {"optimizer": {"type": "adam"}} changes the type only."""
    if not isinstance(execution, dict):
        raise TypeError("execution is a dict of scenario execution fields")
    for key, value in execution.items():
        path = prefix + str(key)
        if isinstance(value, dict) and value:
            yield from _flatten(value, path + ".")
        else:
            yield path, value


# Scenarios by what names them: a path (reloaded when the scenario, model or config file
# changes) or a document's text. A few, most recent last.
_cache = {}
_CACHE_SIZE = 16


def _scenario(model, config):
    if isinstance(model, Scenario):
        if config is not None:
            raise TypeError("a Scenario already names its config")
        return model
    key = json.dumps([model if not isinstance(model, os.PathLike) else os.fspath(model),
                      config if not isinstance(config, os.PathLike) else os.fspath(config)], sort_keys=True)
    cached = _cache.pop(key, None)
    if cached is not None and _mtimes(cached._loaded) != cached._mtimes:
        cached = None
    if cached is None:
        cached = Scenario(model, config)
    _cache[key] = cached
    while len(_cache) > _CACHE_SIZE:
        del _cache[next(iter(_cache))]
    return cached


def run(model, config=None, execution=None, mode=None):
    """Simulate and return the run document `ipusim run --json` writes, as a dict.

    `model` is a scenario (path, dict or Scenario) when `config` is None, else a model (path
    or dict) to run on `config` (path or dict). `execution` changes execution fields as
    `--set execution.KEY=VALUE` does ({"gradientAccumulation": 2048}); `mode` is "sharded",
    "pipelined" or "both" (default: the scenario's). Raises InputError on bad input."""
    return _scenario(model, config).run(execution, mode)


def to_dataframe(runs):
    """One row per mode run of the given run documents (a document or a list of them): the
    scenario, the execution settings and every scalar figure of runs[] (ipus and links left
    out). Needs pandas."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("ipusim.to_dataframe needs pandas (Debian: apt-get install python3-pandas)") from e
    if isinstance(runs, dict):
        runs = [runs]
    rows = []
    for document in runs:
        base = {"scenario": document.get("scenario"), "model": document.get("model"),
                "config": document.get("config")}
        base.update({k: v for k, v in document.get("execution", {}).items() if not isinstance(v, (list, dict))})
        for r in document.get("runs", []):
            row = dict(base)
            row.update(_scalars(r))
            rows.append(row)
    return pandas.DataFrame(rows)


def _scalars(run_document, prefix=""):
    out = {}
    for key, value in run_document.items():
        if isinstance(value, dict):
            out.update(_scalars(value, prefix + key + "."))
        elif not isinstance(value, list):
            out[prefix + key] = value
    return out


def _flags(options):
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False or value is None:
            continue
        elif key == "set":
            for s in ([value] if isinstance(value, str) else value):
                args += ["--set", s]
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def validate(path, **options):
    """`ipusim validate PATH` (options as its flags: set=[...], batch_size=..., dtype=...): its
    report as text; raises InputError where the CLI exits with 2."""
    code, text = _ipusim.validate(["validate", os.fspath(path)] + _flags(options))
    return text


def plan(scenario, quiet=True, **options):
    """`ipusim plan SCENARIO` with its flags as keywords (ipus=[4, 8], global_batch="2048",
    top=3, write="out/best", set=[...]): a dict with "text" (what the CLI prints) and
    "fits" (False when no configuration fits, the CLI's exit code 5)."""
    code, text = _ipusim.plan(["plan", os.fspath(scenario)] + _flags(dict(options, quiet=quiet)))
    return {"text": text, "fits": code == 0}
