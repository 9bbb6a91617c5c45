#!/bin/sh
# The sanitizer build's verdict on a test run's stderr (make SAN=1 test): any sanitizer error,
# or any leak with one frame of ours in its allocation stack, fails the run. A leak whose every
# frame past the allocator is in libcriterion is the test runner's own (Criterion 2.4's parent
# process leaks a 48-byte calloc on some runs, after its synthesis line), not ours: it is shown
# and passed over. Criterion reports a test before its worker exits, so LeakSanitizer's report
# (printed at exit) would not fail the test itself: this is what does.
#
#   tests/support/san_gate.sh STDERR_FILE
set -eu
awk '
    /ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|MemorySanitizer)/ ||
    /SUMMARY: UndefinedBehaviorSanitizer/ || /runtime error:/ { bad = 1 }
    /^(Direct|Indirect) leak of/ { if (leak && ours) bad = 1; leak = 1; ours = 0; next }
    leak && /^ *#[0-9]+ / {
        if ($1 != "#0" && $0 !~ /libcriterion\.so/)
            ours = 1
        next
    }
    leak && !/^ *#[0-9]+ / { if (ours) bad = 1; leak = 0 }
    END {
        if (leak && ours) bad = 1
        if (bad) print "sanitizer reports above" > "/dev/stderr"
        exit bad
    }' "$1"
