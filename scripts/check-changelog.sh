#!/usr/bin/env bash
# Part of `npm run lint` (and so of CI): a change to the schema migrations or to the public protos comes with a
# changelog line. The last commit that touched either must be followed (or accompanied) by a commit that touched
# CHANGELOG.md, and uncommitted changes to either need an uncommitted change to CHANGELOG.md. That every migration
# is listed by number is checked by test/unit/changelog.test.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

guarded=(proto src/schema/schema-migrations*.ts)

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "changelog check: not a git checkout; skipped"
  exit 0
fi

if ! git diff --quiet HEAD -- "${guarded[@]}" && git diff --quiet HEAD -- CHANGELOG.md; then
  echo "CHANGELOG.md: uncommitted changes to $(git diff --name-only HEAD -- "${guarded[@]}" | tr '\n' ' ')need a line under '## [Unreleased]' (Added / Changed / Fixed / Security)" >&2
  exit 1
fi

last_guarded=$(git log -1 --format=%H -- "${guarded[@]}")
last_changelog=$(git log -1 --format=%H -- CHANGELOG.md)
if [ -z "$last_guarded" ]; then exit 0; fi
if [ -z "$last_changelog" ] || ! git merge-base --is-ancestor "$last_guarded" "$last_changelog"; then
  echo "CHANGELOG.md: commit $(git log -1 --format='%h (%s)' "$last_guarded" | cut -c1-120) changed the migrations or the public protos, and no later commit adds a changelog line. Add one under '## [Unreleased]'." >&2
  exit 1
fi
echo "changelog check: the last change to the migrations or the protos ($(git log -1 --format=%h "$last_guarded")) has its changelog line"
