# bash completion for ptrec(1)
# Completes subcommands, options, and -e event specs: PMU names (pmu/),
# their terms (pmu/term=), generic events, tracepoints (subsys:name) and
# uprobe: paths.

_ptrec_names()
{
	local emu=
	[[ " ${COMP_WORDS[*]} " == *" --emulate "* ]] && emu=--emulate
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
	*/*)
		local pmu=${word%%/*} terms=${word#*/} tpre t
		tpre=${terms%,*}
		if [[ $tpre == "$terms" ]]; then tpre=; else tpre="$tpre,"; fi
		t=${terms:${#tpre}}
		COMPREPLY=($(compgen -W "$(_ptrec_names terms "$pmu") config config1 config2 config3 period freq name aux-output aux-sample-size aux-action=start-paused aux-action=pause aux-action=resume aux-start-paused aux-pause aux-resume" -P "$pre$pmu/$tpre" -- "$t"))
		compopt -o nospace
		return ;;
	*:*)
		COMPREPLY=($(compgen -W "$(_ptrec_names tracepoints)" -P "$pre" -- "$word"))
		return ;;
	esac
	local pmus
	pmus=$(_ptrec_names pmus | sed 's,$,/,')
	COMPREPLY=($(compgen -W "$pmus pt/ $(_ptrec_names events) uprobe: uretprobe: mem: $(_ptrec_names tracepoints | sed 's/:.*/:/' | sort -u)" -P "$pre" -- "$word"))
	compopt -o nospace
}

_ptrec()
{
	local cur prev cmd i
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
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
		-e|--event) _ptrec_event "$cur"; return ;;
		-o|--output|--emulate-truth) COMPREPLY=($(compgen -f -- "$cur")); return ;;
		--qemu) COMPREPLY=($(compgen -c -- "$cur")); return ;;
		-p|--pid) COMPREPLY=($(compgen -W "$(ls /proc | grep -E '^[0-9]+$')" -- "$cur")); return ;;
		-t|--tid|-C|--cpu|-m|--mmap-pages|-d|--duration|-z|--compress) return ;;
		esac
		for ((i = 2; i < COMP_CWORD; i++)); do
			if [[ ${COMP_WORDS[i]} == -- ]]; then
				COMPREPLY=($(compgen -c -- "$cur"))
				return
			fi
		done
		COMPREPLY=($(compgen -W "-e --event -o --output -p --pid -t --tid -a --all-cpus -C --cpu --per-thread -m --mmap-pages -d --duration --kcore --no-embed -z --compress --emulate --emulate-truth --qemu -n --dry-run -q --quiet -v --verbose -h --help --" -- "$cur"))
		;;
	check)
		COMPREPLY=($(compgen -W "--json -v --verbose -h --help" -- "$cur"))
		;;
	list)
		case $prev in
		-e|--event) _ptrec_event "$cur"; return ;;
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
