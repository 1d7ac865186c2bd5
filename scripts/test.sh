#!/usr/bin/env bash
# The whole test suite: compiles the EAS sources with forge (offline, npm solc), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# PostgreSQL storage tests need Debian's server binaries; install them when we can (CI runs as root).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing postgresql for the storage tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) ||
      echo "could not install postgresql; its tests will be skipped" >&2
  else
    echo "postgresql is not installed; its tests will be skipped" >&2
  fi
fi
bash scripts/forge_build.sh
exec node_modules/.bin/bun test "$@"
