#!/usr/bin/env python3
"""Golden transcripts: runs the commands of a .tesh file and compares what they print with what the file says.

The format follows SimGrid's tesh files (one idea per file, the command and its expected output side by side):

    # a comment                  (kept as written)
    $ ipusim run scenarios/mlp-training.json
    > a line the command prints on standard output ('>' alone: an empty line)
    2> a line it prints on standard error
    ! expect return 2            (before a '$': the command's exit status; 0 when absent)
    ! ignore stderr              (before a '$': standard error is not compared, nor written: progress, timings)
    ! mask REGEX                 (before a '$': what REGEX matches in the command's output (its first group, if
                                  it has one) reads <masked>: a timing inside an otherwise pinned line)
    ! readme PHRASE              (after a command: PHRASE, whitespace collapsed, is in README.md and in what
                                  the command printed, so the README's figure is the shipped one)
    ! doc PATH                   (after a command: its standard output is one of the fenced code blocks of
                                  PATH, a page under docs/ that shows it, compared as the output is)

Commands run under bash from the repository's root, `ipusim` on PATH (the build's binary, so run documents
name it `ipusim`), the Python module on PYTHONPATH, $PYTHON the interpreter running this script (the one
the module was built for), TMPDIR a fresh folder per file, LC_ALL=C.

Tolerance: lines compare as text, except that every number in them compares within 1e-9 of the larger of the
two (relative): outputs are bit-for-bit equal on one machine; 1e-9 is room for another machine's libm, far
below any change of the model (the tables print 4 significant digits, the JSON documents 17).

Usage:
    transcript.py --bin DIR [--python-path DIR] FILE.tesh...        check (exit 1 and a diff on a mismatch)
    transcript.py --bin DIR [--python-path DIR] --regenerate FILE... rewrite the expected lines from the runs
scripts/make_transcripts.sh regenerates every file in tests/transcripts/.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

TOLERANCE = 1e-9
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class Command:
    def __init__(self, text, line, expect_return, ignore_stderr, masks):
        self.text, self.line = text, line
        self.expect_return, self.ignore_stderr, self.masks = expect_return, ignore_stderr, masks
        self.stdout, self.stderr, self.readme, self.docs = [], [], [], []


class TranscriptError(Exception):
    pass


def parse(path):
    """The file as a list of items: comment strings (kept for --regenerate) and Commands."""
    items, pending_return, pending_ignore, pending_masks = [], 0, False, []
    current = None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        if line.startswith("$ "):
            current = Command(line[2:], number, pending_return, pending_ignore, pending_masks)
            items.append(current)
            pending_return, pending_ignore, pending_masks = 0, False, []
        elif line == ">" or line.startswith("> ") or line == "2>" or line.startswith("2> "):
            if current is None:
                raise TranscriptError(f"{where}: an output line before any '$ command'")
            stream = current.stderr if line.startswith("2>") else current.stdout
            stream.append(line[3:] if line.startswith("2> ") else line[2:] if line.startswith("> ") else "")
        elif line.startswith("! expect return "):
            pending_return = int(line.split()[-1])
        elif line == "! ignore stderr":
            pending_ignore = True
        elif line.startswith("! mask "):
            try:
                pending_masks.append(re.compile(line[len("! mask "):]))
            except re.error as error:
                raise TranscriptError(f"{where}: '! mask' needs a Python regular expression: {error}")
        elif line.startswith("! readme "):
            if current is None:
                raise TranscriptError(f"{where}: '! readme' before any '$ command'")
            current.readme.append((line[len("! readme "):], number))
        elif line.startswith("! doc "):
            if current is None:
                raise TranscriptError(f"{where}: '! doc' before any '$ command'")
            current.docs.append((line[len("! doc "):], number))
        elif line.startswith("#") or line == "":
            items.append(line)
            current = None if line == "" else current
        else:
            raise TranscriptError(f"{where}: not a transcript line (#, $, >, 2>, or !): {line!r}")
    return items


def environment(args, tmp):
    env = dict(os.environ)
    env["PATH"] = os.path.abspath(args.bin) + os.pathsep + env.get("PATH", "")
    if args.python_path:
        env["PYTHONPATH"] = os.path.abspath(args.python_path)
    env["TMPDIR"], env["LC_ALL"], env["PYTHON"] = tmp, "C", sys.executable
    return env


def run(command, env):
    done = subprocess.run(["bash", "-c", command.text], cwd=ROOT, env=env, capture_output=True, text=True,
                          errors="replace", timeout=600)
    return done.returncode, done.stdout.splitlines(), done.stderr.splitlines()


def masked(masks, lines):
    """Each mask's match (its first group, when it has one, so that a label can anchor it) as <masked>."""
    def hide(match):
        if not match.re.groups:
            return "<masked>"
        text, start = match.group(0), match.start(0)
        return text[:match.start(1) - start] + "<masked>" + text[match.end(1) - start:]
    for mask in masks:
        lines = [mask.sub(hide, line) for line in lines]
    return lines


