"""ipusim from Python: run a scenario (or a model on a config) and get the run document
`ipusim run --json` writes, as a dict. Scenarios load once (ipusim.Scenario, or the cache
behind paths and dicts); each run simulates in forked children, so a script or notebook
can run thousands. docs/python.md has an example.
"""
import difflib
import functools
import inspect
import json
import math
import numbers
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


# Bad input that only a Python call can give (a type JSON has no word for, a keyword that is
# no flag, a call that does not fit a signature) is found here, before the C++ side sees it,
# and reported as the C++ side reports the rest: an InputError whose file is the argument
# (docs/python.md "Errors" lists the python.* rules).

_MAX_DEPTH = 64  # kMaxJsonDepth (sim/io/json_reader.hpp): no ipusim format nests deeper


def _printable(text):
    """`text` on one line, as sim/io/input_error.cpp's printable() makes it: control characters
    as \\u00XX, a byte os.fsdecode could not decode as \\xXX, any other lone surrogate as \\uXXXX."""
    out = []
    for c in text:
        code = ord(c)
        if code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xDC80 <= code <= 0xDCFF:  # the byte os.fsdecode could not decode
            out.append(f"\\x{code - 0xDC00:02X}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(c)
    return "".join(out)


def _bounded(text, limit):
    """At most `limit` UTF-8 bytes of `text` (a 1 MB key must not make a 2 MB line), as the C++ side cuts."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", errors="ignore")
    return f"{kept}...({len(data) - len(kept.encode('utf-8'))} more bytes)"


def _error(file, pointer, rule, message):
    """An InputError like the C++ side's: str() is "FILE: at POINTER: MESSAGE [RULE]"."""
    pointer = pointer or "/"
    text = (f"{_bounded(_printable(file or '<input>'), 300)}: at {_bounded(_printable(pointer), 300)}: "
            f"{_bounded(_printable(message), 1000)} [{rule}]")
    return InputError(text, file, pointer, rule, message)


def _child(pointer, key):
    """The JSON pointer of `key` (or an index) under `pointer` (RFC 6901: "~" and "/" escaped)."""
    return ("" if pointer == "/" else pointer) + "/" + str(key).replace("~", "~0").replace("/", "~1")


def _pointer(keys):
    """The JSON pointer of a path of keys: "/" for none."""
    return functools.reduce(_child, keys, "/")


def _utf8(text, file, pointer, what):
    """`text`, checked to cross to C++ as UTF-8 (a lone surrogate cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _error(file, pointer, "python.bad-value",
                     f"{what} holds {text[e.start]!a} at index {e.start}, which is not text UTF-8 can hold") from None
    return text


def _path(value, file, accepted="a path (str or os.PathLike)"):
    """A path argument as the str the C++ side opens."""
    if isinstance(value, os.PathLike):
        try:
            value = os.fspath(value)
        except TypeError:
            pass  # its __fspath__ gave neither str nor bytes: reported as its type below
    if not isinstance(value, str):
        hint = " (os.fsdecode() makes a str of bytes)" if isinstance(value, (bytes, bytearray)) else ""
        raise _error(file, "/", "python.bad-type", f"{file} is {accepted}, got {type(value).__name__}{hint}")
    if not value:
        raise _error(file, "/", "python.bad-value", f"the {file} path is empty")
    return _utf8(value, file, "/", f"the {file} path")


def _number(value):
    """json.dumps's fallback: numbers of other kinds (numpy's) as the int or float they stand for."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _json_text(value, file, pointer="/", sort_keys=False, parts=None):
    """`value` as JSON text for the C++ side. What JSON cannot hold is an InputError saying
    where, found by walking `parts` ({file: value}; default {file: value} at `pointer`) only
    when json.dumps fails: good input costs one json.dumps."""
    try:
        return json.dumps(value, allow_nan=False, sort_keys=sort_keys, default=_number)
    except (TypeError, ValueError, RecursionError) as e:  # RecursionError: nested past Python's stack
        for part_file, part in (parts or {file: value}).items():
            _check_json(part, part_file, "/" if parts else pointer)
        raise _error(file, pointer, "python.bad-value", f"cannot be written as JSON: {e}") from None


