# Sourced by scripts/image_test.sh and scripts/compose_test.sh: makes sure podman can run containers here, with
# Podman's settings from a private CONTAINERS_CONF (as scripts/container_e2e.sh does), so the machine's own
# configuration is left alone. Needs $work (a temporary folder of the caller). Calls `skip` (the caller's) when no
# container can run.
if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing podman and runc" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null) ||
      skip "podman could not be installed"
  fi
fi
command -v podman >/dev/null 2>&1 || skip "podman is not installed and cannot be installed here (needs root and apt-get)"
# No cgroup manager and no systemd (so no timers: health checks run only when asked), runc (crun refuses this
# sandbox's hybrid cgroups); networks as Podman makes them (bridges with DNS), unlike container_e2e's host network.
cat >"$work/containers.conf" <<CONF
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
$(command -v runc >/dev/null 2>&1 && echo 'runtime = "runc"')
CONF
export CONTAINERS_CONF="$work/containers.conf"
export ATS_CONTAINER_ENGINE=podman

# A TCP port free on loopback now.
free_port() { node_modules/.bin/bun -e 'const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }); console.log(s.port); s.stop(true)'; }
