#!/usr/bin/env bash
# Prints the command line of a podman-compose that reads deploy/compose.yaml with its profiles (1.0.6 or later).
# Debian 12's package is 1.0.3, which has no --profile: then Debian 13's package (architecture all: one Python file
# that runs on Debian 12's python3, python3-yaml and python3-dotenv) is fetched with apt's own client into
# node_modules/.cache/ats-podman-compose, leaving the machine's apt sources and packages as they are.
set -euo pipefail
cd "$(dirname "$0")/.."

supports_profiles() { "$@" --help 2>/dev/null | grep -q -- '--profile'; }

if ! command -v podman-compose >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "podman-compose: installing Debian's package" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman-compose python3-yaml python3-dotenv >/dev/null) || true
fi
if command -v podman-compose >/dev/null 2>&1 && supports_profiles podman-compose; then
  echo podman-compose
  exit 0
fi

cache="$PWD/node_modules/.cache/ats-podman-compose"
script=$(find "$cache" -name podman_compose.py 2>/dev/null | head -n 1 || true)
if [ -z "$script" ]; then
  echo "podman-compose: the installed one has no --profile; fetching Debian 13's package" >&2
  apt_dir="$cache/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  # The same Debian mirror the machine's apt already uses, only another suite.
  mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || { echo "podman-compose: no Debian mirror in the machine's apt sources" >&2; exit 1; }
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$apt_dir/sources.list"
  opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root -qq)
  apt-get "${opts[@]}" update >&2
  (cd "$cache" && apt-get "${opts[@]}" download podman-compose >&2)
  dpkg-deb -x "$(ls "$cache"/podman-compose_*_all.deb | head -n 1)" "$cache/root"
  rm -rf "$apt_dir"
  script=$(find "$cache/root" -name podman_compose.py | head -n 1)
fi
[ -n "$script" ] || { echo "podman-compose: no version with --profile could be installed" >&2; exit 1; }
supports_profiles /usr/bin/python3 "$script" || { echo "podman-compose: $script does not run here" >&2; exit 1; }
echo "/usr/bin/python3 $script"
