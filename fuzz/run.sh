#!/usr/bin/env bash
# libFuzzer targets for insightd (issue 9, item 2). Builds the package modules the targets need
# with swiftc directly (-sanitize=fuzzer,address; SwiftPM's own build is not touched and
# Package.swift is not involved beyond reading its target graph), then runs each target for a
# set time. Any crash fails the run and leaves its input in fuzz/crashes/.
#
#   fuzz/run.sh [SECONDS] [TARGET...]       default 60 s each, every target
#   fuzz/run.sh 0                           build only
#   fuzz/run.sh repro TARGET FILE           run one input (a crash) through a target
#
# Targets (fuzz/targets/*.swift):
#   json-evaluation  JSONParser, JSONWriter round trip, EvaluationRequest.decode, features, model
#   http-parser      HTTPRequestParser fed in socket-sized pieces
#   api-labels       POST /v1/labels through InsightAPIHandler with a real SQLite store
#   api-evaluation   POST /v1/evaluations (+ its consumption report) through the handler
#
# Corpora: fuzz/corpus/TARGET/ (seed-* files are committed; what a run adds is git-ignored).
# Environment: FUZZ_BUILD_DIR (default .build/fuzz), SWIFTC, FUZZ_JOBS_FLAGS (extra libFuzzer flags).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${FUZZ_BUILD_DIR:-$ROOT/.build/fuzz}
SWIFTC=${SWIFTC:-swiftc}
ALL_TARGETS=(json-evaluation http-parser api-labels api-evaluation)

# The package modules each target imports (their dependencies are added from Package.swift).
roots_of() {
    case "$1" in
        json-evaluation) echo "InsightAPI InsightServices CoachingModel JSON" ;;
        http-parser) echo "HTTPServer" ;;
        api-labels | api-evaluation) echo "InsightApp InsightAPI InsightDomain HTTPServer JSON" ;;
        *) echo "fuzz: unknown target '$1' (targets: ${ALL_TARGETS[*]})" >&2; exit 2 ;;
    esac
}
support_of() {
    case "$1" in
        api-*) echo "fuzz/support/LiveHandler.swift" ;;
    esac
}

REPRO=""
if [ "${1:-}" = repro ]; then
    [ $# -eq 3 ] || { echo "usage: fuzz/run.sh repro TARGET FILE" >&2; exit 2; }
    REPRO=$3
    set -- 0 "$2"
fi
SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

mkdir -p "$BUILD"/{modules,obj,bin,gen,tools,logs,stamps}
SAN=(-sanitize=fuzzer,address)
FLAGS=(-O -gline-tables-only -swift-version 6 -parse-as-library -enable-testing -module-cache-path "$BUILD/module-cache")

# --- the target graph, from Package.swift -----------------------------------------------------
swift package --scratch-path "$BUILD/spm" dump-package >"$BUILD/package.json"
target_json() { jq -c --arg n "$1" '.targets[] | select(.name == $n)' "$BUILD/package.json"; }
deps_of() { jq -r --arg n "$1" '.targets[] | select(.name == $n) | .dependencies[] | (.byName // .target // .product)[0]' "$BUILD/package.json"; }

ORDER=()
declare -A VISITED=()
visit() {
    local m=$1
    [ -n "${VISITED[$m]:-}" ] && return
    VISITED[$m]=1
    [ -n "$(target_json "$m")" ] || { echo "fuzz: Package.swift has no target $m" >&2; exit 2; }
    local d
    for d in $(deps_of "$m"); do visit "$d"; done
    ORDER+=("$m")
}

# --- building ---------------------------------------------------------------------------------
stamp_ok() { [ -f "$BUILD/stamps/$1" ] && [ "$(cat "$BUILD/stamps/$1")" = "$2" ]; }

# The migrations the EmbedMigrations plugin would embed, generated the same way.
embed_migrations() {
    local tool=$BUILD/tools/MigrationEmbedder out=$BUILD/gen/EmbeddedMigrations.swift
    local sum
    sum=$(cat Sources/MigrationEmbedder/*.swift | sha256sum | cut -c1-64)
    if ! stamp_ok MigrationEmbedder "$sum" || [ ! -x "$tool" ]; then
        "$SWIFTC" -O Sources/MigrationEmbedder/*.swift -o "$tool" -module-cache-path "$BUILD/module-cache"
        echo "$sum" >"$BUILD/stamps/MigrationEmbedder"
    fi
    # shellcheck disable=SC2046
    "$tool" "$out" $(ls migrations/*/*.sql | sort)
    echo "$out"
}

# Every system-library target of the package (C modules), for every Swift module: the same
# flags for all, so a module is compiled once whichever target asked for it.
SYSTEM_INCLUDES=()
LINK_FLAGS=()
while IFS=$'\t' read -r name path pc; do
    [ "$path" = - ] && path=Sources/$name
    SYSTEM_INCLUDES+=(-I "$path")
    if [ "$pc" != - ]; then
        for flag in $(pkg-config --cflags "$pc"); do SYSTEM_INCLUDES+=(-Xcc "$flag"); done
        for flag in $(pkg-config --libs "$pc"); do LINK_FLAGS+=("$flag"); done
    fi
done < <(jq -r '.targets[] | select(.type == "system") | [.name, (.path // "-"), (.pkgConfig // "-")] | @tsv' "$BUILD/package.json")

build_module() {
    local m=$1 json type path sources=()
    json=$(target_json "$m")
    type=$(jq -r .type <<<"$json")
    [ "$type" = system ] && return
    path=$(jq -r '.path // empty' <<<"$json")
    path=${path:-Sources/$m}
    while IFS= read -r f; do sources+=("$f"); done < <(find "$path" -name '*.swift' | sort)
    for plugin in $(jq -r '(.pluginUsages // [])[] | .plugin[0]' <<<"$json"); do
        case "$plugin" in
            EmbedMigrations) sources+=("$(embed_migrations)") ;;
            *) echo "fuzz: $m uses plugin $plugin, which fuzz/run.sh does not know" >&2; exit 2 ;;
        esac
    done
    local sum
    sum=$( { echo "${FLAGS[*]} ${SAN[*]} ${SYSTEM_INCLUDES[*]}"; cat "${sources[@]}"; for d in $(deps_of "$m"); do cat "$BUILD/stamps/$d" 2>/dev/null || true; done; } | sha256sum | cut -c1-64)
    if stamp_ok "$m" "$sum" && [ -f "$BUILD/obj/$m.o" ]; then return; fi
    echo "fuzz: compiling $m (${#sources[@]} files)"
    "$SWIFTC" "${FLAGS[@]}" "${SAN[@]}" "${SYSTEM_INCLUDES[@]}" -I "$BUILD/modules" -wmo -c \
        -module-name "$m" -emit-module -emit-module-path "$BUILD/modules/$m.swiftmodule" \
        -o "$BUILD/obj/$m.o" "${sources[@]}"
    echo "$sum" >"$BUILD/stamps/$m"
}

