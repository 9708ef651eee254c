#!/usr/bin/env bash
# `npm run image`: builds localhost/topwagers:latest with podman from prebuilt files.
#
#  1. compiles (dist/) and stages the build context in .image/: dist/src and dist/gen,
#     package.json, docs/openapi.yaml, production dependencies (`npm install --omit=dev`,
#     reused while package-lock.json is unchanged) and the pinned Node binary;
#  2. makes the base image localhost/debian-base:bookworm with debootstrap when it is missing
#     (no registry is reachable here); set IMAGE_BASE to build on another base instead,
#     e.g. IMAGE_BASE=docker.io/library/debian:bookworm-slim where a registry is reachable;
#  3. podman build with runc (containers/containers.conf through CONTAINERS_CONF).
# IMAGE_TAG overrides the tag (default localhost/topwagers:latest); IMAGE_NO_COMPILE=1 uses dist/ as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CONTAINERS_CONF="$root/containers/containers.conf"
tag=${IMAGE_TAG:-localhost/topwagers:latest}
default_base=localhost/debian-base:bookworm
base=${IMAGE_BASE:-$default_base}

for tool in podman runc; do
  command -v "$tool" >/dev/null || { echo "npm run image needs $tool (apt-get install -y podman runc debootstrap)" >&2; exit 1; }
done

if [ "${IMAGE_NO_COMPILE:-}" != "1" ]; then # the container test has just compiled
  echo "==> compile"
  npm run -s build
fi

echo "==> stage the build context in .image/"
stage=$root/.image
mkdir -p "$stage/app/dist" "$stage/app/docs" "$stage/deps"
rm -rf "$stage/app/dist/src" "$stage/app/dist/gen"
cp -R dist/src dist/gen "$stage/app/dist/" # dist/src/build-info.json included: the commit
chmod 0755 "$stage/app/dist/src/cli/main.js" # run by its shebang, as npm's bin link runs it
cp docs/openapi.yaml "$stage/app/docs/"
# The `topwagers` command on PATH inside the image (its entrypoint), as `npm install` would link it.
rm -rf "$stage/bin"
mkdir -p "$stage/bin"
ln -s /app/dist/src/cli/main.js "$stage/bin/topwagers"
cp package.json "$stage/app/"
lock_hash=$(sha256sum package-lock.json package.json | sha256sum | cut -c1-16)
if [ "$(cat "$stage/deps/.lock-hash" 2>/dev/null)" != "$lock_hash" ]; then
  echo "production dependencies (npm install --omit=dev)"
  rm -rf "$stage/deps"
  mkdir -p "$stage/deps"
  cp package.json package-lock.json "$stage/deps/"
  (cd "$stage/deps" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock_hash" >"$stage/deps/.lock-hash"
fi
rm -rf "$stage/app/node_modules"
cp -R "$stage/deps/node_modules" "$stage/app/node_modules"
cp "$(readlink -f node_modules/node/bin/node)" "$stage/node"
echo "production node_modules: $(du -sh "$stage/app/node_modules" | cut -f1); node binary: $(du -sh "$stage/node" | cut -f1)"

if ! podman image exists "$base"; then
  if [ "$base" != "$default_base" ]; then
    echo "base image $base is missing; pull it first (podman pull $base)" >&2
    exit 1
  fi
  command -v debootstrap >/dev/null || { echo "making the base image needs debootstrap" >&2; exit 1; }
  echo "==> base image $base (debootstrap --variant=minbase bookworm, once)"
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase bookworm "$rootfs" >/dev/null
  tar -C "$rootfs" --exclude=./var/cache/apt/archives --exclude=./var/lib/apt/lists -c . |
    podman import --quiet - "$base" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

echo "==> podman build $tag (base $base)"
version=$(node -p 'require("./package.json").version')
revision=$(node -p 'require("./dist/src/build-info.json").commit')
podman build --network=host --build-arg "BASE=$base" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  -t "$tag" -f Containerfile "$stage"
echo "built $tag: $(podman image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')"
