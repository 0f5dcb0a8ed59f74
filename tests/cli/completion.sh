#!/usr/bin/env bash
# bash completion: drive the completion functions as bash would.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(dirname "$PTREC")
complete_words() { # complete_words SCRIPT WORDS... : prints COMPREPLY
	bash -c '
		PATH=$1:$PATH; . "$2"; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		compopt() { :; }
		_${COMP_WORDS[0]}
		printf "%s\n" "${COMPREPLY[@]}"' _ "$bindir" "$@"
}
c=$(complete_words "$top/completions/ptrec.bash" ptrec re)
t_eq "subcommand" "record" "$c"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record --dr)
t_eq "record option" "--dry-run" "$c"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record -e upro)
t_match "event: uprobe: offered" '^uprobe:$' "$c"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record --emulate -e 'intel_pt/ps')
t_eq "event: intel_pt terms under --emulate" "intel_pt/psb_period" "$c"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record -e 'intel_pt/cyc,aux-action=st')
t_eq "event: second term" "intel_pt/cyc,aux-action=start-paused" "$c"
if [ -d /sys/kernel/tracing/events/syscalls ]; then
	c=$(complete_words "$top/completions/ptrec.bash" ptrec record -e 'syscalls:sys_enter_newun')
	t_eq "event: tracepoint" "syscalls:sys_enter_newuname" "$c"
	c=$(complete_words "$top/completions/ptrec.bash" ptrec record -e '{cycles,syscalls:sys_exit_newun')
	t_eq "event: tracepoint inside a group" "{cycles,syscalls:sys_exit_newuname" "$c"
else
	t_skip "tracepoint completion" "no tracefs"
fi
c=$(complete_words "$top/completions/ptrec.bash" ptrec list --names te)
t_eq "list --names" "terms" "$c"
c=$(complete_words "$top/completions/ptdump.bash" ptdump --call-r)
t_eq "ptdump option" "--call-ret-trace" "$c"
t_done
