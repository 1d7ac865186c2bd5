#!/usr/bin/env bash
# Lets forge use the npm solc (solcjs 0.8.29) as if it were a native solc, since forge cannot download one
# here. Forge only calls `--version` and `--standard-json` (JSON on stdin); solcjs differs from native solc
# in the ways handled below.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
solcjs="$root/node_modules/solc/solc.js"

passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      # forge parses the native two-line format; solcjs prints a bare version with an Emscripten suffix.
      printf 'solc, the solidity compiler commandline interface\nVersion: 0.8.29+commit.ab55807c.Linux.g++\n'
      exit 0
      ;;
    --allow-paths)
      # solcjs has no --allow-paths; forge sends every source's content in the JSON anyway.
      shift 2
      ;;
    --allow-paths=*)
      shift
      ;;
    --base-path | --include-path)
      passed+=("$1" "$2")
      shift 2
      ;;
    --standard-json)
      shift
      ;;
    *)
      # Anything else native solc accepts but solcjs may not: drop it (standard JSON carries the settings).
      shift
      ;;
  esac
done

# solcjs reads stdin synchronously and fails with EAGAIN on the non-blocking pipe forge gives it,
# so hand it a regular file instead.
input="$(mktemp "${TMPDIR:-/tmp}/solc-input.XXXXXX")"
output="$(mktemp "${TMPDIR:-/tmp}/solc-output.XXXXXX")"
trap 'rm -f "$input" "$output"' EXIT
cat > "$input"

# Node exits before flushing a large write to a pipe (the JSON would be cut at 64 KiB), so solcjs
# writes to a regular file as well.
node "$solcjs" --standard-json "${passed[@]}" < "$input" > "$output"

# solcjs may print a `>>>` warning line (no SMT solver) before the JSON; forge needs pure JSON.
sed '1{/^>>>/d}' "$output"
