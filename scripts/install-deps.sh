#!/bin/sh
# Installs the Debian packages ptrec needs to build, test and run. Idempotent.
# Needs root (apt-get); prints what it would install otherwise.
set -eu
PKGS="build-essential pkg-config
libipt-dev libopencsd-dev libopencsd-bin libelf-dev libdw-dev libzstd-dev libcapstone-dev
qemu-user linux-perf binutils gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing:$missing" >&2
	echo "install-deps: run 'sudo make deps' (apt-get needs root)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
echo "install-deps: installed:$missing"
