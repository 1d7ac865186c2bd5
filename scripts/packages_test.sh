#!/usr/bin/env bash
# The published packages as their users get them (decisions §26, issue 39): builds and packs @ats/x402-offer-receipt
# and @ats/client, installs the tarballs with the official x402 packages from the registry into a fresh Node project
# in a temporary folder, and runs packages/consumer/ there under plain `node`:
#   express_server.mjs  the extension in Express behind @x402/express, both formats, checked by @x402/extensions
#   client_calls.mjs    the client against this service on its embedded devnet (artifact trust, key status, attest)
#   consumer.ts         `tsc --strict` of a consumer against the packed declarations
#   browser_bundle.mjs  an esbuild `platform: "browser"` bundle of every client entry, without a Node module
#   elysia_fetch.mjs    the extension's ./elysia entry (withX402, the DID document route), once elysia is installed
# Needs node (20 or later), npm and the registry; run by .ci/run. Nothing is installed into this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ats-packages.XXXXXX")
SERVICE_PID=
cleanup() {
  if [ -n "$SERVICE_PID" ]; then kill "$SERVICE_PID" 2>/dev/null || true; wait "$SERVICE_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "node $(node --version), npm $(npm --version)"
# From a clean state, as `npm publish` from a fresh clone would: nothing built beforehand, so `npm pack` itself must
# build (each package's prepack) and the tarball must hold the built entries and declarations.
rm -rf packages/*/dist packages/*/LICENSE
for pkg in x402-offer-receipt client; do
  (cd "packages/$pkg" && npm pack --silent --pack-destination "$WORK" >/dev/null)
done
for tarball in "$WORK"/ats-x402-offer-receipt-*.tgz "$WORK"/ats-client-*.tgz; do
  listing=$(tar -tzf "$tarball")
  for f in package/dist/mod.js package/dist/types package/LICENSE package/README.md; do
    grep -q "^$f" <<<"$listing" || { echo "$(basename "$tarball") lacks $f: packing did not build" >&2; exit 1; }
  done
done
echo "ok - npm pack from a clean state builds both packages (dist/, declarations, LICENSE)"

# The service the client talks to: the embedded devnet, a free port, its own data folder.
PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
mkdir "$WORK/data"
PORT=$PORT HOST=127.0.0.1 DATA_DIR="$WORK/data" node_modules/.bin/bun main.ts >"$WORK/service.log" 2>&1 &
SERVICE_PID=$!

# The consumer project, meanwhile: only the tarballs come from this checkout.
mkdir "$WORK/consumer"
cp packages/consumer/* "$WORK/consumer/"
cd "$WORK/consumer"
printf '{ "name": "ats-packages-consumer", "private": true, "type": "module" }\n' >package.json
npm install --no-audit --no-fund --loglevel=error \
  "$WORK"/ats-x402-offer-receipt-*.tgz "$WORK"/ats-client-*.tgz \
  @x402/core@2.27.0 @x402/express@2.27.0 @x402/extensions@2.27.0 express@5.2.1 viem@2.57.20 \
  typescript@5.9.3 esbuild@0.28.2 @types/node@20.19.43
test ! -e node_modules/elysia || { echo "elysia was installed: the extension's main entry must not need it" >&2; exit 1; }

node express_server.mjs
# CommonJS consumers too: every entry but ./elysia (its peer is not installed yet) through require(), Node's require of
# an ES module (each export's "default" condition; "import" alone left require with no entry).
node -e 'for (const entry of ["@ats/client", "@ats/client/x402", "@ats/client/reviews", "@ats/client/verifier", "@ats/client/jws",
  "@ats/x402-offer-receipt", "@ats/x402-offer-receipt/testing"]) { if (Object.keys(require(entry)).length === 0) throw new Error(entry + " exports nothing") }'
echo "ok - every entry but ./elysia loads with require()"
# On lines of their own: a failing command on the left of `&&` does not stop a `set -e` script.
node_modules/.bin/tsc -p tsconfig.json
echo "ok - tsc --strict type-checks a consumer of both packages"
node browser_bundle.mjs
# Only now Elysia, for the extension's ./elysia entry (the checks above ran without it).
npm install --no-audit --no-fund --loglevel=error elysia@1.4.30
node elysia_fetch.mjs

# Ready once it answers; bounded only by this overall limit (a start on a loaded 2-core machine takes a few seconds).
for _ in $(seq 1 600); do
  if ! kill -0 "$SERVICE_PID" 2>/dev/null; then cat "$WORK/service.log" >&2; echo "the service exited" >&2; exit 1; fi
  if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "http://127.0.0.1:$PORT/v1/trust-anchors"; then break; fi
  sleep 0.5
done
ATS_URL="http://127.0.0.1:$PORT" node client_calls.mjs
echo "packages: all consumer checks passed"
