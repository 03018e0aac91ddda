#!/usr/bin/env bash
# Restores a model that left models/ (to keep it under 300 MB) from the last commit that held it;
# git history keeps every removed model. Idempotent: a model already there is left alone.
#   bash scripts/restore-model.sh minilm-l6-tanda [minilm-l6-sedan-trecqa ...]
set -euo pipefail
cd "$(dirname "$0")/.."
for name in "$@"; do
  [ -f "models/$name/model.json" ] && continue
  commit=$(git rev-list -1 HEAD -- "models/$name/model.json")
  [ -n "$commit" ] || { echo "restore-model: no commit ever held models/$name" >&2; exit 1; }
  # The last commit that touched it either removed it (take its parent) or still holds it.
  git cat-file -e "$commit:models/$name/model.json" 2>/dev/null || commit="$commit^"
  echo "== restoring models/$name from $(git rev-parse --short "$commit")" >&2
  git archive "$commit" "models/$name" | tar -x
done
