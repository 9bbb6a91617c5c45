#!/bin/sh
# The sanitizer build's verdict on a test run (make SAN=1 test): any sanitizer error, or any
# leak with one frame of ours in its allocation stack, fails the run. A leak whose every frame
# past the allocator is in libcriterion is the test runner's own (Criterion 2.4's parent process
# leaks a 48-byte calloc after its synthesis line), not ours: it is shown and passed over, and
# so is the exit status LeakSanitizer gives the runner for it (ASAN_OPTIONS' exitcode, 86) when
# the synthesis says that no test failed or crashed. Criterion reports a test before its worker
# exits, so LeakSanitizer's report (printed at exit) would not fail the test itself: this does.
#
#   tests/support/san_gate.sh STDERR_FILE EXIT_STATUS
set -eu
verdict=$(awk '
    /ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|MemorySanitizer)/ ||
    /SUMMARY: UndefinedBehaviorSanitizer/ || /runtime error:/ { bad = 1 }
    /Synthesis: Tested:/ { clean = /Failing: 0 \| Crashing: 0/ }
    /^(Direct|Indirect) leak of/ { end_leak(); leak = 1; ours = 0; next }
    leak && /^ *#[0-9]+ / {
        if ($1 != "#0" && $0 !~ /libcriterion\.so/)
            ours = 1
        next
    }
    leak { end_leak() }
    function end_leak() {
        if (leak && ours) bad = 1
        if (leak && !ours) runners = 1
        leak = 0
    }
    END {
        end_leak()
        print bad ? "bad" : runners && clean ? "runner-leak" : "clean"
    }' "$1")
case "$verdict:$2" in
bad:*) echo "sanitizer reports above" >&2; exit 1 ;;
runner-leak:86) echo "san_gate: the leak above is the test runner's own (libcriterion), and no test failed: passed over" >&2; exit 0 ;;
*) exit "$2" ;;
esac
