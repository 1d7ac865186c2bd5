#!/usr/bin/env bash
# Runs the e2e suite with Anvil in a container (ANVIL_RUNTIME=container) through Podman's Docker-compatible API.
# No image registry is reachable here, so the image is made offline: the npm package's anvil binary and the shared
# libraries it links, imported as a root file system. Podman's settings come from a private CONTAINERS_CONF, so the
# machine's own configuration is left alone.
#
# Where Podman cannot be installed or cannot run a container, this prints why and exits 0 (the default e2e run
# already covered the code with a local Anvil); once a container runs, any failing test fails the script.
# Extra arguments go to `bun test` (default: every file under e2e/).
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "container e2e skipped: $*" >&2
  exit 0
}

# runc too: its settings below name it (crun refuses this sandbox's cgroups), and a machine may have podman without it.
if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing podman and runc for the container e2e run" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null) ||
      skip "podman could not be installed"
  else
    skip "podman is not installed and cannot be installed here (needs root and apt-get)"
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ats-podman-XXXXXX")
service_pid=""
cleanup() {
  [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Host networking and no cgroup manager: what works in this sandbox without systemd.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []
netns = "host"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
EOF
export CONTAINERS_CONF="$work/containers.conf"

anvil=$(node_modules/.bin/bun -e 'import { anvilBinary } from "./adapters/devnet/mod.ts"; console.log(anvilBinary())')
image="localhost/ats-anvil:$(sha256sum "$anvil" | cut -c1-16)"
if ! podman image exists "$image"; then
  rootfs="$work/rootfs"
  mkdir -p "$rootfs/usr/local/bin"
  cp "$anvil" "$rootfs/usr/local/bin/anvil"
  for lib in $(ldd "$anvil" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
  tar -C "$rootfs" -cf "$work/rootfs.tar" .
  podman import --quiet --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' "$work/rootfs.tar" "$image" >/dev/null ||
    skip "podman could not import the anvil image"
fi
podman run --rm "$image" anvil --version >/dev/null 2>"$work/run.err" ||
  skip "podman cannot run a container here: $(tail -n 3 "$work/run.err")"

socket="$work/podman.sock"
podman system service --time=0 "unix://$socket" >"$work/service.log" 2>&1 &
service_pid=$!
for _ in $(seq 1 50); do
  [ -S "$socket" ] && break
  sleep 0.1
done
[ -S "$socket" ] || skip "the podman API socket did not appear: $(tail -n 3 "$work/service.log")"

echo "container e2e: Anvil from $image through $socket" >&2
[ "$#" -gt 0 ] || set -- e2e/
# Published ports are reached on loopback. Inside a container (/.dockerenv) testcontainers would use the podman
# network's gateway instead (10.88.0.1), an address Podman removes with the bridge when its last container stops:
# a stopped Anvil's URL then routes out of the machine and connections hang until the network gives up (7 s here)
# where a stopped local Anvil refuses at once, and the chain-down tests time out. On loopback it refuses at once.
DOCKER_HOST="unix://$socket" TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 TESTCONTAINERS_RYUK_DISABLED=true \
  ANVIL_RUNTIME=container ANVIL_IMAGE="$image" \
  timeout --kill-after=10 900 node_modules/.bin/bun test --timeout 60000 "$@"