build_target() {
    local t=$1 r
    ORDER=(); VISITED=()
    for r in $(roots_of "$t"); do visit "$r"; done
    local objects=()
    for m in "${ORDER[@]}"; do
        build_module "$m"
        [ -f "$BUILD/obj/$m.o" ] && [ "$(jq -r .type <<<"$(target_json "$m")")" != system ] && objects+=("$BUILD/obj/$m.o")
    done
    local sources=("fuzz/targets/$t.swift")
    for s in $(support_of "$t"); do sources+=("$s"); done
    local sum
    sum=$( { cat "${sources[@]}"; for m in "${ORDER[@]}"; do cat "$BUILD/stamps/$m" 2>/dev/null || true; done; } | sha256sum | cut -c1-64)
    if stamp_ok "bin-$t" "$sum" && [ -x "$BUILD/bin/$t" ]; then return; fi
    echo "fuzz: linking $t"
    "$SWIFTC" "${FLAGS[@]}" "${SAN[@]}" "${SYSTEM_INCLUDES[@]}" -I "$BUILD/modules" \
        -module-name "fuzz_${t//-/_}" -o "$BUILD/bin/$t" "${sources[@]}" "${objects[@]}" "${LINK_FLAGS[@]}" 2>&1 \
        | grep -v "Cannot export local symbol '__asan" || true
    [ -x "$BUILD/bin/$t" ] || { echo "fuzz: linking $t failed" >&2; exit 1; }
    echo "$sum" >"$BUILD/stamps/bin-$t"
}

# A dictionary of the API's member names and enum values, from the OpenAPI document.
jq -r '[.. | objects | (.properties // {} | keys[]), (.enum // [] | .[] | strings)] | unique | .[] | @json | @json' \
    openapi/openapi.json >"$BUILD/api.dict"
dict_of() {
    case "$1" in
        http-parser) echo "fuzz/dicts/http.dict" ;;
        *) echo "$BUILD/api.dict" ;;
    esac
}

started=$(date +%s)
for t in "${TARGETS[@]}"; do build_target "$t"; done
echo "fuzz: built ${TARGETS[*]} in $(( $(date +%s) - started ))s ($BUILD/bin)"

# --- running ----------------------------------------------------------------------------------
# The Swift runtime's backtracer would take over libFuzzer's crash handling (and can hang).
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0}
export INSIGHTD_MODELS_DIR="$ROOT/models"

if [ -n "$REPRO" ]; then
    exec "$BUILD/bin/${TARGETS[0]}" "$REPRO"
fi
[ "$SECONDS_EACH" -gt 0 ] || exit 0

mkdir -p fuzz/crashes
failed=()
for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="$BUILD/logs/$t.log"
    echo "fuzz: $t for ${SECONDS_EACH}s (log $log)"
    rc=0
    # shellcheck disable=SC2086
    "$BUILD/bin/$t" "fuzz/corpus/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -dict="$(dict_of "$t")" -artifact_prefix="fuzz/crashes/$t-" -print_final_stats=1 \
        ${FUZZ_JOBS_FLAGS:-} >"$log" 2>&1 || rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    if [ "$rc" = 0 ]; then
        echo "fuzz: ok: $t: $execs runs, $cov, corpus $corpus"
    else
        failed+=("$t")
        echo "fuzz: FAIL: $t (exit $rc); input in fuzz/crashes/, reproduce with: fuzz/run.sh repro $t fuzz/crashes/<file>" >&2
        grep -E "ERROR|Fatal error|Precondition failed|SUMMARY|Test unit written|artifact_prefix" "$log" | head -20 >&2 || true
    fi
done
echo "fuzz: finished in $(( $(date +%s) - started ))s"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]}" >&2
    exit 1
fi
