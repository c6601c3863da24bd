#!/usr/bin/env bash
# Runs the shell examples of the documentation against a real insightd (issue 20, item 7): an
# example that does not work as written fails `make test`.
#
# Usage: e2e/docs-examples.sh BIN_DIR        (BIN_DIR holds release insightd and insightctl)
#
# Every ```sh (or bash, shell, console) block in the pages below must have a marker on the line
# right before it, which the rendered page does not show:
#
#   <!-- docs-example: run -->                    run it: it must exit 0
#   <!-- docs-example: run; prints TEXT -->       ... and what it prints must contain TEXT
#   <!-- docs-example: run; needs CMD -->         ... unless CMD is not installed: then skipped
#   <!-- docs-example: skip; REASON -->           not runnable here (root, systemd, a cluster):
#                                                 listed as skipped with REASON
#   <!-- docs-example: file PATH -->              a block of any language (a client's example
#                                                 program): written to PATH, relative to the
#                                                 repository root, where the page's later shell
#                                                 blocks run it as the page says
#
# (`prints` and `needs` may be repeated and combined; TEXT cannot contain `;`; CMD is looked up
# from the repository root, so it may be a path such as .build/release/insightd-demo.) A block without a marker, a marker not
# followed by a shell block, or a skip without a reason fails the test. ```json blocks must parse.
#
# Blocks run as a reader who followed the README runs them:
# - in a directory laid out as the repository root (its files linked in, `.build/release` being
#   BIN_DIR), with `make run`'s daemon: a real insightd from BIN_DIR with its state in ./.state
#   and models/ (here on a free port: `127.0.0.1:8080` and `localhost:8080` in a block, where
#   make run listens, become that port, and INSIGHTD_LISTEN names it, as insightctl reads it;
#   `127.0.0.1:9464`, its metrics listener, becomes that listener's free port);
#   `swift run PRODUCT` becomes `.build/release/PRODUCT`, built beforehand (make test-docs builds
#   insightd-demo; a block that `needs` a product not built is skipped);
# - in a terminal where `insightctl` is on PATH and INSIGHTD_STATE_DIR is that state directory
#   (the README's Administration section says so), and nothing else is set;
# - the blocks of one page in order, in one bash with `set -eu -o pipefail` (a failing command,
#   an unset variable or a failing pipe stage fails the block; curl examples use -f so that an
#   HTTP error fails too), so a page's later blocks see the variables its earlier blocks set.
#   Every page starts in a fresh shell; a failed block ends its page.
# Each page may take DOCS_EXAMPLES_TIMEOUT seconds (default 120). A failed block's output is
# shown; DOCS_EXAMPLES_VERBOSE=1 shows every block's (its last 40 lines).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/e2e/lib.sh"
BIN=$(cd "${1:-$ROOT/.build/release}" && pwd)
# The pages whose examples are checked, relative to the repository root.
PAGES=(README.md docs/*.md clients/*/README.md)
TIMEOUT=${DOCS_EXAMPLES_TIMEOUT:-120}
for tool in insightd insightctl; do
    [ -x "$BIN/$tool" ] || { echo "docs-examples: $BIN/$tool not found (build with: make build)" >&2; exit 2; }
done
for tool in curl jq; do
    command -v "$tool" >/dev/null || { echo "docs-examples: $tool is needed (make deps installs it)" >&2; exit 2; }
done

WORK=$(mktemp -d)
SANDBOX="$WORK/repo"
LOG="$WORK/insightd.log"
PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
# Verdicts are collected as "N<TAB>line" (N orders them as in the pages) and printed at the end;
# the output to show under a verdict is kept in WORK/out/N.shown.
passed=0 failed=0 skipped=0
ok() { passed=$((passed + 1)); printf '%s\tok    %s\n' "$1" "$2" >>"$WORK/verdicts"; }
skip() { skipped=$((skipped + 1)); printf '%s\tskip  %s (%s)\n' "$1" "$2" "$3" >>"$WORK/verdicts"; }
fail() { failed=$((failed + 1)); printf '%s\tFAIL  %s: %s\n' "$1" "$2" "$3" >>"$WORK/verdicts"; }

