#!/bin/sh
# tests/support/san_gate.sh must be able to fail: a leak from our code, an ASan error and a UBSan
# runtime error are each refused; a clean run and a leak of the test runner's alone pass.
set -eu
gate=$(dirname "$0")/support/san_gate.sh
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
runner='==1==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 48 byte(s) in 1 object(s) allocated from:
    #0 0x7f in __interceptor_calloc asan_malloc_linux.cpp:77
    #1 0x7f  (/lib/x86_64-linux-gnu/libcriterion.so.3+0x1a332)

SUMMARY: AddressSanitizer: 48 byte(s) leaked in 1 allocation(s).'
ours='==2==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 64 byte(s) in 1 object(s) allocated from:
    #0 0x7f in __interceptor_malloc asan_malloc_linux.cpp:69
    #1 0x55 in slurp tests/test_matvec_api.c:76
    #2 0x7f in criterion_internal_test_main (/lib/x86_64-linux-gnu/libcriterion.so.3+0xe6de)

SUMMARY: AddressSanitizer: 64 byte(s) leaked in 1 allocation(s).'
passed='[====] Synthesis: Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0'
failed='[====] Synthesis: Tested: 2 | Passing: 1 | Failing: 1 | Crashing: 0'
check() { # check EXPECTED_VERDICT WHAT RUN_STATUS TEXT
    printf '%s\n' "$4" > "$dir/stderr"
    st=0; "$gate" "$dir/stderr" "$3" 2>/dev/null || st=$?
    [ "$st" = "$1" ] || { echo "san_gate_test: $2: status $st, not $1" >&2; exit 1; }
}
check 0 "a clean run" 0 "$passed"
check 1 "a run whose tests failed" 1 "$failed"
check 0 "the test runner's own leak (which makes its status 86)" 86 "$passed
$runner"
check 86 "the runner's leak after a failed test" 86 "$failed
$runner"
check 1 "a leak from our code" 86 "$passed
$ours"
check 1 "a leak of ours after the runner's" 86 "$passed
$runner
$ours"
check 1 "an AddressSanitizer error" 86 "==3==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1"
check 1 "a UBSan runtime error" 1 "src/x.c:3:5: runtime error: signed integer overflow"
echo "san_gate_test: our leaks, sanitizer errors and failed tests fail the run; the runner's own leak is passed over"
