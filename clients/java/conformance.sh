#!/bin/sh
# The Java client's entry for e2e/clients.sh (contract: clients/conformance/README.md):
#   conformance.sh describe | run | test
# `test` builds the library and runs its JUnit 5 tests with Maven, offline against Debian's
# Maven repository (/usr/share/maven-repo: Jackson, JUnit 5, the Maven plugins; make deps-test
# installs them). `describe` and `run` compile the library and the driver with javac against
# Debian's Jackson jars (seconds, where another Maven run takes many).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
JACKSON=/usr/share/java/jackson-databind.jar:/usr/share/java/jackson-core.jar:/usr/share/java/jackson-annotations.jar
case "${1:-}" in
describe | run)
    # The library and the driver, compiled once into target/conformance and again only when a
    # source is newer.
    OUT=target/conformance
    if [ ! -f "$OUT/Driver.class" ] || [ -n "$(find src/main/java conformance -name '*.java' -newer "$OUT/Driver.class" | head -1)" ]; then
        rm -rf "$OUT" && mkdir -p "$OUT"
        # shellcheck disable=SC2046 # one argument per source file
        javac -Xlint:all -Werror -d "$OUT" -cp "$JACKSON" $(find src/main/java conformance -name '*.java') >&2
    fi
    java -cp "$OUT:$JACKSON" Driver "$1" ;;
test)
    mvn -B -q -o -Dmaven.repo.local=/usr/share/maven-repo test
    cat target/surefire-reports/*.txt | grep "^Tests run" ;;
*) echo "usage: conformance.sh describe|run|test" >&2; exit 2 ;;
esac
