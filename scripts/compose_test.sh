#!/usr/bin/env bash
# deploy/compose.yaml for real (decisions §28): the image (npm run image, unless ATS_IMAGE names one already built),
# PostgreSQL and HAProxy images built here from Debian's packages (scripts/local_images.sh), then
# `podman-compose --profile devnet up -d` (a podman-compose that reads profiles: scripts/podman_compose.sh) on a free
# loopback port, and through the balancer: /readyz, a read, a delegated attestation and the write read back
# (scripts/compose_check.ts); then the rolling restart (scripts/rolling_restart.ts; ATS_ROLLING_RESTART=0 leaves it
# out). Everything it started is removed at the end (`down -v`), also on failure.
# Where podman cannot run a container it prints why and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "compose test skipped: $*" >&2
  exit 0
}
work=$(mktemp -d "${TMPDIR:-/tmp}/ats-compose-XXXXXX")
project="ats-test-$$"
compose=()
cleanup() {
  if [ "${#compose[@]}" -gt 0 ]; then
    (cd deploy && timeout 120 "${compose[@]}" -p "$project" --profile devnet down -v >/dev/null 2>&1) || true
    # Whatever `down` leaves (a container the rolling restart was replacing when it failed, volumes).
    for leftover in $(podman ps -a -q --filter "label=io.podman.compose.project=$project"); do
      podman rm -f -v "$leftover" >/dev/null 2>&1 || true
    done
    for volume in $(podman volume ls -q --filter "label=io.podman.compose.project=$project"); do
      podman volume rm -f "$volume" >/dev/null 2>&1 || true
    done
  fi
  [ -n "${next_built:-}" ] && podman rmi ats:next >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=scripts/_podman.sh
. scripts/_podman.sh

if [ -z "${ATS_IMAGE:-}" ]; then
  bash scripts/image.sh
  export ATS_IMAGE=ats:latest
fi
eval "$(bash scripts/local_images.sh --env)"
read -r -a compose <<<"$(bash scripts/podman_compose.sh)"
port=$(free_port)
export ATS_HTTP_BIND="127.0.0.1:$port"
export ATS_HTTPS_BIND="127.0.0.1:$(free_port)"

# For the test: the devnet's JSON-RPC and the balancer's statistics on loopback too (scripts/rolling_restart.ts).
rpc_port=$(free_port)
stats_port=$(free_port)
cat >"$work/test_ports.yaml" <<YAML
services:
  devnet:
    ports:
      - "127.0.0.1:$rpc_port:8545"
  balancer:
    ports:
      - "127.0.0.1:$stats_port:8404"
YAML
# All requests come from the balancer's one address and the writers reuse two attesters: the public relay's limits
# per address and per attester, meant for the public, are lifted for the test's load, and so is the nonce read's rate
# per address (each write reads its nonce first: on a fast machine the writers passed its 120 a minute, and the 429s
# were counted as failed writes).
for instance in ats1 ats2 ats3; do
  cat >>"$work/test_ports.yaml" <<YAML
  $instance:
    environment:
      PUBLIC_RELAY_IP_RATE_PER_MINUTE: "1000000"
      PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "1000000"
      PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "1000000000000"
      PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR: "1000000000000"
      PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR: "1000000000000"
      NONCE_RATE_PER_MINUTE: "1000000"
YAML
done
files=(-f compose.yaml -f "$work/test_ports.yaml")
if ! grep -q 'keystore:' dist/ats 2>/dev/null; then
  # A binary from before the signers of decisions §27 (no DELEGATE_SIGNER=keystore:…): the devnet's delegate key as
  # a raw variable instead.
  printf 'services:\n' >"$work/raw_key.yaml"
  for instance in ats1 ats2 ats3; do
    printf '  %s:\n    environment:\n      DELEGATE_PRIVATE_KEY: "%s"\n' "$instance" \
      0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d >>"$work/raw_key.yaml"
  done
  files+=(-f "$work/raw_key.yaml")
fi

echo "compose test: ${compose[*]} -p $project --profile devnet up -d (balancer on $ATS_HTTP_BIND)" >&2
(cd deploy && timeout 300 "${compose[@]}" "${files[@]}" -p "$project" --profile devnet up -d >"$work/up.log" 2>&1) || {
  tail -n 30 "$work/up.log" >&2
  echo "compose test: FAILED: up did not complete" >&2
  exit 1
}
url="http://127.0.0.1:$port"
ready=""
for _ in $(seq 1 180); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$url/readyz" || true)" = 200 ]; then ready=yes; break; fi
  sleep 1
done
if [ -z "$ready" ]; then
  for service in devnet ats1 ats2 ats3 balancer; do
    echo "--- $service" >&2
    podman logs --tail 10 "${project}_${service}_1" >&2 2>&1 || true
  done
  echo "compose test: FAILED: $url/readyz did not answer 200 within 180 s" >&2
  exit 1
fi
timeout 120 node_modules/.bin/bun scripts/compose_check.ts "$url"
[ "${ATS_ROLLING_RESTART:-1}" = 0 ] && exit 0
# The upgrade: a new version whose PostgreSQL schema differs (scripts/next_image.sh).
next_built=yes
bash scripts/next_image.sh
echo "compose test: the rolling restart to ats:next (scripts/rolling_restart.ts)" >&2
ROLLING_NEXT_IMAGE=ats:next ROLLING_PROJECT="$project" ROLLING_STATS_URL="http://127.0.0.1:$stats_port/stats;csv" \
  ROLLING_RPC_URL="http://127.0.0.1:$rpc_port" timeout --kill-after=10 900 node_modules/.bin/bun scripts/rolling_restart.ts "$url" || {
  for service in postgres ats1 ats2 ats3 balancer; do
    echo "--- $service (the last lines of its log)" >&2
    podman logs --tail 15 "${project}_${service}_1" 2>&1 | cut -c1-400 >&2 || true
  done
  exit 1
}
