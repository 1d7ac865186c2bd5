#!/usr/bin/env bash
# Builds, without any registry, the two images deploy/compose.yaml takes from a registry elsewhere: PostgreSQL and
# HAProxy, from Debian's own packages on this machine (installed with apt when missing), the way
# scripts/container_e2e.sh builds its Anvil image: the programs, the files they read and the shared libraries ldd
# names, imported as a root file system. They behave as the compose file expects of the official images:
#   - localhost/ats-postgres:<major>-debian reads POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB on its first start
#     (initdb, password authentication over TCP), keeps its cluster in /var/lib/postgresql/data and has pg_isready;
#   - localhost/ats-haproxy:<major.minor>-debian runs `haproxy -f /usr/local/etc/haproxy/haproxy.cfg` as a non-root user.
# Prints the two variables that point the compose file at them (ATS_POSTGRES_IMAGE, ATS_HAPROXY_IMAGE); with
# `--env` prints only those lines (for `eval`). An image that exists already is kept (ATS_REBUILD=1 rebuilds).
set -euo pipefail
cd "$(dirname "$0")/.."

quiet_env=false
[ "${1:-}" = --env ] && quiet_env=true
say() { $quiet_env || echo "$@" >&2; }

engine="${ATS_CONTAINER_ENGINE:-}"
if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then engine=podman
  elif command -v docker >/dev/null 2>&1; then engine=docker
  else echo "local images: neither podman nor docker is installed" >&2; exit 1
  fi
fi

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "local images: installing $*"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null) || true
  fi
}
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || apt_install postgresql
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || apt_install haproxy
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$pg_bin" ] && [ -x "$pg_bin/postgres" ] || { echo "local images: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
pg_major=$(basename "$(dirname "$pg_bin")")
haproxy_bin=$(command -v haproxy || echo /usr/sbin/haproxy)
[ -x "$haproxy_bin" ] || { echo "local images: HAProxy is not installed (apt-get install haproxy)" >&2; exit 1; }
# Whole output first: `| head` would end haproxy with SIGPIPE, which pipefail turns into a failure.
haproxy_says=$("$haproxy_bin" -v)
haproxy_version=$(grep -o -m 1 'version [0-9]*\.[0-9]*' <<<"$haproxy_says" | cut -d' ' -f2)

postgres_image="localhost/ats-postgres:${pg_major}-debian"
haproxy_image="localhost/ats-haproxy:${haproxy_version}-debian"

work=$(mktemp -d "${TMPDIR:-/tmp}/ats-local-images-XXXXXX")
trap 'rm -rf "$work"' EXIT

# Copies each file and the shared libraries it links (and theirs: ldd lists the whole closure) into a root fs.
copy_with_libraries() {
  local root=$1
  shift
  local file lib
  for file in "$@"; do
    mkdir -p "$root$(dirname "$file")"
    cp -L "$file" "$root$file"
    for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*' || true); do
      [ -e "$root$lib" ] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}

image_exists() { [ "${ATS_REBUILD:-}" != 1 ] && "$engine" image inspect "$1" >/dev/null 2>&1; }

if image_exists "$postgres_image"; then
  say "local images: $postgres_image exists"
else
  root="$work/postgres"
  pg_root=$(dirname "$pg_bin")
  mkdir -p "$root$pg_root" "$root/usr/share/postgresql" "$root/usr/share" "$root/usr/local/bin" "$root/bin" "$root/etc" \
    "$root/tmp" "$root/var/lib/postgresql/data" "$root/var/run/postgresql"
  # Without the LLVM JIT (most of the size: libLLVM); PostgreSQL runs without it when its module is absent.
  cp -a "$pg_root/bin" "$root$pg_root/"
  mkdir -p "$root$pg_root/lib"
  find "$pg_root/lib" -maxdepth 1 -type f ! -name 'llvmjit*' -exec cp -a {} "$root$pg_root/lib/" \;
  cp -a "/usr/share/postgresql/$pg_major" "$root/usr/share/postgresql/"
  cp -a /usr/share/zoneinfo "$root/usr/share/"
  # initdb starts the bootstrap backend through /bin/sh, and the entry point is a shell script.
  copy_with_libraries "$root" /bin/dash
  ln -s dash "$root/bin/sh"
  copy_with_libraries "$root" $(cd "$root" && find ".$pg_root" -type f \( -perm -u+x -o -name '*.so*' \) | sed 's/^\.//')
  printf 'root:x:0:0:root:/root:/sbin/nologin\npostgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\npostgres:x:999:\n' >"$root/etc/group"
  cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# The official image's first-start contract: POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required),
# POSTGRES_DB (default the user's name); password (scram-sha-256) authentication from any address.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${PGDATA:=/var/lib/postgresql/data}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "POSTGRES_PASSWORD is required to initialise the database" >&2
    exit 1
  fi
  printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/pwfile
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 \
    --locale=C --encoding=UTF8 >/dev/null
  : >/tmp/pwfile
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    printf 'CREATE DATABASE "%s";\n' "$POSTGRES_DB" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "initialised $PGDATA for $POSTGRES_USER, database $POSTGRES_DB"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
EOF
  chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/var/lib/postgresql/data"
  chown -R 999:999 "$root/var/lib/postgresql" "$root/var/run/postgresql"
  tar --numeric-owner -C "$root" -cf "$work/postgres.tar" .
  "$engine" import --quiet \
    --change "ENV PATH=$pg_bin:/usr/local/bin:/usr/bin:/bin" \
    --change "ENV PGDATA=/var/lib/postgresql/data" \
    --change "ENV TZ=UTC" \
    --change "USER 999" \
    --change "EXPOSE 5432" \
    --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
    "$work/postgres.tar" "$postgres_image" >/dev/null
  say "local images: built $postgres_image from Debian's PostgreSQL $pg_major"
fi

if image_exists "$haproxy_image"; then
  say "local images: $haproxy_image exists"
else
  root="$work/haproxy"
  mkdir -p "$root/usr/local/etc/haproxy" "$root/var/lib/haproxy" "$root/etc" "$root/tmp"
  copy_with_libraries "$root" "$haproxy_bin"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nhaproxy:x:99:99:haproxy:/var/lib/haproxy:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nhaproxy:x:99:\n' >"$root/etc/group"
  chmod 1777 "$root/tmp"
  chown 99:99 "$root/var/lib/haproxy"
  tar --numeric-owner -C "$root" -cf "$work/haproxy.tar" .
  "$engine" import --quiet \
    --change "ENV PATH=$(dirname "$haproxy_bin"):/usr/local/bin:/usr/bin:/bin" \
    --change "USER 99" \
    --change 'STOPSIGNAL SIGUSR1' \
    --change 'CMD ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]' \
    "$work/haproxy.tar" "$haproxy_image" >/dev/null
  say "local images: built $haproxy_image from Debian's HAProxy $haproxy_version"
fi

echo "export ATS_POSTGRES_IMAGE=$postgres_image"
echo "export ATS_HAPROXY_IMAGE=$haproxy_image"
