#!/usr/bin/env bash
# Install what the live engine tests start by themselves (tests/engine_fixtures.py): a PostgreSQL
# server and a Java runtime (17 or 21) for Spark. Idempotent: when both are there it only checks.
# Debian/Ubuntu, as root (or with sudo).
#
# Which PostgreSQL runs what:
# - Debian's postgresql package (installed here; 15 on bookworm) runs tests/engines/test_engines_live.py,
#   tests/engines/test_engines_report.py and the double precision[] line of bench/engines.py.  It has no
#   pgvector, which is what tests/engines/test_pgvector.py::test_a_server_without_the_extension_is_named needs.
# - pgvector's tests (tests/engines/test_pgvector.py) and the pgvector line of bench/engines.py run on
#   PostgreSQL 16.2 with pgvector 0.6.2 from the PyPI wheel `pgserver` (the `test` extra; nothing to
#   install here: Debian's package list has no pgvector, and building it from source would add a
#   compiler and the server headers to CI's time).  pgserver starts it in about a second; as root it
#   runs the server as an OS user `pgserver` it creates.  pgvector 0.6.2 has no halfvec or
#   l2_normalize (both came in 0.7): the halfvec path is written for such servers but not run in CI.
set -euo pipefail

java_ok() {  # a java >= 17 on PATH or under /usr/lib/jvm
    local java major
    for java in "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
        [ -x "$java" ] || continue
        major=$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
        [ -n "$major" ] && [ "$major" -ge 17 ] && return 0
    done
    return 1
}

postgres_ok() {
    compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || command -v pg_ctl >/dev/null
}

missing=()
postgres_ok || missing+=(postgresql)
java_ok || missing+=(java)
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup-engines: PostgreSQL and Java 17+ already installed"
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup-engines: need root to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq

packages=()
for item in "${missing[@]}"; do
    if [ "$item" = java ]; then
        # Spark 4 runs on Java 17 or 21; newer Debian releases ship only one of them
        for candidate in openjdk-17-jre-headless openjdk-21-jre-headless default-jre-headless; do
            if apt-cache show "$candidate" >/dev/null 2>&1; then packages+=("$candidate"); break; fi
        done
    else
        packages+=("$item")
    fi
done
echo "setup-engines: installing ${packages[*]}"
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
postgres_ok && java_ok && echo "setup-engines: done"
