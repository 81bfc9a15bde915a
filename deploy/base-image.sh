#!/usr/bin/env bash
# A Debian 12 base image from Debian's own packages, for sites without a container registry:
# debootstrap's minbase into a tarball that `podman import` turns into the Containerfile's base.
# Usage (root):  bash deploy/base-image.sh OUT.tar [MIRROR]
#   then:        podman import OUT.tar localhost/debian:12
#                podman build --format docker -f deploy/Containerfile -t grainlab \
#                  --build-arg BASE=localhost/debian:12 --build-arg RUNTIME_BASE=localhost/debian:12 .
set -euo pipefail
out=${1:?usage: base-image.sh OUT.tar [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
# the tree beside OUT, not in /tmp: it is 200 MB, and /tmp may be a small tmpfs
root=$(mktemp -d "$(dirname "$out")/.rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
chmod 755 "$root" # it becomes the image's /: mktemp's 0700 would lock every other user out
# minbase: Priority required and apt, no more; the Containerfile installs what each stage needs
if ! log=$(debootstrap --variant=minbase bookworm "$root" "$mirror" 2>&1); then
  echo "$log" | tail -20 >&2
  exit 1
fi
# the same suites as Debian's own debian:12 image, so the stages get security updates too
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# the certificate authorities this machine adds to Debian's (/usr/local/share/ca-certificates):
# where HTTPS passes a site's inspecting proxy, npm in the build stage must trust it as this
# machine does (the stages' ca-certificates package adds them to the bundle)
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
# nothing of the machine that made it (debootstrap copies its resolv.conf and hostname; podman
# provides both at run time), no downloaded packages or indexes (apt-get update fetches them anew)
rm -f "$root/etc/resolv.conf" "$root/etc/hostname"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
tar -C "$root" --numeric-owner -cf "$out.part" . && mv "$out.part" "$out"
