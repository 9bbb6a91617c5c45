#!/bin/sh
# scripts/check_layers.sh must be able to fail: objects compiled here with a planted upward call,
# a planted call between two parts that know nothing of each other, a loop inside one part and a
# call between two objects of a flat part are each refused; the same objects without the planted
# call pass. Run by `make check-layers`.
set -eu
cc=${CC:-cc}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
check=$(dirname "$0")/../scripts/check_layers.sh
parts='src/common=1 src/read=2 src/compute=3 src/write=3 tools/cmd=4!'
obj() { # obj PATH 'C SOURCE'
    mkdir -p "$dir/$(dirname "$1")"
    printf '%s\n' "$2" > "$dir/$1.c"
    $cc -c -o "$dir/$1.o" "$dir/$1.c"
}
obj src/common/base 'int base(void) { return 1; }'
obj src/read/reader 'int base(void); int reader(void) { return base(); }'
obj src/compute/kernel 'int reader(void); int kernel(void) { return reader(); }'
obj src/write/writer 'int reader(void); int writer(void) { return reader(); }'
obj tools/cmd/one 'int kernel(void); int one(void) { return kernel(); }'
obj tools/cmd/two 'int writer(void); int two(void) { return writer(); }'
clean="$dir/src/common/base.o $dir/src/read/reader.o $dir/src/compute/kernel.o $dir/src/write/writer.o $dir/tools/cmd/one.o $dir/tools/cmd/two.o"
# shellcheck disable=SC2086
"$check" "$dir" "$parts" $clean > /dev/null || { echo "check_layers_test: a clean graph was refused" >&2; exit 1; }

expect_refused() { # expect_refused WHAT MESSAGE OBJECT...
    what=$1 message=$2; shift 2
    if "$check" "$dir" "$parts" "$@" > "$dir/out" 2>&1; then
        echo "check_layers_test: $what passed" >&2; exit 1
    fi
    grep -q "$message" "$dir/out" || { echo "check_layers_test: $what: no '$message' in:" >&2; cat "$dir/out" >&2; exit 1; }
}
obj src/common/up 'int reader(void); int up(void) { return reader(); }'
# shellcheck disable=SC2086
expect_refused "an upward call (common -> read)" "calls up from src/common into src/read" $clean "$dir/src/common/up.o"
obj src/write/side 'int kernel(void); int side(void) { return kernel(); }'
# shellcheck disable=SC2086
expect_refused "a call from write into compute" "joins src/write to src/compute" $clean "$dir/src/write/side.o"
obj src/read/ping 'int pong(void); int ping(void) { return pong(); }'
obj src/read/pong 'int ping(void); int pong(void) { return ping(); }'
# shellcheck disable=SC2086
expect_refused "a loop inside src/read" "a loop through these objects" $clean "$dir/src/read/ping.o" "$dir/src/read/pong.o"
obj tools/cmd/three 'int one(void); int three(void) { return one(); }'
# shellcheck disable=SC2086
expect_refused "a command calling a command" "ties two objects of tools/cmd" $clean "$dir/tools/cmd/three.o"
echo "check_layers_test: a clean graph passes; an upward call, a sideways call, a loop and a call between commands are each refused"
