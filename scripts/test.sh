#!/usr/bin/env bash
# The whole test suite: compiles the EAS sources with forge (offline, npm solc), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/forge_build.sh
exec node_modules/.bin/bun test "$@"
