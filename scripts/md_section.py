"""Replaces one "## " section of a Markdown results file, or appends it.

    python3 scripts/md_section.py FILE "## Heading" < SECTION

The section runs from its heading to the next "## " heading (or the end); a file without the
heading gets the section appended (reportlib.replace_section).
"""
import sys

from reportlib import replace_section

if __name__ == "__main__":
    replace_section(sys.argv[1], sys.argv[2], sys.stdin.read())
