#!/usr/bin/env python3
"""Writes WordNet lexicons for `ansel train --retrofit` (standard library only).

Usage: wordnet-lexicon.py WORDNET_DICT_DIR OUT_DIR

Reads WordNet's data.{noun,verb,adj,adv} files and writes, in the format of Faruqui et al.
(2015) ("word neighbour neighbour ...", one line per word, sorted):
  wordnet-synonyms.txt  each word's synonyms (the other words of its synsets): their WN_syn
  wordnet-all.txt       synonyms plus the words of hypernym and hyponym synsets: their WN_all
Multi-word lemmas (with '_') are left out: ansel's word vectors are single words.
"""
import collections
import os
import sys

# Pointer symbols followed by wordnet-all: hypernym, hyponym and their instance forms.
HYPONYMY = {"@", "~", "@i", "~i"}


def synsets(dict_dir):
    """(offset, pos) -> (single words, [(offset, pos) of hypernyms/hyponyms])."""
    out = {}
    for pos in ("noun", "verb", "adj", "adv"):
        path = os.path.join(dict_dir, "data." + pos)
        with open(path, encoding="latin-1") as f:
            for number, line in enumerate(f, 1):
                if not line[:1].isdigit():  # the licence header
                    continue
                try:
                    fields = line.split(" | ")[0].split()
                    n = int(fields[3], 16)
                    words = [fields[4 + 2 * i].lower().split("(")[0] for i in range(n)]
                    k = 4 + 2 * n
                    links = []
                    for _ in range(int(fields[k])):
                        symbol, offset, target_pos = fields[k + 1], fields[k + 2], fields[k + 3]
                        k += 4
                        if symbol in HYPONYMY:
                            links.append((offset, "a" if target_pos == "s" else target_pos))
                except (IndexError, ValueError) as e:
                    sys.exit(f"{path}:{number}: not a WordNet data line ({e})")
                key = (fields[0], "a" if fields[2] == "s" else fields[2])
                out[key] = ([w for w in words if "_" not in w], links)
    return out


def write(path, lexicon):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for word in sorted(lexicon):
            if lexicon[word]:
                f.write(" ".join([word] + sorted(lexicon[word])) + "\n")
    os.replace(tmp, path)
    print(f"{path}: {sum(1 for w in lexicon if lexicon[w]):,} words", file=sys.stderr)


def main(dict_dir, out_dir):
    table = synsets(dict_dir)
    synonyms, everything = collections.defaultdict(set), collections.defaultdict(set)
    for words, links in table.values():
        related = {w for link in links if link in table for w in table[link][0]}
        for w in words:
            synonyms[w] |= set(words) - {w}
            everything[w] |= (set(words) | related) - {w}
    os.makedirs(out_dir, exist_ok=True)
    write(os.path.join(out_dir, "wordnet-synonyms.txt"), synonyms)
    write(os.path.join(out_dir, "wordnet-all.txt"), everything)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
