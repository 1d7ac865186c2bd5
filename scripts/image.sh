#!/usr/bin/env bash
# `npm run image`: the OCI image `ats:<version>` (decisions §28), built with podman or docker (whichever is installed;
# ATS_CONTAINER_ENGINE chooses) with no registry reachable. It is `FROM scratch` plus only what the single binary
# (`npm run build`, dist/ats) needs: the shared libraries ldd names for it and for the Anvil it embeds (the devnet),
# libsecp256k1, the CA roots, /etc/passwd and /etc/group with `nonroot` (65532), and /data, a volume owned by that
# user. It runs as 65532, works with a read-only root filesystem, and `ats healthcheck` is its HEALTHCHECK.
# The image may be at most 1.3 times the binary's size: both are printed and a larger image fails the build.
#
# Environment: ATS_IMAGE (default ats:<package.json version>, then also tagged ats:latest), ATS_BINARY (an already
# built binary; default: build dist/ats now), ATS_IMAGE_SOURCE (the org.opencontainers.image.source label;
# default the git remote `origin`, its user name and password taken out).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(node_modules/.bin/bun -e 'console.log(require("./package.json").version)')
image="${ATS_IMAGE:-ats:$version}"
engine="${ATS_CONTAINER_ENGINE:-}"
if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then engine=podman
  elif command -v docker >/dev/null 2>&1; then engine=docker
  else
    echo "image: neither podman nor docker is installed (Debian: apt-get install podman)" >&2
    exit 1
  fi
fi

binary="${ATS_BINARY:-}"
if [ -z "$binary" ]; then
  node_modules/.bin/bun run build
  binary=dist/ats
fi
[ -x "$binary" ] || { echo "image: $binary is not an executable" >&2; exit 1; }

# libsecp256k1 makes signing and recovery native (the service falls back to JavaScript without it).
find_secp256k1() { ldconfig -p 2>/dev/null | grep -o '/[^ ]*/libsecp256k1\.so\.[0-9]*$' | head -n 1 || true; }
secp=$(find_secp256k1)
if [ -z "$secp" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "image: installing libsecp256k1" >&2
  (apt-get update -qq && { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsecp256k1-2 >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsecp256k1-1 >/dev/null; }) || true
  secp=$(find_secp256k1)
fi
[ -n "$secp" ] || { echo "image: libsecp256k1 is not installed (apt-get install libsecp256k1-1 or -2)" >&2; exit 1; }
cacerts=/etc/ssl/certs/ca-certificates.crt
[ -f "$cacerts" ] || { echo "image: no CA roots at $cacerts (apt-get install ca-certificates)" >&2; exit 1; }
anvil=$(node_modules/.bin/bun -e 'import { anvilBinary } from "./adapters/devnet/mod.ts"; console.log(anvilBinary())')

work=$(mktemp -d "${TMPDIR:-/tmp}/ats-image-XXXXXX")
trap 'rm -rf "$work"' EXIT
ctx="$work/context"
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$ctx/data"

cp "$binary" "$root/usr/local/bin/ats"
chmod 0755 "$root/usr/local/bin/ats"
# The libraries the binary and the embedded Anvil link, at the paths the loader looks them up (Debian's multiarch
# directories are built into its loader, so no ld.so.cache is needed), and libsecp256k1 beside them.
for lib in $(ldd "$binary" "$anvil" "$secp" | grep "^[[:space:]]" | grep -o '/[^ ]*' | sort -u) "$secp"; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp "$cacerts" "$root/etc/ssl/certs/ca-certificates.crt"
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:65532:65532:nonroot:/data:/sbin/nologin
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nonroot:x:65532:
EOF

. scripts/_image_labels.sh
revision=$(image_revision)
source_url=$(image_source)
license=$(node_modules/.bin/bun -e 'console.log(require("./package.json").license)')
cat >"$ctx/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 data/ /data/
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 CMD ["/usr/local/bin/ats", "healthcheck"]
LABEL org.opencontainers.image.title="ats" \\
      org.opencontainers.image.description="Attestation Trust Services: an HTTP JSON service around the Ethereum Attestation Service" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$revision" \\
      org.opencontainers.image.source="$source_url" \\
      org.opencontainers.image.licenses="$license"
ENTRYPOINT ["/usr/local/bin/ats"]
EOF

# HEALTHCHECK is a Docker-format field; podman keeps it only in that format. FROM scratch pulls nothing.
format=()
[ "$engine" = podman ] && format=(--format docker --pull=never)
# The default name is also tagged ats:latest (what deploy/compose.yaml runs); a name given in ATS_IMAGE only itself.
tags=(-t "$image")
[ -z "${ATS_IMAGE:-}" ] && tags+=(-t ats:latest)
# The image the name pointed at before, removed below once nothing names it: every build of a changed tree would
# otherwise leave one untagged image of ~160 MB behind (1.7 GB on one machine after a day of CI runs).
previous=$("$engine" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
"$engine" build --quiet "${format[@]}" "${tags[@]}" -f "$ctx/Containerfile" "$ctx" >/dev/null
if [ -n "$previous" ] && [ "$previous" != "$("$engine" image inspect --format '{{.Id}}' "$image")" ]; then
  # Without --force: an image still tagged by another name or used by a container stays.
  "$engine" rmi "$previous" >/dev/null 2>&1 || true
fi

binary_bytes=$(stat -c %s "$binary")
image_bytes=$("$engine" image inspect --format '{{.Size}}' "$image")
ratio=$(awk -v i="$image_bytes" -v b="$binary_bytes" 'BEGIN { printf "%.3f", i / b }')
echo "image: $image: $((image_bytes / 1024 / 1024)) MiB; binary $binary: $((binary_bytes / 1024 / 1024)) MiB; ratio $ratio (at most 1.3)"
if awk -v r="$ratio" 'BEGIN { exit !(r > 1.3) }'; then
  echo "image: FAILED: the image is more than 1.3 times the binary's size" >&2
  exit 1
fi