# 1. Blocks: BLOCKS/N holds block N; the manifest has "N<TAB>page:line<TAB>kind<TAB>marker".
mkdir -p "$WORK/blocks" "$WORK/out"
: >"$WORK/verdicts"
cd "$ROOT"
awk -v dir="$WORK/blocks" '
    function kind(info) {
        sub(/^[ \t]*```[ \t]*/, "", info); sub(/[ \t{].*$/, "", info)
        if (info ~ /^(sh|bash|shell|console)$/) return "shell"
        if (info == "json") return "json"
        return "other"
    }
    FNR == 1 { marker = ""; markerLine = 0; inBlock = 0 }
    inBlock && /^[ \t]*```[ \t]*$/ { inBlock = 0; close(file); next }
    inBlock { print > file; next }
    /^[ \t]*```/ {
        n++; inBlock = 1; file = dir "/" n
        printf "" > file
        k = kind($0)
        # The marker counts only on the line right before the fence.
        m = (markerLine == FNR - 1) ? marker : ""
        printf "%d\t%s:%d\t%s\t%s\n", n, FILENAME, FNR, k, m
        marker = ""; markerLine = 0
        next
    }
    /^<!-- docs-example:.*-->[ \t]*$/ {
        if (markerLine) printf "%d\t%s:%d\tstray\t\n", n, FILENAME, markerLine
        marker = $0; sub(/^<!-- docs-example:[ \t]*/, "", marker); sub(/[ \t]*-->[ \t]*$/, "", marker)
        markerLine = FNR; next
    }
    markerLine && markerLine == FNR - 1 { printf "%d\t%s:%d\tstray\t\n", n, FILENAME, markerLine; markerLine = 0 }
' "${PAGES[@]}" >"$WORK/manifest"

# 2. Decide what each block is; runnable shell blocks are queued per page, in order.
declare -A queue=() prints=()
pages=()
while IFS=$'\t' read -r n where kind marker; do
    page=${where%:*}
    case "$kind" in
    stray) fail "$n" "$where" "a docs-example marker not directly followed by a shell block"; continue ;;
    json)
        [ -z "$marker" ] || { fail "$n" "$where" "a docs-example marker on a json block"; continue; }
        if jq -e . "$WORK/blocks/$n" >/dev/null 2>"$WORK/out/$n"; then ok "$n" "$where (json parses)"; else fail "$n" "$where" "json does not parse: $(cat "$WORK/out/$n")"; fi
        continue ;;
    other)
        case "$marker" in
        file\ ?*) ;;
        "") continue ;;
        *) fail "$n" "$where" "a docs-example marker on a block that is not shell (only file PATH)"; continue ;;
        esac ;;
    esac
    [ -n "$marker" ] || { fail "$n" "$where" "shell block without a <!-- docs-example: run|skip; REASON --> marker"; continue; }
    IFS=';' read -ra parts <<<"$marker"
    action=$(echo "${parts[0]}" | sed 's/^ *//; s/ *$//')
    case "$action" in
    skip)
        reason=$(printf '%s;' "${parts[@]:1}" | sed 's/^ *//; s/;$//')
        if [ -n "$reason" ]; then skip "$n" "$where" "$reason"; else fail "$n" "$where" "skip needs a reason: <!-- docs-example: skip; REASON -->"; fi
        continue ;;
    run) ;;
    file\ ?*)
        # Written by a shell block of its own, queued in the page's order.
        target=${action#file }
        case "$target" in /* | *..*) fail "$n" "$where" "file PATH must be inside the repository"; continue ;; esac
        { printf "cat >'%s' <<'__DOCS_EXAMPLE_FILE__'\n" "$target"; cat "$WORK/blocks/$n"; printf '__DOCS_EXAMPLE_FILE__\n'; } >"$WORK/blocks/$n.file"
        mv "$WORK/blocks/$n.file" "$WORK/blocks/$n"
        : >"$WORK/out/$n.prints"
        [ -n "${queue[$page]:-}" ] || pages+=("$page")
        queue[$page]="${queue[$page]:-} $n"
        echo "$where (file $target)" >"$WORK/out/$n.where"
        continue ;;
    *) fail "$n" "$where" "unknown docs-example action '$action' (run, skip or file PATH)"; continue ;;
    esac
    missing="" bad=""
    : >"$WORK/out/$n.prints"
    for part in "${parts[@]:1}"; do
        part=$(echo "$part" | sed 's/^ *//; s/ *$//')
        case "$part" in
        needs\ *) PATH="$BIN:$PATH" command -v "${part#needs }" >/dev/null 2>&1 || missing="${part#needs } is not installed" ;;
        prints\ *) printf '%s\n' "${part#prints }" >>"$WORK/out/$n.prints" ;;
        *) bad="unknown option '$part' (prints TEXT, needs CMD)" ;;
        esac
    done
    if [ -n "$bad" ]; then fail "$n" "$where" "$bad"; continue; fi
    if [ -n "$missing" ]; then skip "$n" "$where" "$missing"; continue; fi
    [ -n "${queue[$page]:-}" ] || pages+=("$page")
    queue[$page]="${queue[$page]:-} $n"
    echo "$where" >"$WORK/out/$n.where"
done <"$WORK/manifest"

# 3. make run's daemon, in a directory laid out as the repository root.
if [ ${#pages[@]} -gt 0 ]; then
    mkdir -p "$SANDBOX/.build"
    for entry in "$ROOT"/*; do ln -s "$entry" "$SANDBOX/$(basename "$entry")"; done
    ln -s "$BIN" "$SANDBOX/.build/release"
    env -i PATH="$PATH" HOME="$HOME" INSIGHTD_STATE_DIR="$SANDBOX/.state" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 \
        INSIGHTD_MODELS_DIR="$ROOT/models" "$BIN/insightd" 2>>"$LOG" &
    PID=$!
    wait_ready "$LOG" "$PID" || { echo "docs-examples: insightd did not become ready" >&2; cat "$LOG" >&2; exit 1; }
fi

# 4. Each page's blocks in one shell. The runner sources block after block into that shell, each
# block's output to its own file, and records the block it starts and each one it finishes.
cat >"$WORK/runner.bash" <<'EOF'
set -eu -o pipefail
cd "$DOCS_EXAMPLES_SANDBOX"
for __docs_example in "$@"; do
    echo "$__docs_example" >"$DOCS_EXAMPLES_WORK/current"
    { . "$DOCS_EXAMPLES_WORK/blocks/$__docs_example.sh"; } >"$DOCS_EXAMPLES_WORK/out/$__docs_example" 2>&1 </dev/null
    echo "$__docs_example" >>"$DOCS_EXAMPLES_WORK/finished"
done
EOF
keep() { awk '{ print "    | " $0 }' "$WORK/out/$1" | tail -40 >"$WORK/out/$1.shown"; }
for page in "${pages[@]}"; do
    # shellcheck disable=SC2086 # the queue is a list of block numbers
    set -- ${queue[$page]}
    for n in "$@"; do
        sed -e "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/g" -e "s/localhost:8080/127.0.0.1:$PORT/g" \
            -e "s/127\.0\.0\.1:9464/127.0.0.1:$METRICS_PORT/g" \
            -e 's|swift run \([A-Za-z0-9_-]*\)|.build/release/\1|g' "$WORK/blocks/$n" >"$WORK/blocks/$n.sh"
    done
    : >"$WORK/finished"
    : >"$WORK/current"
    rc=0
    timeout "$TIMEOUT" env -i PATH="$BIN:$PATH" HOME="$HOME" TERM=dumb LANG=C.UTF-8 \
        INSIGHTD_STATE_DIR="$SANDBOX/.state" INSIGHTD_LISTEN="127.0.0.1:$PORT" \
        DOCS_EXAMPLES_SANDBOX="$SANDBOX" DOCS_EXAMPLES_WORK="$WORK" \
        bash --noprofile --norc "$WORK/runner.bash" "$@" || rc=$?
    for n in "$@"; do
        where=$(cat "$WORK/out/$n.where")
        if grep -qx "$n" "$WORK/finished"; then
            missing=""
            while IFS= read -r text; do
                grep -qF -- "$text" "$WORK/out/$n" || missing="$text"
            done <"$WORK/out/$n.prints"
            if [ -z "$missing" ]; then
                ok "$n" "$where"
                [ "${DOCS_EXAMPLES_VERBOSE:-0}" = 0 ] || keep "$n"
            else
                fail "$n" "$where" "its output does not contain: $missing"
                keep "$n"
            fi
        elif [ "$(cat "$WORK/current")" = "$n" ]; then
            [ "$rc" = 124 ] && why="did not finish within ${TIMEOUT}s" || why="exited $rc"
            fail "$n" "$where" "$why"
            keep "$n"
        else
            fail "$n" "$where" "not run: an earlier block of $page failed"
        fi
    done
done

# 5. The daemon must have served it all without an error and stop cleanly.
if [ -n "$PID" ]; then
    n=$(( $(wc -l <"$WORK/manifest") + 1 ))
    if ! kill -0 "$PID" 2>/dev/null; then
        fail "$n" insightd "the daemon died"; tail -20 "$LOG" | sed 's/^/    | /' >"$WORK/out/$n.shown"
    else
        if grep -q '"level":"error"' "$LOG"; then
            fail "$n" insightd "it logged errors"; grep '"level":"error"' "$LOG" | head -5 | sed 's/^/    | /' >"$WORK/out/$n.shown"
        fi
        kill -TERM "$PID"
        wait "$PID" || fail "$((n + 1))" insightd "it did not stop cleanly"
    fi
    PID=""
fi
sort -s -n -k1,1 "$WORK/verdicts" | while IFS=$'\t' read -r n line; do
    echo "docs-examples: $line"
    [ ! -f "$WORK/out/$n.shown" ] || cat "$WORK/out/$n.shown"
done
echo "docs-examples: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
