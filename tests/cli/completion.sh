#!/usr/bin/env bash
# bash completion: the completion functions on whole words, then through a
# real interactive bash (under tmux: type, Tab, read the screen), where
# bash's own word splitting at ':' and '=' applies.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(cd "$(dirname "$PTREC")" && pwd)
# The functions on whole words: COMP_WORDS as given, no word breaks at ':'
# and '=' (bash's splitting is what the tmux cases below are for).
complete_words() { # complete_words SCRIPT WORDS... : prints COMPREPLY
	bash -c '
		PATH=$1:$PATH; . "$2"; shift 2
		COMP_WORDBREAKS=$'"'"' \t\n"\x27><;|&('"'"'
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		compopt() { :; }
		_${COMP_WORDS[0]}
		printf "%s\n" "${COMPREPLY[@]}"' _ "$bindir" "$@"
}
c=$(complete_words "$top/completions/ptrec.bash" ptrec re)
t_eq "subcommand" "record" "$c"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record --dr)
t_eq "record option" "--dry-run" "$c"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record --sysc)
t_eq "record option: --syscall" "--syscall --syscall-user" "$(echo $c)"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record --snap)
t_eq "record option: --snapshot" "--snapshot --snapshot= --snapshot-limit" "$(echo $c)"
c=$(complete_words "$top/completions/ptrec.bash" ptrec record --switch)
t_eq "record option: --switch-output" "--switch-output --switch-output=" "$(echo $c)"
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
	c=$(complete_words "$top/completions/ptrec.bash" ptrec record --syscall 'read,newun')
	t_eq "--syscall: the second name of a list" "read,newuname" "$c"
	c=$(complete_words "$top/completions/ptrec.bash" ptrec record --syscall-user 'newun')
	t_eq "--syscall-user: a name" "newuname" "$c"
else
	t_skip "tracepoint completion" "no tracefs"
fi
c=$(complete_words "$top/completions/ptrec.bash" ptrec list --names te)
t_eq "list --names" "terms" "$c"
c=$(complete_words "$top/completions/ptdump.bash" ptdump --call-r)
t_eq "ptdump option" "--call-ret-trace" "$c"

# ---- a real interactive bash under tmux ----
# tab_line NAME RCFILE TEXT: types TEXT in a fresh interactive bash, presses
# Tab, and prints the command line as the screen shows it.
tsock=$T_TMP/tmux.sock
t_cleanup() { tmux -S "$tsock" kill-server 2>/dev/null; rm -rf "$T_TMP"; }
tmux_bash() { # tmux_bash RCFILE: a fresh session "t" on our own server
	tmux -S "$tsock" kill-server 2>/dev/null
	tmux -S "$tsock" -f /dev/null new-session -d -s t -x 250 -y 20 \
		"env -i HOME=$T_TMP TERM=xterm PATH=$bindir:/usr/bin:/bin bash --noprofile --rcfile $1 -i"
	local i
	for ((i = 0; i < 50; i++)); do
		tmux -S "$tsock" capture-pane -p -t t 2>/dev/null | grep -q 'READY>' && return 0
		sleep 0.1
	done
	return 1
}
tab_line() { # tab_line TEXT: the line after typing TEXT and Tab
	local i prev= cur
	tmux -S "$tsock" send-keys -t t C-u
	tmux -S "$tsock" send-keys -t t -l "$1"
	tmux -S "$tsock" send-keys -t t Tab
	# wait for the screen to settle (completion runs ptrec list)
	for ((i = 0; i < 50; i++)); do
		sleep 0.2
		cur=$(tmux -S "$tsock" capture-pane -p -t t | grep 'READY>' | tail -n 1)
		[[ $cur == "$prev" && $cur != "READY> $1" ]] && break
		prev=$cur
	done
	printf '%s\n' "${cur#READY> }" | sed 's/ *$//'
}
# tmux_cases LABEL RCFILE: the cases the issue met (bash 5 with and without bash-completion)
tmux_cases() {
	local label=$1 line
	if ! tmux_bash "$2"; then
		t_fail "$label: interactive bash started" "$(tmux -S "$tsock" capture-pane -p -t t 2>&1)"
		return
	fi
	line=$(tab_line "ptrec record --emulate -e syscalls:sys_enter_newun")
	t_eq "$label: tracepoint after ':'" "ptrec record --emulate -e syscalls:sys_enter_newuname" "$line"
	line=$(tab_line "ptrec record --emulate -e pt/aux-action=r")
	t_eq "$label: term value after '='" "ptrec record --emulate -e pt/aux-action=resume" "$line"
	line=$(tab_line "ptrec record --emulate -e pt/cyc,aux-action=start-p")
	t_eq "$label: second term after '='" "ptrec record --emulate -e pt/cyc,aux-action=start-paused" "$line"
	line=$(tab_line "ptrec list --emulate -e uprobe:$T_TMP/compl")
	t_eq "$label: uprobe path after ':'" "ptrec list --emulate -e uprobe:$T_TMP/completion-target" "$line"
	line=$(tab_line "ptdump --pt=$T_TMP/compl")
	t_eq "$label: ptdump --pt=FILE" "ptdump --pt=$T_TMP/completion-target" "$line"
	line=$(tab_line "ptdump --call-r")
	t_eq "$label: ptdump option" "ptdump --call-ret-trace" "$line"
	tmux -S "$tsock" kill-server 2>/dev/null
}
if ! command -v tmux >/dev/null; then
	t_skip "completion in an interactive bash" "tmux is not installed"
else
	: >"$T_TMP/completion-target"
	bc=/usr/share/bash-completion/bash_completion
	printf 'PS1="READY> "\n. %s\n. %s\n' "$top/completions/ptrec.bash" \
		"$top/completions/ptdump.bash" >"$T_TMP/rc.plain"
	tmux_cases "plain bash" "$T_TMP/rc.plain"
	if [ -r "$bc" ]; then
		printf '. %s\n' "$bc" | cat - "$T_TMP/rc.plain" >"$T_TMP/rc.bc"
		tmux_cases "with bash-completion" "$T_TMP/rc.bc"
	else
		t_skip "completion with bash-completion" "bash-completion is not installed"
	fi
fi
t_done
