#!/usr/bin/env bash
# build-image.sh — build the sbx image with no base to pull: a directory
# rootfs of static binaries (integration/container/lib.sh: busybox-static
# and users root, user (1000), nobody), sbx at /usr/local/bin/sbx, imported
# into podman's local storage with `podman import` (no registry, no
# Containerfile, no buildah).
#
# usage: deploy/kubernetes/build-image.sh TAG [BINARY...]
#   TAG      the image name, e.g. localhost/sbx:kube
#   BINARY   more static binaries for /usr/local/bin (the test adds its
#            client, integration/kube/client, as sbx-kube-client)
# Environment (all optional):
#   SBX_IMAGE_TAR       write the rootfs tar there (kept), to import again
#   SBX_IMAGE_FROM_TAR  build nothing: import this tar (made by an earlier
#                       run with SBX_IMAGE_TAR), e.g. into a rootless user's
#                       storage
#   SBX_IMAGE_PODMAN    the podman command line to import with (default
#                       "podman"; word-split), e.g. "runuser -u sbxtest --
#                       env HOME=/home/sbxtest podman"
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: build-image.sh TAG [BINARY...]" >&2; exit 2; }
tag=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
# import imports the rootfs tar $1 as $tag: the image's PATH, user (the
# manifests' 1000), working directory and entrypoint are set here, since
# there is no Containerfile.
import() {
  ${SBX_IMAGE_PODMAN:-podman} import --change 'ENV=PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin' \
    --change 'USER=1000:1000' --change 'WORKDIR=/workspace' \
    --change 'ENTRYPOINT=["/usr/local/bin/sbx"]' "$1" "$tag" >/dev/null
  echo "build-image.sh: $tag"
}
if [ -n "${SBX_IMAGE_FROM_TAR:-}" ]; then
  import "$SBX_IMAGE_FROM_TAR"
  exit 0
fi
work=$(mktemp -d /tmp/sbx-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
rfs=$work/rootfs
. "$root/integration/container/lib.sh"
sbx_base_rootfs "$rfs"
mkdir -p "$rfs/usr/local/bin" "$rfs/run" "$rfs/workspace"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$rfs/usr/local/bin/sbx" ./cmd/sbx)
for b in "$@"; do cp "$b" "$rfs/usr/local/bin/"; done
chmod 755 "$rfs"/usr/local/bin/*
chown 1000:1000 "$rfs/workspace"
tar=${SBX_IMAGE_TAR:-$work/sbx.tar}
tar -C "$rfs" --numeric-owner -cf "$tar" .
import "$tar"
