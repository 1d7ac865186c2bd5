#!/usr/bin/env bash
# Compiles SchemaRegistry and EAS from the npm sources into out/ (forge's layout), offline, with the npm
# solc through scripts/solc_wrapper.sh. Idempotent: forge's cache skips the work when nothing changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

forge="node_modules/@foundry-rs/forge-linux-amd64/bin/forge"
if [ ! -x "$forge" ]; then
  # Another platform: the npm wrapper finds its own platform binary (slower to start, same result).
  forge="node_modules/.bin/forge"
fi

chmod +x scripts/solc_wrapper.sh
"$forge" build --offline
test -s out/EAS.sol/EAS.json && test -s out/SchemaRegistry.sol/SchemaRegistry.json
