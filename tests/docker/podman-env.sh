#!/usr/bin/env bash
# tests/docker/podman-env.sh: make this machine able to build and run the
# Dockerfile with podman, then print the environment to use it with:
#
#   eval "$(bash tests/docker/podman-env.sh)"
#
# Why each step (these machines have no Docker engine and no Docker Hub):
#   - podman, buildah, runc and debootstrap come from Debian;
#   - `FROM debian:bookworm-slim` cannot be pulled, so a minimal bookworm
#     root made with debootstrap from apt's own mirror is imported under that
#     name once, and the build finds it locally;
#   - containers run with runc and ulimits inside the host's hard limits;
#   - images are built in Docker's format, which keeps HEALTHCHECK (the OCI
#     format drops it).
# Safe to run again: what exists is reused. Progress goes to stderr; only
# the export line goes to stdout.
set -euo pipefail

log() { echo "podman-env: $*" >&2; }

missing=()
for pkg in podman buildah runc debootstrap; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

confdir=${CELLGATE_PODMAN_DIR:-/tmp/cellgate-podman}
mkdir -p "$confdir"
printf '%s\n' '[containers]' \
    'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]' \
    '[engine]' 'runtime = "runc"' >"$confdir/containers.conf"
export CONTAINERS_CONF="$confdir/containers.conf" BUILDAH_FORMAT=docker

apt_mirror() {
    local m
    m=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
    [ -n "$m" ] || m=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    echo "${m%% *}"
}

base=docker.io/library/debian:bookworm-slim
if ! podman image exists "$base"; then
    mirror=$(apt_mirror)
    [ -n "$mirror" ] || { log "no Debian mirror found in apt's sources"; exit 1; }
    rootfs=$(mktemp -d /tmp/cellgate-rootfs.XXXXXX)
    trap 'rm -rf "$rootfs"' EXIT
    log "making a bookworm base image from $mirror (a minute or so)"
    if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$confdir/debootstrap.log" 2>&1; then
        log "debootstrap failed: $confdir/debootstrap.log"
        exit 1
    fi
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
fi

echo "export CONTAINERS_CONF=$CONTAINERS_CONF BUILDAH_FORMAT=docker"
