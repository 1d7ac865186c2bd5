#!/usr/bin/env bash
# Builds the single executable and smoke-tests it from an empty directory (see scripts/smoke_binary.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
node_modules/.bin/bun run build
# The driver has its own per-step timeouts and kills the binary on failure; this bounds everything else.
exec timeout --kill-after=10 300 node_modules/.bin/bun scripts/smoke_binary.ts dist/ats
