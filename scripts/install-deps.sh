#!/bin/sh
# Installs the Debian packages ptrec needs to build, test and run. Idempotent.
# Needs root (apt-get); prints what it would install otherwise.
#
#   scripts/install-deps.sh         the native build (make deps)
#   scripts/install-deps.sh arm64   also the arm64 cross build (make cross-arm64):
#                                   adds the arm64 architecture to dpkg and installs
#                                   the arm64 libraries (no libipt: Debian has none)
#   scripts/install-deps.sh system  also the whole-system software tracer
#                                   (make deps-system): qemu-system-x86 and Debian's
#                                   kernel (linux-image-amd64, the guest's kernel)
set -eu
PKGS="build-essential pkg-config
libipt-dev libopencsd-dev libopencsd-bin libelf-dev libdw-dev libzstd-dev liblzma-dev libcapstone-dev libbpf-dev
qemu-user linux-perf binutils gcc-aarch64-linux-gnu libc6-dev-arm64-cross
clang libclang-rt-14-dev afl++ tmux bash-completion python3-jsonschema chromium parallel valgrind"
ARM64_PKGS="libopencsd-dev:arm64 libelf-dev:arm64 libdw-dev:arm64 libzstd-dev:arm64 liblzma-dev:arm64
libcapstone-dev:arm64"
SYSTEM_PKGS="qemu-system-x86 linux-image-amd64"
arm64=false
case ${1:-} in
"") ;;
arm64) arm64=true; PKGS="$PKGS $ARM64_PKGS" ;;
system) PKGS="$PKGS $SYSTEM_PKGS" ;;
*) echo "usage: $0 [arm64|system]" >&2; exit 2 ;;
esac
missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
# speedscope for tests/cli/viewer.sh, into npm's cache (the test installs it
# from there into the build directory); npm is not a Debian package here.
viewer() {
	if command -v npm >/dev/null && ! npm cache add speedscope@1.25.0 >/dev/null 2>&1; then
		echo "install-deps: npm could not fetch speedscope (tests/cli/viewer.sh tries again)" >&2
	fi
	return 0
}
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	viewer
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing:$missing" >&2
	if $arm64; then
		echo "install-deps: run 'sudo make cross-arm64' (apt-get needs root)" >&2
	else
		echo "install-deps: run 'sudo make deps' (apt-get needs root)" >&2
	fi
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if $arm64 && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	dpkg --add-architecture arm64
fi
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
echo "install-deps: installed:$missing"
viewer
