#!/bin/sh
# Checks the shape of the code from the build's own objects (make check-layers):
#
#   scripts/check_layers.sh OBJ_DIR 'PART=RANK ...' OBJECT...
#
# Each object belongs to the longest PART that prefixes its path below OBJ_DIR (src/io,
# tools/cmd, tools/tensormap.o ...). An undefined symbol of one object that another object
# defines is an edge between them (nm). The check fails when an edge runs from a part to one of
# a higher rank, or between two parts of the same rank (compute and write know nothing of each
# other), or between two objects of a part whose rank is marked with '!' (no command calls
# another command), or when the objects' edges form a loop (tsort). Nothing here is a list kept
# by hand: the parts are folders, the edges what the linker would resolve.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 OBJ_DIR 'PART=RANK ...' OBJECT..." >&2; exit 2; }
objdir=${1%/}; parts=$2; shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for o in "$@"; do
    rel=${o#"$objdir"/}
    nm --defined-only -g "$o" | awk -v f="$rel" 'NF == 3 && $2 ~ /[TDBRVWC]/ {print $3, f}'
done | sort -k1,1 > "$tmp/defs"
for o in "$@"; do
    rel=${o#"$objdir"/}
    nm -u "$o" | awk -v f="$rel" '{print $NF, f}'
done | sort -k1,1 > "$tmp/uses"
# user defining-object symbol
status=0
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 {print $2, $3, $1}' | sort -u > "$tmp/edges"
awk -v parts="$parts" '
    function part_of(path,    best, p) {
        best = ""
        for (p in rank)
            if ((index(path, p "/") == 1 || path == p) && length(p) > length(best))
                best = p
        return best
    }
    BEGIN {
        n = split(parts, list, " ")
        for (i = 1; i <= n; i++) {
            split(list[i], kv, "=")
            flat[kv[1]] = sub(/!$/, "", kv[2])
            rank[kv[1]] = kv[2] + 0
        }
    }
    {
        a = part_of($1); b = part_of($2)
        if (a == "" || b == "") {
            printf "layers: %s is in no part (parts: %s)\n", (a == "" ? $1 : $2), parts
            bad = 1; next
        }
        why = ""
        if (rank[b] > rank[a]) why = "calls up from " a " into " b
        else if (a != b && rank[a] == rank[b]) why = "joins " a " to " b ", which know nothing of each other"
        else if (a == b && flat[a]) why = "ties two objects of " a ", which stand apart"
        if (why != "") { printf "layers: %s %s: %s (%s)\n", $1, why, $2, $3; bad = 1 }
    }
    END { exit bad }' "$tmp/edges" >&2 || status=1
awk '{print $1, $2}' "$tmp/edges" | sort -u > "$tmp/pairs"
if ! tsort "$tmp/pairs" > /dev/null 2> "$tmp/loops"; then
    sed -e 's/^tsort: .*: input contains a loop:/layers: a loop through these objects:/' -e 's/^tsort: /layers:   /' "$tmp/loops" >&2
    status=1
fi
[ "$status" = 0 ] || { echo "layers: FAILED: calls up a layer or in a loop, above" >&2; exit 1; }
echo "layers: $# objects, $(wc -l < "$tmp/pairs") edges, no upward call, no loop"