def _check_json(value, file, pointer, depth=0):
    """Raises the InputError for the first part of `value` (at `pointer` in `file`) that JSON cannot hold."""
    if depth > _MAX_DEPTH:
        raise _error(file, pointer, "python.bad-value",
                     f"nests more than {_MAX_DEPTH} deep (or holds itself); no ipusim format needs more than a "
                     "few levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _error(file, _child(pointer, key), "python.bad-key",
                             f"a key is a str, got {type(key).__name__} {key!r:.60}")
            _check_json(item, file, _child(pointer, key), depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, file, _child(pointer, index), depth + 1)
    elif isinstance(value, (str, bool)) or value is None:
        pass
    elif isinstance(value, numbers.Integral):
        try:
            str(int(value))
        except ValueError as e:  # more digits than sys.get_int_max_str_digits() lets Python write
            raise _error(file, pointer, "python.bad-value", f"an integer too large to write: {e}") from None
    elif isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise _error(file, pointer, "python.bad-value",
                         f"{float(value)!r} is not a JSON number (JSON numbers are finite)")
    else:
        raise _error(file, pointer, "python.bad-type",
                     f"{type(value).__name__} is not a JSON value (dict, list, str, int, float, bool or None)")


def _call_checked(name):
    """Arguments that do not fit the signature (one missing, one too many, an unknown keyword)
    raise InputError, as every other bad input does, not Python's TypeError. `name` is the
    entry point as the error names it."""
    def wrap(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def checked(*args, **kwargs):
            try:
                signature.bind(*args, **kwargs)
            except TypeError as e:
                raise _call_error(name, signature, kwargs, e) from None
            return function(*args, **kwargs)
        return checked
    return wrap


def _call_error(name, signature, kwargs, error):
    parameters = [p for p in signature.parameters if p != "self"]
    for keyword in kwargs:
        if keyword not in signature.parameters or keyword == "self":
            return _unknown_keyword(name, keyword, parameters)
    shown = str(signature).replace("(self, ", "(").replace("(self)", "()")
    return _error(name, "/", "python.bad-call", f"{error}; the call is {name}{shown}")


def _unknown_keyword(name, keyword, known):
    close = difflib.get_close_matches(keyword, known, n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    return _error(name, _pointer([keyword]), "python.unknown-keyword",
                  f'{name} takes no keyword "{keyword}"{hint}; its keywords: {", ".join(known)}')


def _mtimes(loaded):
    files = [loaded.file, loaded.model_file, loaded.config_file]
    return tuple(os.stat(f).st_mtime_ns if os.path.isfile(f) else None for f in files)


class Scenario:
    """A scenario loaded once: `Scenario(path_or_dict)`, or `Scenario(model, config)` for a
    model (path or dict) on a config (path or dict) without a scenario file, every execution
    setting at its default (batchesPerStep 64, as `ipusim run MODEL --config CONFIG`)."""

    @_call_checked("Scenario")
    def __init__(self, scenario, config=None):
        if config is not None:
            self._loaded = _model_on_config(scenario, config)
        elif isinstance(scenario, dict):
            self._loaded = _ipusim.scenario_from_json(_json_text(scenario, "scenario"), "<scenario dict>")
        else:
            path = _path(scenario, "scenario", "a path (str or os.PathLike), a dict, or a model and a config")
            self._loaded = _ipusim.load_scenario(path)
        self._mtimes = _mtimes(self._loaded)

    @property
    def name(self):
        return self._loaded.name

    @_call_checked("Scenario.run")
    def run(self, execution=None, mode=None):
        """The run document (dict) of this scenario with `execution` fields changed, as
        `--set execution.KEY=VALUE` would change them; `mode` "sharded", "pipelined", "both" or
        "phased" (default: the scenario's)."""
        settings = _settings(execution)
        if mode is not None and not isinstance(mode, str):
            raise _error("mode", "/", "python.bad-type",
                         f'mode is "sharded", "pipelined", "both", "phased" or None, got {type(mode).__name__}')
        try:
            return json.loads(self._loaded.run(settings, _utf8(mode or "", "mode", "/", "mode")))
        except InputError as e:
            moved = _execution_error(e, settings, self._loaded.file)
            if moved is None:
                raise
            raise moved from None


def _model_on_config(model, config):
    """`ipusim run MODEL --config CONFIG`'s scenario: the model and config as paths or dicts."""
    name = os.path.splitext(os.path.basename(model))[0] if isinstance(model, str) else "model"
    parts = {"model": _path_or_dict(model, "model"), "config": _path_or_dict(config, "config")}
    document = {"name": name, **parts, "execution": {"batchesPerStep": 64}}
    text = _json_text(document, "command line", parts={k: v for k, v in parts.items() if isinstance(v, dict)})
    return _ipusim.scenario_from_json(text, "command line")


def _path_or_dict(value, what):
    if isinstance(value, dict):
        return value
    return os.path.normpath(_path(value, what, "a path (str or os.PathLike) or a dict"))


def _settings(execution):
    """(dotted path, JSON text) for each leaf of `execution`, as `--set execution.PATH=VALUE`
    takes them."""
    if execution is None:
        return []
    if not isinstance(execution, dict):
        raise _error("execution", "/", "python.bad-type",
                     f'execution is a dict of scenario execution fields ({{"gradientAccumulation": 64}}), '
                     f"got {type(execution).__name__}")
    return [(".".join(keys), _json_text(value, "execution", _pointer(keys))) for keys, value in _flatten(execution)]


def _flatten(execution, prefix=()):
    """Paths (tuples of keys) to leaves, so that {"optimizer": {"type": "adam"}} changes the
    type only. A dotted key ("optimizer.type") is a path, as in --set."""
    if len(prefix) > _MAX_DEPTH:
        raise _error("execution", _pointer(prefix), "python.bad-value",
                     f"nests more than {_MAX_DEPTH} deep (or holds itself); no execution field is that deep")
    for key, value in execution.items():
        if not isinstance(key, str):
            raise _error("execution", _pointer(prefix + (key,)), "python.bad-key",
                         f"a key is an execution field's name (a str), got {type(key).__name__} {key!r:.60}")
        keys = prefix + tuple(key.split("."))
        if "" in keys[len(prefix):]:
            raise _error("execution", _pointer(prefix + (key,)), "python.bad-key",
                         f'"{key}" is no field name (an empty one, or an empty part between dots)')
        _utf8(key, "execution", _pointer(prefix + (key,)), "the key")
        if isinstance(value, dict) and value:
            yield from _flatten(value, keys)
        else:
            yield keys, value


def _execution_error(error, settings, scenario_file):
    """An error the C++ side found in a value the call gave, named as the call's: file
    "execution" and the pointer under it, rather than the --set or text it crossed as, or the
    scenario file it changed. None for any other error."""
    if error.file == "--set" and error.pointer.startswith("execution."):  # sim/io/overrides.cpp
        return _error("execution", _pointer(error.pointer[len("execution."):].split(".")), error.rule, error.message)
    for path, _ in settings:
        if error.file == "execution." + path:  # the value's JSON text
            pointer = _pointer(path.split(".")) + ("" if error.pointer == "/" else error.pointer)
            return _error("execution", pointer, error.rule, error.message)
    # The C++ side (sim/python/module.cpp) moves most errors at or under a value the call set
    # (not a key with "/" or "~", which its pointer leaves unescaped); one above it is the
    # call's too ({"schedule": {"x": 1}} makes /execution/schedule an object), as the scenario
    # file checked clean when it loaded.
    for path, _ in settings:
        at = "/execution" + _pointer(path.split("."))
        related = error.pointer == at or at.startswith(error.pointer + "/") or error.pointer.startswith(at + "/")
        if error.file == scenario_file and (error.pointer + "/").startswith("/execution/") and related:
            return _error("execution", error.pointer[len("/execution"):] or "/", error.rule,
                          f'{error.message} (the value execution["{path}"] gave; {scenario_file} as changed)')
    return None


# Scenarios by what names them: a path (reloaded when the scenario, model or config file
# changes) or a document's text. A few, most recent last.
_cache = {}
_CACHE_SIZE = 16


def _scenario(model, config):
    if isinstance(model, Scenario):
        if config is not None:
            raise _error("config", "/", "python.bad-value", "a Scenario already names its config: give config=None")
        return model
    key = (_key(model, "scenario" if config is None else "model"), None if config is None else _key(config, "config"))
    cached = _cache.pop(key, None)
    if cached is not None and _mtimes(cached._loaded) != cached._mtimes:
        cached = None
    if cached is None:
        cached = Scenario(model, config)
    _cache[key] = cached
    while len(_cache) > _CACHE_SIZE:
        del _cache[next(iter(_cache))]
    return cached


def _key(value, what):
    """What names a scenario, model or config in the cache: its path, or its dict's content."""
    if isinstance(value, dict):
        return "dict", _json_text(value, what, sort_keys=True)
    accepted = ("a path (str or os.PathLike), a dict or a Scenario" if what == "scenario"
                else "a path (str or os.PathLike) or a dict")
    return "path", _path(value, what, accepted)


@_call_checked("run")
def run(model, config=None, execution=None, mode=None):
    """Simulate and return the run document `ipusim run --json` writes, as a dict.

    `model` is a scenario (path, dict or Scenario) when `config` is None, else a model (path
    or dict) to run on `config` (path or dict). `execution` changes execution fields as
    `--set execution.KEY=VALUE` does ({"gradientAccumulation": 2048}); `mode` is "sharded",
    "pipelined", "both" or "phased" (default: the scenario's). Raises InputError on bad input."""
    return _scenario(model, config).run(execution, mode)


@_call_checked("to_dataframe")
def to_dataframe(runs):
    """One row per mode run of the given run documents (a document or a list of them): the
    scenario, the execution settings and every scalar figure of runs[] (ipus and links left
    out). Needs pandas."""
    documents = _run_documents(runs)
    try:
        import pandas
    except ImportError as e:
        raise ImportError("ipusim.to_dataframe needs pandas (Debian: apt-get install python3-pandas)") from e
    rows = []
    for i, document in enumerate(documents):
        base = {key: _cell(document.get(key), _pointer([i, key])) for key in ("scenario", "model", "config")}
        base.update({k: _cell(v, _pointer([i, "execution", k])) for k, v in document.get("execution", {}).items()
                     if not isinstance(v, (list, dict))})
        for j, r in enumerate(document.get("runs", [])):
            row = dict(base)
            row.update(_scalars(r, _pointer([i, "runs", j])))
            rows.append(row)
    return pandas.DataFrame(rows)


def _run_documents(runs):
    """`runs` (a run document or an iterable of them) as a list, each checked to have what
    to_dataframe reads: a dict, with "execution" a dict and "runs" a list of dicts."""
    if isinstance(runs, dict):
        runs = [runs]
    elif isinstance(runs, (str, bytes, bytearray)) or not hasattr(runs, "__iter__"):
        raise _error("runs", "/", "python.bad-type",
                     f"runs is a run document (dict) or a list of them, got {type(runs).__name__}")
    documents = list(runs)
    for i, document in enumerate(documents):
        if not isinstance(document, dict):
            raise _error("runs", _pointer([i]), "python.bad-type",
                         f"a run document is a dict (as ipusim.run returns), got {type(document).__name__}")
        if not isinstance(document.get("execution", {}), dict):
            raise _error("runs", _pointer([i, "execution"]), "python.bad-type",
                         f'"execution" is a dict, got {type(document["execution"]).__name__}')
        mode_runs = document.get("runs", [])
        if not isinstance(mode_runs, (list, tuple)):
            raise _error("runs", _pointer([i, "runs"]), "python.bad-type",
                         f'"runs" is a list of mode runs (dicts), got {type(mode_runs).__name__}')
        for j, mode_run in enumerate(mode_runs):
            if not isinstance(mode_run, dict):
                raise _error("runs", _pointer([i, "runs", j]), "python.bad-type",
                             f"a mode run is a dict, got {type(mode_run).__name__}")
    return documents


def _scalars(mode_run, pointer, prefix="", depth=0):
    """The scalar figures of a mode run (at `pointer` in runs) by dotted name ("memory.fits")."""
    if depth > _MAX_DEPTH:
        raise _error("runs", pointer, "python.bad-value", f"nests more than {_MAX_DEPTH} deep (or holds itself)")
    out = {}
    for key, value in mode_run.items():
        if isinstance(value, dict):
            out.update(_scalars(value, _child(pointer, key), f"{prefix}{key}.", depth + 1))
        elif not isinstance(value, list):
            out[f"{prefix}{key}"] = _cell(value, _child(pointer, key))
    return out


def _cell(value, pointer):
    """`value` as a table cell: pandas cannot hold an integer past a float's range (no run document has one)."""
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise _error("runs", pointer, "python.bad-value",
                         "an integer past a float's range (no run document has one)") from None
    return value


# The keywords of validate and plan: the flags of `ipusim validate --help` and `ipusim plan
# --help` (sim/cli/validate_command.cpp, plan_command.cpp) with "_" for "-", True for a flag
# that takes no value. Written out, so that a wrong keyword is named here with the keywords there
# are; the C++ side reads each value as the CLI reads its flag (sim/python/keyword_options.cpp),
# and a test (tests/python/test_ipusim.py) holds them to the CLI's help.
_KEYWORDS = {
    "validate": {"batch_size": False, "dtype": False, "set": False},
    "plan": {"ipus": False, "replicas": False, "global_batch": False, "micro_batch": False,
             "gradient_accumulation": False, "schedule": False, "recomputation": False, "state": False,
             "rts": False, "weight_update": False, "heads_on": False, "amp": False, "layer_free_ipus": False,
             "att_ffn": False, "tensor_parallel": False, "config": False,
             "objective": False, "top": False, "front_within": False, "time_limit": False, "set": False,
             "explain_layers": True, "quiet": True, "write": False, "force": True},
}


def _keywords(command, options):
    """`command`'s keywords `options` as the C++ side takes them (None or False: left out): True for
    a flag, a list of str for `set`, a str, int or float (or a list of them) for any other."""
    keywords = {}
    for key, value in options.items():
        if key not in _KEYWORDS[command]:
            raise _unknown_keyword(command, key, list(_KEYWORDS[command]))
        pointer = _pointer([key])
        if value is None or value is False:
            continue
        if _KEYWORDS[command][key]:
            if value is not True:
                raise _error(command, pointer, "python.bad-type",
                             f"{key} is a flag: True or False, got {type(value).__name__}")
            keywords[key] = True
        elif key == "set":
            values = [value] if isinstance(value, str) else _items(value, command, pointer, key)
            keywords[key] = [_set_value(s, command, _child(pointer, i)) for i, s in enumerate(values)]
        elif isinstance(value, (list, tuple)):
            keywords[key] = [_option_value(v, command, _child(pointer, i), key) for i, v in enumerate(value)]
        else:
            keywords[key] = _option_value(value, command, pointer, key)
    return keywords


def _items(value, command, pointer, key):
    if not isinstance(value, (list, tuple)):
        raise _error(command, pointer, "python.bad-type",
                     f'{key} is "path=value" or a list of them, got {type(value).__name__}')
    return value


def _set_value(value, command, pointer):
    if not isinstance(value, str):
        raise _error(command, pointer, "python.bad-type",
                     f'set is "path=value" or a list of them, got {type(value).__name__}')
    return _utf8(value, command, pointer, "set")


def _option_value(value, command, pointer, key):
    """One value of an option: a str, int or float (a list holds several); the C++ side reads the
    text Python writes of it, as the CLI reads its flag's."""
    if isinstance(value, str):
        return _utf8(value, command, pointer, key)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = value if isinstance(value, (int, float)) else _number(value)
        try:
            str(number)
        except ValueError as e:  # more digits than sys.get_int_max_str_digits() lets Python write
            raise _error(command, pointer, "python.bad-value", f"{key}: an integer too large to write: {e}") from None
        return number
    raise _error(command, pointer, "python.bad-type",
                 f"{key} takes a str, int or float (or a list of them), got {type(value).__name__}")


@_call_checked("validate")
def validate(path, **options):
    """`ipusim validate PATH` (options as its flags: set=[...], batch_size=..., dtype=...): its
    report as text; raises InputError where the CLI exits with 2."""
    path = _path(path, "path")
    return _ipusim.validate(path, _keywords("validate", options))


@_call_checked("plan")
def plan(scenario, quiet=True, **options):
    """`ipusim plan SCENARIO` with its flags as keywords (ipus=[4, 8], global_batch="2048",
    top=3, write="out/best", set=[...]): `plan --json`'s document as a dict: "candidates" (the
    confirmed ones, best first, each with the "execution" section that runs it, its "evaluator"
    and "engine" figures), "whatIf", "search", "text" (what the CLI prints) and "fits" (False
    when no configuration fits, the CLI's exit code 5). With explain_layers=True, or for a
    phased scenario (whose plan is text only), {"text", "fits"}."""
    path, options = _path(scenario, "scenario"), dict(options, quiet=quiet)
    if not options.get("explain_layers"):
        try:
            code, text = _ipusim.plan(path, _keywords("plan", options), True)
            return dict(json.loads(text), fits=code == 0)
        except InputError as e:
            if (e.rule, e.pointer) != ("cli.conflict", "--json"):
                raise
    code, text = _ipusim.plan(path, _keywords("plan", options), False)
    return {"text": text, "fits": code == 0}
