#!/usr/bin/env bash
# Puts a report's bulk data (results CSVs and sidecars, comparisons, journals, logs, compiled-kernel archives, HTML
# reports) back into reports/NAME/ from the commit that holds it; reports/README.md lists each report's commit.
# The tree keeps only what a reader opens (READMEs, summaries, plots, terminal output), so that it stays small.
#
#   scripts/report-data.sh NAME...      e.g. scripts/report-data.sh h100-retune
#   scripts/report-data.sh --all
#
# Files that are already there are left as they are (nothing of yours is overwritten); the restored files are
# ignored by git (.gitignore), so they never travel with a commit by accident.
set -euo pipefail
cd "$(dirname "$0")/.."
index=reports/README.md
commit_of() {  # the data commit of report $1: its row in the index, "| `NAME` | `SHA` |"
  sed -n "s/^| \`$1\` | \`\([0-9a-f]\{40\}\)\` |.*/\1/p" "$index" | head -1
}
names=("$@")
if [ "${1:-}" = --all ]; then
  mapfile -t names < <(sed -n 's/^| `\([^`]*\)` | `[0-9a-f]\{40\}` |.*/\1/p' "$index")
fi
[ ${#names[@]} -gt 0 ] || { echo "usage: scripts/report-data.sh NAME... | --all (names: $index)" >&2; exit 2; }
for name in "${names[@]}"; do
  sha=$(commit_of "$name")
  if [ -z "$sha" ]; then echo "report-data: $name: no such report in $index" >&2; exit 2; fi
  if ! git cat-file -e "$sha^{commit}" 2>/dev/null; then
    echo "report-data: $name: commit $sha is not in this clone (a shallow clone? git fetch --unshallow)" >&2
    exit 2
  fi
  tmp=$(mktemp -d)
  git archive "$sha" "reports/$name" | tar -x -C "$tmp"
  n=0
  while IFS= read -r -d '' f; do
    rel=${f#"$tmp"/}
    [ -e "$rel" ] && continue
    mkdir -p "$(dirname "$rel")" && cp -p "$f" "$rel" && n=$((n + 1))
  done < <(find "$tmp" -type f -print0)
  rm -rf "$tmp"
  echo "reports/$name: $n files restored from $sha"
done
