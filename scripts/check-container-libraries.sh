#!/bin/sh
# Fails when the container image would lack a library the binaries need: every shared library
# insightd and insightctl link (readelf -d NEEDED), apart from the Swift runtime (linked
# statically in the image) and glibc, must come from a Debian package that deploy/Containerfile's
# runtime stage installs. The container cannot be built here; this keeps it true anyway.
# Run by `make test-docs`.
#
# Usage: sh scripts/check-container-libraries.sh BIN_DIR
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:?usage: check-container-libraries.sh BIN_DIR}
# The runtime stage's `apt-get install` list: the words after the last FROM that look like packages.
installed=$(awk '/^FROM /{ runtime = 0 } /^FROM \$\{RUNTIME_IMAGE\}/{ runtime = 1 } runtime' "$ROOT/deploy/Containerfile" |
    tr ' \\' '\n\n' | grep -E '^lib[a-z0-9.+-]+$' | sort -u)
missing=""
for binary in insightd insightctl; do
    for lib in $(readelf -d "$BIN/$binary" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
        case "$lib" in
            libswift* | libFoundation* | libdispatch.so | libBlocksRuntime.so | lib_FoundationICU.so) continue ;;  # static in the image
            libc.so.* | libm.so.* | ld-linux* | libpthread.so.* | libdl.so.* | librt.so.*) continue ;;  # glibc, in every image
        esac
        path=$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64|x86_64|aarch64/ { print $NF; exit }')
        [ -n "$path" ] || { echo "container-libraries: $binary needs $lib, which this machine does not have" >&2; exit 1; }
        package=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
        [ -n "$package" ] || { echo "container-libraries: no Debian package owns $path ($lib)" >&2; exit 1; }
        echo "$installed" | grep -qx "$package" || missing="$missing $package($lib, $binary)"
    done
done
if [ -n "$missing" ]; then
    echo "container-libraries: deploy/Containerfile's runtime stage does not install:$missing" >&2
    exit 1
fi
echo "container-libraries: deploy/Containerfile installs every library insightd and insightctl link"
