#!/bin/sh
# Install the Debian packages tensormap builds against, when they are missing.
# Each is there for one job: liblz4-dev (LZ4 frames for `dump --format lz4`), libjansson-dev
# (JSON in and out, safetensors headers), libcurl4-openssl-dev (remote files: HTTP range requests,
# TLS, redirects, HTTP/2), libxxhash-dev and libssl-dev (`hash`: xxh64, and SHA-1 and SHA-256 from
# libcrypto), libcriterion-dev (the test suite), lz4 (the tests
# decompress dumps with the real lz4 binary), python3-numpy and python3-pytest (the Python
# package and its tests, for Debian's /usr/bin/python3: the first python3 on PATH may be another),
# python3-xxhash (the hash tests' own xxh64).
#
#   scripts/deps.sh lib     what the library and the tool build against (CURL=0: no libcurl)
#   scripts/deps.sh test    what the test suite adds
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
have_module() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $1" >/dev/null 2>&1; }
have_module numpy                 || missing="$missing python3-numpy"
have_module pytest                || missing="$missing python3-pytest"
have_module xxhash                || missing="$missing python3-xxhash"
;;
*) echo "usage: scripts/deps.sh lib|test" >&2; exit 2 ;;
esac
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "tensormap needs:$missing (as root: apt-get install$missing)" >&2
    exit 1
fi
