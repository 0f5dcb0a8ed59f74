# bash completion for ptrec(1)
# Completes subcommands, options, and -e event specs: PMU names (pmu/),
# their terms (pmu/term=), generic events, tracepoints (subsys:name) and
# uprobe: paths.

# bash splits words at the characters of COMP_WORDBREAKS, ':' and '=' among
# them, so "syscalls:sys_enter_new" and "pt/aux-action=r" reach a completion
# function in pieces. The functions below work on the whole word (with
# bash-completion's _get_comp_words_by_ref -n :=, else from COMP_LINE), and
# _ptrec_ltrim then drops from each candidate the part bash keeps in place
# (as bash-completion's __ltrim_colon_completions does for ':', here for '='
# too).

# Sets cur and prev: the whole word being completed and the one before it.
_ptrec_cur_prev()
{
	if declare -F _get_comp_words_by_ref >/dev/null; then
		_get_comp_words_by_ref -n := cur prev
		return
	fi
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	if [[ -n ${COMP_LINE-} ]]; then
		local line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
		local -a w
		read -r -a w <<<"$line"
		[[ $line == *[[:space:]] ]] && w+=("")
		cur=${w[${#w[@]}-1]}
		prev=${w[${#w[@]}-2]-}
	fi
}

# Drops from each COMPREPLY entry the part of $1 up to its last ':' or '='
# that bash treats as a word break.
_ptrec_ltrim()
{
	local cur=$1 keep= i
	for ((i = ${#cur} - 1; i >= 0; i--)); do
		if [[ ${cur:i:1} == [:=] && $COMP_WORDBREAKS == *"${cur:i:1}"* ]]; then
			keep=${cur:0:i+1}
			break
		fi
	done
	[[ -z $keep ]] && return
	for i in "${!COMPREPLY[@]}"; do
		COMPREPLY[i]=${COMPREPLY[i]#"$keep"}
	done
}

_ptrec_names()
{
	local emu=
	[[ " ${COMP_WORDS[*]} " == *" --emulate "* || " ${COMP_WORDS[*]} " == *" --emulate=system "* ]] && emu=--emulate
	ptrec list $emu --names "$@" 2>/dev/null
}

_ptrec_event()
{
	local cur=$1 pre word i c slash=0 start=0
	# Work on the last event of the spec: after the last ',' or '{' that is
	# not inside a pmu/terms/ list.
	for ((i = 0; i < ${#cur}; i++)); do
		c=${cur:i:1}
		if [[ $c == / ]]; then
			slash=$((1 - slash))
		elif [[ $slash == 0 && ( $c == , || $c == '{' ) ]]; then
			start=$((i + 1))
		fi
	done
	pre=${cur:0:start}
	word=${cur:start}
	case $word in
	uprobe:*|uretprobe:*)
		local kind=${word%%:*} rest=${word#*:}
		if [[ $rest != *:* ]]; then
			COMPREPLY=($(compgen -f -P "$pre$kind:" -- "$rest"))
			compopt -o nospace
		fi
		return ;;
	kprobe:*|kretprobe:*)
		local kind=${word%%:*}
		COMPREPLY=($(awk -v p="${word#*:}" '$2 ~ /^[tT]$/ && index($3, p) == 1 { print $3 }' /proc/kallsyms 2>/dev/null | head -n 200 | sed "s|^|$pre$kind:|"))
		return ;;
	*/*)
		local pmu=${word%%/*} terms=${word#*/} tpre t
		tpre=${terms%,*}
		if [[ $tpre == "$terms" ]]; then tpre=; else tpre="$tpre,"; fi
		t=${terms:${#tpre}}
		COMPREPLY=($(compgen -W "$(_ptrec_names terms "$pmu") config config1 config2 config3 period freq name aux-output aux-sample-size aux-action=start-paused aux-action=pause aux-action=resume aux-start-paused aux-pause aux-resume snapshot" -P "$pre$pmu/$tpre" -- "$t"))
		compopt -o nospace
		return ;;
	*:*)
		COMPREPLY=($(compgen -W "$(_ptrec_names tracepoints)" -P "$pre" -- "$word"))
		return ;;
	esac
	local pmus
	pmus=$(_ptrec_names pmus | sed 's,$,/,')
	COMPREPLY=($(compgen -W "$pmus pt/ $(_ptrec_names events) uprobe: uretprobe: kprobe: kretprobe: mem: $(_ptrec_names tracepoints | sed 's/:.*/:/' | sort -u)" -P "$pre" -- "$word"))
	compopt -o nospace
}

_ptrec()
{
	local cur prev cmd i
	COMPREPLY=()
	_ptrec_cur_prev
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		record|check|list|help) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "record check list help --help --version" -- "$cur"))
		return
	fi
	case $cmd in
	record)
		case $prev in
		-e|--event) _ptrec_event "$cur"; _ptrec_ltrim "$cur"; return ;;
		-o|--output|--emulate-truth) COMPREPLY=($(compgen -f -- "$cur")); return ;;
		--qemu) COMPREPLY=($(compgen -c -- "$cur")); return ;;
		--emulate-cpus) COMPREPLY=($(compgen -W "1 2 3 4 8" -- "$cur")); return ;;
		--emulate-slice) COMPREPLY=($(compgen -W "100000 1000000 2000000 10000000" -- "$cur")); return ;;
		--syscall|--syscall-user)
			# LIST: the syscalls tracefs knows, after the last comma
			local done=${cur%"${cur##*,}"}
			COMPREPLY=($(compgen -W "$(_ptrec_names tracepoints | sed -n 's/^syscalls:sys_enter_//p')" -P "$done" -- "${cur##*,}"))
			compopt -o nospace
			return ;;
		--func|--filter) return ;;
		-p|--pid) COMPREPLY=($(compgen -W "$(ls /proc | grep -E '^[0-9]+$')" -- "$cur")); return ;;
		-t|--tid|-C|--cpu|-c|--count|-F|--freq|-m|--mmap-pages|-d|--duration|-z|--compress|--chunk-size|--snapshot-limit) return ;;
		esac
		for ((i = 2; i < COMP_CWORD; i++)); do
			if [[ ${COMP_WORDS[i]} == -- ]]; then
				COMPREPLY=($(compgen -c -- "$cur"))
				return
			fi
		done
		COMPREPLY=($(compgen -W "-e --event --func --syscall --syscall-user --filter -o --output -p --pid -t --tid -a --all-cpus -C --cpu --per-thread -c --count -F --freq -m --mmap-pages -d --duration -S --snapshot --snapshot= --snapshot-limit --switch-output --switch-output= --kcore --no-embed -z --compress --chunk-size --emulate --emulate=system --emulate-truth --emulate-cpus --emulate-slice --qemu --progress --no-progress -n --dry-run -q --quiet -v --verbose -h --help --" -- "$cur"))
		;;
	check)
		COMPREPLY=($(compgen -W "--json -v --verbose -h --help" -- "$cur"))
		;;
	list)
		case $prev in
		-e|--event) _ptrec_event "$cur"; _ptrec_ltrim "$cur"; return ;;
		--names) COMPREPLY=($(compgen -W "pmus events tracepoints terms" -- "$cur")); return ;;
		terms|--sysfs) COMPREPLY=($(compgen -W "$(_ptrec_names pmus)" -- "$cur")); return ;;
		esac
		COMPREPLY=($(compgen -W "-e --event --emulate --names --sysfs -h --help $(_ptrec_names pmus)" -- "$cur"))
		;;
	help)
		COMPREPLY=($(compgen -W "record check list" -- "$cur"))
		;;
	esac
}
complete -F _ptrec ptrec
