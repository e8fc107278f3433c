#!/usr/bin/env bash
# Builds the ZooKeeper test image (default tag zkwire/zookeeper:3.8) without any container registry:
#
#   1. mmdebstrap makes a minimal Debian bookworm root file system holding ZooKeeper 3.8 (Debian's
#      libzookeeper-java, the jars of the `zookeeper` package) and a headless JRE, from Debian's mirror;
#   2. `docker import` turns it into the base image zkwire/zookeeper-base:3.8-<recipe hash>;
#   3. a one-layer Dockerfile adds the entrypoint (entrypoint.sh: the official image's variables).
#
# An image whose label org.zkwire.recipe matches this recipe (this script, the Dockerfile and the
# entrypoint) is reused, so running it again costs a second. Needs a running Docker engine and, for
# step 1, mmdebstrap (apt-get install mmdebstrap) and root or unprivileged user namespaces.
#
# Usage: build.sh [--tag NAME] [--also-tag NAME]... [--mirror URL] [--force] [--quiet]
#   --also-tag zookeeper:3.8  also tags the result with the official image's name (a test setup that
#                             asks for zookeeper:3.8 then runs without Docker Hub).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tag=zkwire/zookeeper:3.8
also_tags=()
mirror=${ZKWIRE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
force=0
quiet=0
while [ "$#" -gt 0 ]; do
    case "$1" in
        --tag) tag=$2; shift 2 ;;
        --also-tag) also_tags+=("$2"); shift 2 ;;
        --mirror) mirror=$2; shift 2 ;;
        --force) force=1; shift ;;
        --quiet) quiet=1; shift ;;
        -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

say() {
    if [ "$quiet" -eq 0 ]; then echo "build-image: $*"; fi
}

command -v docker >/dev/null 2>&1 || { echo "build-image: no docker command" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "build-image: the Docker engine does not answer (docker info)" >&2; exit 1; }

# What goes into the base image. The `zookeeper` package itself only adds Debian's start scripts and
# depends on the full default-jre (GTK, Mesa, LLVM: about 300 MB more); the image needs neither.
packages=libzookeeper-java,default-jre-headless
suite=bookworm
base_recipe="variant=essential suite=$suite packages=$packages uid=1000 v1"
base_hash=$(printf '%s' "$base_recipe" | sha256sum | cut -c1-12)
base_tag=zkwire/zookeeper-base:3.8-$base_hash
recipe=$(cat "${BASH_SOURCE[0]}" "$here/Dockerfile" "$here/entrypoint.sh" | sha256sum | cut -c1-16)

label_of() {
    docker image inspect --format '{{ index .Config.Labels "org.zkwire.recipe" }}' "$1" 2>/dev/null || true
}

tag_extra() {
    for extra in "${also_tags[@]}"; do
        docker tag "$tag" "$extra"
        say "tagged $extra"
    done
}

if [ "$force" -eq 0 ] && [ "$(label_of "$tag")" = "$recipe" ]; then
    say "reusing $tag (recipe $recipe)"
    tag_extra
    exit 0
fi

if [ "$force" -eq 1 ] || ! docker image inspect "$base_tag" >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null 2>&1 ||
        { echo "build-image: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 1; }
    work=$(mktemp -d "${TMPDIR:-/tmp}/zkwire-image.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    say "mmdebstrap $suite ($packages) from $mirror"
    started=$SECONDS
    # Documentation and translations are left out. The JRE's maintainer scripts register man pages
    # as alternatives' slaves, so the man1 directory must exist even though its content is dropped.
    mmdebstrap --variant=essential --include="$packages" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --aptopt='Acquire::Retries "3"' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --setup-hook='mkdir -p "$1/usr/share/man/man1"' \
        --customize-hook='echo "zookeeper:x:1000:1000:ZooKeeper:/data:/usr/sbin/nologin" >>"$1/etc/passwd"' \
        --customize-hook='echo "zookeeper:x:1000:" >>"$1/etc/group"' \
        --customize-hook='mkdir -p "$1/data" "$1/datalog" "$1/conf" && chown 1000:1000 "$1/data" "$1/datalog" "$1/conf"' \
        --customize-hook='rm -rf "$1/var/cache/apt" "$1/var/lib/apt/lists" "$1/var/log"/*' \
        ${ZKWIRE_MMDEBSTRAP_QUIET:+--quiet} \
        "$suite" "$work/root.tar" "deb $mirror $suite main" >"$work/mmdebstrap.log" 2>&1 ||
        { tail -n 30 "$work/mmdebstrap.log" >&2; echo "build-image: mmdebstrap failed" >&2; exit 1; }
    say "root file system: $(du -h "$work/root.tar" | cut -f1) in $((SECONDS - started)) s; docker import"
    docker import --message "zkwire: $base_recipe" "$work/root.tar" "$base_tag" >/dev/null
    rm -f "$work/root.tar"
fi

say "building $tag from $base_tag"
# The classic builder: a COPY layer needs no BuildKit (and Debian's engine may come without buildx).
build_log=$(mktemp "${TMPDIR:-/tmp}/zkwire-image-build.XXXXXX")
if ! DOCKER_BUILDKIT=0 docker build --quiet --build-arg "BASE=$base_tag" --label "org.zkwire.recipe=$recipe" \
    -t "$tag" "$here" >"$build_log" 2>&1; then
    cat "$build_log" >&2
    rm -f "$build_log"
    echo "build-image: docker build failed" >&2
    exit 1
fi
rm -f "$build_log"
tag_extra

# Base images of other recipes are no longer needed.
docker image ls --format '{{.Repository}}:{{.Tag}}' zkwire/zookeeper-base | grep -vx "$base_tag" |
    xargs -r docker image rm >/dev/null 2>&1 || true
say "built $tag (recipe $recipe)"
