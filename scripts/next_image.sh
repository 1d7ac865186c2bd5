#!/usr/bin/env bash
# For the rolling restart's upgrade (scripts/rolling_restart.ts): builds the image `ats:next` (ATS_NEXT_IMAGE), this
# tree with one change a new version brings, a new PostgreSQL schema: a copy of the sources (node_modules linked,
# nothing here modified) whose storage schema has one more statement, `CREATE TABLE IF NOT EXISTS
# rolling_upgrade_probe (id INT)`, so its digest differs and the first new instance migrates.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
next_image="${ATS_NEXT_IMAGE:-ats:next}"
work=$(mktemp -d "${TMPDIR:-/tmp}/ats-next-XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$root" --exclude=./node_modules --exclude=./.git --exclude=./dist --exclude=./.ats -cf - . | tar -C "$work" -xf -
ln -s "$root/node_modules" "$work/node_modules"
storage="$work/adapters/postgres/postgres_schema.ts"
grep -q 'statements: MIGRATIONS })' "$storage" || { echo "next image: the storage's migrate() call is not where expected" >&2; exit 1; }
sed -i 's/statements: MIGRATIONS })/statements: [...MIGRATIONS, "CREATE TABLE IF NOT EXISTS rolling_upgrade_probe (id INT)"] })/' "$storage"
(cd "$work" && ATS_BUILD_OUTFILE="$work/ats-next" node_modules/.bin/bun scripts/build.ts >/dev/null)
ATS_BINARY="$work/ats-next" ATS_IMAGE="$next_image" bash scripts/image.sh
