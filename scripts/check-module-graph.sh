#!/bin/sh
# Fails when the module table of docs/architecture.md (between the `module-graph` markers) and
# Package.swift disagree: a target missing on either side, another kind, or other dependencies.
# Run by `make test-docs`.
#
# Usage: sh scripts/check-module-graph.sh
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# From Package.swift: "name<TAB>kind<TAB>dependencies, sorted and comma-separated", one a line.
swift package --scratch-path "$WORK/spm" dump-package >"$WORK/package.json"
jq -r '.targets[] | [
    .name,
    ({regular: "library", executable: "executable", test: "test", system: "system library",
      plugin: "build-tool plugin"}[.type] // .type),
    ([.dependencies[] | (.byName // .target // .product)[0]] | sort | join(","))
  ] | @tsv' "$WORK/package.json" | sort >"$WORK/package.tsv"

# From the documentation: the rows of the table between the markers, header and rule left out.
awk -F'|' '
    /<!-- module-graph: begin -->/ { inside = 1; next }
    /<!-- module-graph: end -->/ { inside = 0 }
    inside && /^\|/ {
        name = $2; kind = $3; deps = $4
        gsub(/[ `]/, "", name); gsub(/^ +| +$/, "", kind); gsub(/[ `]/, "", deps)
        if (name == "target" || name ~ /^-+$/) next
        n = split(deps, list, ",")
        # sort the dependencies (insertion sort: awk has no portable sort)
        for (i = 2; i <= n; i++) { v = list[i]; j = i - 1; while (j > 0 && list[j] > v) { list[j + 1] = list[j]; j-- } list[j + 1] = v }
        joined = ""
        for (i = 1; i <= n; i++) joined = joined (i > 1 ? "," : "") list[i]
        printf "%s\t%s\t%s\n", name, kind, joined
    }
' docs/architecture.md | LC_ALL=C sort >"$WORK/docs.tsv"
LC_ALL=C sort -o "$WORK/package.tsv" "$WORK/package.tsv"

[ -s "$WORK/docs.tsv" ] || { echo "module-graph: no table between the module-graph markers of docs/architecture.md" >&2; exit 1; }
if ! diff -u --label Package.swift --label docs/architecture.md "$WORK/package.tsv" "$WORK/docs.tsv"; then
    echo "module-graph: docs/architecture.md's module table does not match Package.swift (lines: target, kind, dependencies)" >&2
    exit 1
fi
echo "module-graph: docs/architecture.md matches Package.swift ($(wc -l <"$WORK/package.tsv") targets)"
