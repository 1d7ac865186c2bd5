#!/usr/bin/env bash
# CI for the container image (decisions §28): builds it (`npm run image`: FROM scratch, at most 1.3x the binary),
# runs the binary's smoke test against a container of it (read-only root, user 65532, all capabilities dropped;
# SIGTERM to PID 1 exits 0), checks that a wrong setting stops the container at start with one line naming it and
# that its HEALTHCHECK then fails, and brings up deploy/compose.yaml's devnet profile (scripts/compose_test.sh).
# Installs Debian's podman when missing, as scripts/container_e2e.sh does; where no container can run it prints
# why and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "image test skipped: $*" >&2
  exit 0
}
work=$(mktemp -d "${TMPDIR:-/tmp}/ats-image-test-XXXXXX")
bad=""
cleanup() {
  [ -n "$bad" ] && podman rm -f -v "$bad" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=scripts/_podman.sh
. scripts/_podman.sh

started=$SECONDS
bash scripts/image.sh
image=ats:latest
podman run --rm --entrypoint /usr/local/bin/ats "$image" healthcheck http://127.0.0.1:1/ >/dev/null 2>"$work/run.err" ||
  grep -q "did not answer" "$work/run.err" ||
  skip "podman cannot run a container here: $(tail -n 3 "$work/run.err")"

echo "image test: the binary's smoke test against the container" >&2
timeout --kill-after=10 300 node_modules/.bin/bun scripts/smoke_binary.ts --image "$image"

echo "image test: wrong settings stop the container at start, with one line naming them" >&2
expect_refused() {
  local expected=$1
  shift
  bad="ats-image-test-bad-$$"
  local code=0
  podman run --name "$bad" --read-only "$@" "$image" >"$work/bad.out" 2>"$work/bad.err" || code=$?
  local lines
  lines=$(cat "$work/bad.out" "$work/bad.err" | grep -v '^time=' | grep -c . || true)
  if [ "$code" != 1 ] || [ "$lines" != 1 ] || ! grep -qxF "$expected" "$work/bad.err"; then
    echo "image test: FAILED: expected exit 1 and the one line '$expected'; got exit $code and:" >&2
    cat "$work/bad.out" "$work/bad.err" >&2
    exit 1
  fi
  # The orchestrator's view: the stopped container is not running, and its health check fails.
  [ "$(podman inspect --format '{{.State.Running}}' "$bad")" = false ] || { echo "image test: FAILED: $bad still runs" >&2; exit 1; }
  if podman healthcheck run "$bad" >/dev/null 2>&1; then
    echo "image test: FAILED: the health check of the stopped container passed" >&2
    exit 1
  fi
  podman rm -f -v "$bad" >/dev/null
  bad=""
  echo "image test: refused: $expected" >&2
}
expect_refused "ats: DATABASE_URL: required when STORAGE is postgres" -e STORAGE=postgres
expect_refused "ats: TRUST_ANCHORS_PATH: required when RPC_URL is set" -e RPC_URL=https://rpc.example -e STORAGE=postgres \
  -e DATABASE_URL=postgres://ats@db/ats
expect_refused "ats: RPC_URL: expected an http(s) URL" -e RPC_URL=rpc.example

ATS_IMAGE="$image" bash scripts/compose_test.sh
echo "image test: ok ($((SECONDS - started)) s)" >&2
