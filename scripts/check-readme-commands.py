#!/usr/bin/env python3
"""Checks the README's command lines against the built binary: every `ansel SUBCOMMAND --flag ...`
in a code block or an inline code span must name a subcommand that exists and flags that its
`--help` lists. Prints each page's count of commands checked and what is wrong; exits 1 if anything is.

    python3 scripts/check-readme-commands.py [--binary target/release/ansel] [PAGE ...]

PAGE defaults to README.md; each subcommand's `--help` is read once for all pages.
"""
import argparse
import functools
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent


@functools.cache
def help_text(*args):
    out = subprocess.run([str(binary), *args, "--help"], capture_output=True, text=True)
    return out.stdout + out.stderr


def check(readme):
    """(commands checked, problems) of one page."""
    text = readme.read_text()
    # Command lines: code-block lines (backslash continuations joined) and inline code spans.
    commands = []  # (line number, command text)
    in_block = False
    pending, pending_line = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            if pending:
                pending += " " + line.strip()
            else:
                pending, pending_line = line.strip(), number
            if pending.endswith("\\"):
                pending = pending[:-1]
                continue
            commands.append((pending_line, pending))
            pending = ""
        else:
            for span in re.findall(r"`([^`]+)`", line):
                commands.append((number, span))

    problems = []
    checked = 0
    for number, command in commands:
        command = command.split(" #")[0]  # a trailing shell comment
        for match in re.finditer(r"(?:^|[\s;(])\$?ansel\s+([a-z][a-z-]*)(.*?)(?=$|[|>;]|&&)", command):
            sub, rest = match.group(1), match.group(2)
            if sub not in subcommands:
                # "ansel train ..." in prose is a command; "ansel index" as a word is checked too.
                problems.append(f"{readme.name}:{number}: `ansel {sub}`: no such subcommand")
                continue
            flags = re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", rest)
            known = help_text(sub)
            checked += 1
            for flag in flags:
                if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", known):
                    problems.append(f"{readme.name}:{number}: `ansel {sub} {flag}`: `ansel {sub} --help` has no {flag}")

    return checked, problems


parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--binary", type=Path, default=root / "target/release/ansel")
parser.add_argument("pages", nargs="*", type=Path, default=[root / "README.md"])
options = parser.parse_args()
binary = options.binary
if not binary.exists():
    sys.exit(f"{binary}: not built (cargo build --release -p ansel)")
for page in options.pages:
    if not page.is_file():
        sys.exit(f"{page}: no such page")
top = help_text()
subcommands = set(re.findall(r"^  ([a-z][a-z-]*)\s{2,}", top.split("Commands:")[1].split("Options:")[0], re.M))
failed = False
for page in options.pages:
    checked, problems = check(page)
    print(f"{page}: {checked} ansel command lines checked against {binary}")
    for p in problems:
        print(p)
    failed = failed or bool(problems)
sys.exit(1 if failed else 0)