def same_line(expected, actual):
    if NUMBER.split(expected) != NUMBER.split(actual):
        return False
    for a, b in zip(NUMBER.findall(expected), NUMBER.findall(actual)):
        x, y = float(a), float(b)
        if abs(x - y) > TOLERANCE * max(abs(x), abs(y)):
            return False
    return True


def compare(path, command, what, expected, actual):
    if len(expected) == len(actual) and all(same_line(e, a) for e, a in zip(expected, actual)):
        return []
    diff = list(difflib.unified_diff(expected, actual, f"{path} ({what} expected)", f"{what} of: {command.text}",
                                     lineterm="", n=2))
    return [f"{path}:{command.line}: {what} of `{command.text}` differs (numbers within {TOLERANCE:g}, text exact)"] \
        + diff[:60] + (["  ..."] if len(diff) > 60 else [])


def collapse(text):
    return " ".join(text.split())


def readme_failures(path, command, printed):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = collapse(f.read())
    output = collapse("\n".join(printed))
    failures = []
    for phrase, line in command.readme:
        if collapse(phrase) not in readme:
            failures.append(f"{path}:{line}: README.md does not say {phrase!r}: write the figure the command prints")
        if collapse(phrase) not in output:
            failures.append(f"{path}:{line}: `{command.text}` does not print {phrase!r}: the README's figure is stale")
    return failures


def code_blocks(text):
    """The fenced (```) blocks of a Markdown page, each as its lines."""
    blocks, block = [], None
    for line in text.split("\n"):
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                blocks.append(block)
                block = None
        elif block is not None:
            block.append(line)
    return blocks


def doc_failures(path, command, out):
    failures = []
    for page, line in command.docs:
        try:
            with open(os.path.join(ROOT, page), encoding="utf-8") as f:
                blocks = code_blocks(f.read())
        except OSError as error:
            failures.append(f"{path}:{line}: '! doc {page}': {error.strerror}")
            continue
        if not any(len(b) == len(out) and all(same_line(e, a) for e, a in zip(b, out)) for b in blocks):
            failures.append(f"{path}:{line}: {page} shows no code block equal to what `{command.text}` prints: "
                            "paste its output there (the page is stale)")
    return failures


def check(path, args, regenerate):
    items = parse(path)
    failures = []
    with tempfile.TemporaryDirectory(prefix="ipusim-transcript-") as tmp:
        env = environment(args, tmp)
        for command in (i for i in items if isinstance(i, Command)):
            status, out, err = run(command, env)
            out, err = masked(command.masks, out), masked(command.masks, err)
            if status != command.expect_return:
                failures.append(f"{path}:{command.line}: `{command.text}` exited {status}, expected "
                                f"{command.expect_return}" + ("" if status == 0 else ":\n  " + "\n  ".join(err[-5:])))
            if regenerate:
                command.stdout, command.stderr = out, ([] if command.ignore_stderr else err)
            else:
                failures += compare(path, command, "standard output", command.stdout, out)
                if not command.ignore_stderr:
                    failures += compare(path, command, "standard error", command.stderr, err)
            failures += readme_failures(path, command, out + err)
            failures += doc_failures(path, command, out)
    if regenerate and not failures:
        write(path, items)
    return failures


def write(path, items):
    lines = []
    for item in items:
        if isinstance(item, str):
            lines.append(item)
            continue
        if item.expect_return:
            lines.append(f"! expect return {item.expect_return}")
        if item.ignore_stderr:
            lines.append("! ignore stderr")
        lines += ["! mask " + mask.pattern for mask in item.masks]
        lines.append("$ " + item.text)
        lines += [("> " + l) if l else ">" for l in item.stdout]
        lines += [("2> " + l) if l else "2>" for l in item.stderr]
        lines += ["! readme " + phrase for phrase, _ in item.readme]
        lines += ["! doc " + page for page, _ in item.docs]
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".transcript-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the folder holding the ipusim binary")
    parser.add_argument("--python-path", help="the folder holding the ipusim Python module")
    parser.add_argument("--regenerate", action="store_true", help="rewrite the expected output from the runs")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    failures = []
    for path in args.files:
        try:
            failures += check(path, args, args.regenerate)
        except TranscriptError as error:
            failures.append(str(error))
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
