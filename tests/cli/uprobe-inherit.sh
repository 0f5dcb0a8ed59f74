#!/usr/bin/env bash
# Uprobe triggers on a program that starts threads and children: the kernel
# cannot inherit a uprobe PMU event (it re-reads the path pointer in the
# forking task: clone fails with EFAULT), so ptrec records inherited uprobes
# through tracefs uprobe events. The program must run as it does untraced,
# every thread and child must be sampled as often as it called the function,
# and no tracefs event may stay behind.
. "$(dirname "$0")/lib.sh"

if ! t_is_root; then
	t_skip "uprobe inheritance" "needs root (uprobes through perf_event_open)"
	t_done; exit
fi
cc -O1 -g -pthread -o "$T_TMP/parity" "$(dirname "$0")/src/parity.c" || { t_fail "build parity"; t_done; exit; }
cd "$T_TMP" || exit 1
TRACEFS=/sys/kernel/tracing
[ -e $TRACEFS/uprobe_events ] || mount -t tracefs nodev $TRACEFS 2>/dev/null
if [ ! -w $TRACEFS/uprobe_events ]; then
	t_skip "uprobe inheritance" "no writable uprobe_events in tracefs"
	t_done; exit
fi

# A ptrec killed earlier left an event behind: a dead pid's group.
dead=$(sh -c 'echo $$')
echo "p:ptrec_$dead/u0 $T_TMP/parity:0x$(nm parity | awk '$3 == "parity_work" { print $1 }' | sed 's/^0*//')" \
	>>$TRACEFS/uprobe_events 2>/dev/null
t_match "a stale event is there before" "ptrec_$dead/u0" "$(cat $TRACEFS/uprobe_events)"

# main + 2 threads + a forked child, 17 calls each.
t_run "record uprobe+uretprobe on a program with threads and a child" 0 \
	"$PTREC" record -q -e "uprobe:$T_TMP/parity:parity_work" -e "uretprobe:$T_TMP/parity:parity_work" \
	-o u.data -- ./parity -g 0 -W 0 -l 17 -t 2 -f
s=$("$PTDUMP" --sideband u.data | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) break; if ($(i+1) == "SAMPLE") print $i, $(i+2) }')
t_eq "entries: 17 in each of 4 threads" "17 17 17 17" \
	"$(grep ' uprobe:' <<<"$s" | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ' | sed 's/ $//')"
t_eq "returns: 17 in each of 4 threads" "17 17 17 17" \
	"$(grep ' uretprobe:' <<<"$s" | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ' | sed 's/ $//')"
t_eq "the child is a process of its own" 2 \
	"$(awk '{ split($1, p, "/"); print p[1] }' <<<"$s" | sort -u | wc -l)"
t_nomatch "no ptrec event left in tracefs" 'ptrec_' "$(cat $TRACEFS/uprobe_events)"
t_match "the file keeps the probe as specified" "uprobe:$T_TMP/parity:parity_work" "$("$PTDUMP" --info u.data)"

# --per-thread opens no inherited events: the uprobe PMU is used as is.
t_run "per-thread uprobe" 0 "$PTREC" record -q --per-thread -e "uprobe:$T_TMP/parity:parity_work" \
	-o p.data -- ./parity -g 0 -W 0 -l 5
t_eq "per-thread: 5 samples" 5 "$("$PTDUMP" --sideband p.data | grep -c ' SAMPLE ')"

# A path the tracefs syntax cannot hold is refused with a reason.
mkdir -p "$T_TMP/a b" && cp parity "$T_TMP/a b/parity"
t_run "a path with a space is refused" 1 "$PTREC" record -q -e "uprobe:$T_TMP/a b/parity:parity_work" \
	-o s.data -- "$T_TMP/a b/parity" -g 0 -l 1
t_match "the reason names spaces" 'space' "$err"

t_done
