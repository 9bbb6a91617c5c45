#!/bin/sh
# Install the Debian packages tensormap builds against, when they are missing.
# Each is there for one job: liblz4-dev (LZ4 frames for `dump --format lz4`), libjansson-dev
# (JSON in and out, safetensors headers), libcurl4-openssl-dev (remote files: HTTP range requests,
# TLS, redirects, HTTP/2), libxxhash-dev and libssl-dev (`hash`: xxh64, and SHA-1 and SHA-256 from
# libcrypto), libcriterion-dev (the test suite), lz4 (the tests
# decompress dumps with the real lz4 binary), python3-numpy and python3-pytest (the Python
# package and its tests, for Debian's /usr/bin/python3: the first python3 on PATH may be another),
# python3-venv, python3-pip, python3-setuptools, python3-wheel and python3-build (the packaging
# test installs the package with pip into a virtual environment and builds a wheel, offline;
# -I keeps the tree's build/ directory from passing for the module build).
# python3-torch (the safe_open(framework="pt") and torch.distributed tests; without it they skip,
# saying so).
# python3-xxhash (the hash tests' own xxh64).
# nodejs and npm (the s3:// tests' server: s3rver from the npm registry, at the version
# tests/support/s3/package-lock.json pins, installed there by `npm ci`; without it they skip,
# saying so).
#
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user-static (the NEON path, cross-built
# and run under qemu by make check-arm; without them make check skips it, saying so).
#
#   scripts/deps.sh lib     what the library and the tool build against (CURL=0: no libcurl)
#   scripts/deps.sh test    what the test suite adds
#   scripts/deps.sh arm     the cross toolchain and qemu for the NEON check
set -e
missing=""
have_header() { echo "#include <$1>" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
case "${1:-lib}" in
lib)
have_header lz4frame.h            || missing="$missing liblz4-dev"
have_header jansson.h             || missing="$missing libjansson-dev"
have_header xxhash.h              || missing="$missing libxxhash-dev"
have_header openssl/evp.h         || missing="$missing libssl-dev"
[ "${CURL:-1}" = 0 ] || have_header curl/curl.h || missing="$missing libcurl4-openssl-dev"
;;
test)
have_header criterion/criterion.h || missing="$missing libcriterion-dev"
command -v lz4 >/dev/null 2>&1    || missing="$missing lz4"
# openssl: the remote-file tests make a self-signed certificate for their HTTPS server
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
have_module() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -I -c "import $1" >/dev/null 2>&1; }
have_module numpy                 || missing="$missing python3-numpy"
have_module pytest                || missing="$missing python3-pytest"
have_module ensurepip             || missing="$missing python3-venv"
have_module pip                   || missing="$missing python3-pip"
have_module setuptools            || missing="$missing python3-setuptools"
have_module wheel                 || missing="$missing python3-wheel"
have_module build                 || missing="$missing python3-build"
have_module torch                 || missing="$missing python3-torch"
have_module xxhash                || missing="$missing python3-xxhash"
command -v node >/dev/null 2>&1   || missing="$missing nodejs"
command -v npm >/dev/null 2>&1    || missing="$missing npm"
;;
arm)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing="$missing gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
command -v qemu-aarch64-static >/dev/null 2>&1   || missing="$missing qemu-user-static"
;;
*) echo "usage: scripts/deps.sh lib|test|arm" >&2; exit 2 ;;
esac
# s3rver into tests/support/s3/node_modules, once npm is there; a failure (no registry) leaves
# the s3:// tests to skip, saying why
s3rver() {
    s3=$(dirname "$0")/../tests/support/s3
    [ "${1:-lib}" = test ] && command -v npm >/dev/null 2>&1 || return 0
    [ -f "$s3/node_modules/s3rver/package.json" ] && return 0
    (cd "$s3" && npm ci --no-audit --no-fund --silent) ||
        echo "npm ci in tests/support/s3 failed: the s3:// tests will skip" >&2
}
[ -z "$missing" ] && { s3rver "$1"; exit 0; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    s3rver "$1"
else
    echo "tensormap needs:$missing (as root: apt-get install$missing)" >&2
    exit 1
fi
