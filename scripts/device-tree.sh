#!/usr/bin/env bash
# A lent GPU's `run` sends this checkout's tracked and untracked-not-ignored files, 64 MiB at most;
# models/ alone is about 290 MB, so a device call from a full checkout is refused.
#   bash scripts/device-tree.sh slim     # models/ out of the index (the files stay) and ignored here:
#                                        # the call sends the code; name what the GPU job reads in
#                                        # `carry` (e.g. models/minilm-l6-squad-transfer, 45 MB)
#   bash scripts/device-tree.sh restore  # the index as HEAD has it, the ignore line gone
#   bash scripts/device-tree.sh size     # MiB that a call would send now
# Never commit while slim: the commit would delete models/.
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=.git/info/exclude
case "${1:-}" in
  slim)
    git rm -r -q --cached models
    grep -qx '/models/' "$exclude" || echo '/models/' >>"$exclude" ;;
  restore)
    git reset -q -- models
    sed -i '\#^/models/$#d' "$exclude" ;;
  size)
    { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 du -cb 2>/dev/null |
      tail -1 | awk '{printf "%.1f MiB\n", $1 / 1048576}' ;;
  *) echo "usage: $0 slim|restore|size" >&2; exit 2 ;;
esac
