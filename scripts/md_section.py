"""Replaces one "## " section of a Markdown results file, or appends it.

    python3 scripts/md_section.py FILE "## Heading" < SECTION

The section runs from its heading to the next "## " heading (or the end); a file without the
heading gets the section appended. Report scripts import `replace_section`.
"""
import os
import sys


def replace_section(md_path, heading, section):
    text = open(md_path).read() if os.path.exists(md_path) else ""
    if heading in text:
        start = text.index(heading)
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + section + ("" if nxt < 0 else "\n" + text[nxt + 1:])
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(md_path + ".tmp", "w") as f:
        f.write(text)
    os.replace(md_path + ".tmp", md_path)


if __name__ == "__main__":
    replace_section(sys.argv[1], sys.argv[2], sys.stdin.read())
