# bash completion for ptdump(1)
# bash splits words at ':' and '=' (COMP_WORDBREAKS): the helpers work on
# whole words, as in ptrec.bash (each file is loaded on its own).

# Sets cur and prev: the whole word being completed and the one before it.
_ptdump_cur_prev()
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
_ptdump_ltrim()
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

_ptdump()
{
	local cur prev eq=
	# whole words across ':' and '=' (see ptrec.bash): --opt=VALUE, FILE:OFFSET
	_ptdump_cur_prev
	if [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		cur=${cur#*=}
		eq=1
	fi
	case $prev in
	-i|--input|--pt|--elf|--image|--to-perf-data|--diff|--perfetto|-o|--output)
		COMPREPLY=($(compgen -f -- "$cur"))
		_ptdump_ltrim "$cur"
		return ;;
	--symfs|--snapshot|--to-raw|--buildid-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--mtc-freq|--nom-freq|--cpuid-0x15.eax|--cpuid-0x15.ebx) return ;;
	--pid|--tid|--cpu|--time|--symbol|--hide-dso|--max-events|--fail-above|--max-depth|--snapshot-index) return ;;
	--format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return ;;
	--sort) COMPREPLY=($(compgen -W "insns self calls time self-time name" -- "$cur")); return ;;
	--weight) COMPREPLY=($(compgen -W "insns time calls" -- "$cur")); return ;;
	--buffer) COMPREPLY=($(compgen -W "0 512K 2M 16M" -- "$cur")); return ;;
	--core) COMPREPLY=($(compgen -W "walk libipt" -- "$cur")); return ;;
	-j|--jobs) COMPREPLY=($(compgen -W "1 2 4 $(nproc 2>/dev/null)" -- "$cur")); return ;;
	--shard) COMPREPLY=($(compgen -W "1/2 2/2 1/4 2/4 3/4 4/4" -- "$cur")); return ;;
	--report)
		# its value only as --report=VALUE (a word after it is the FILE)
		if [[ -n $eq ]]; then COMPREPLY=($(compgen -W "caller callee" -- "$cur")); return; fi ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--call-trace --call-ret-trace --insn-trace --branches --events --stats --info --sideband --ranges --packets --report --report=caller --report=callee --windows --diff --folded --perfetto --format --sort --by-thread --weight --max-events --fail-above --hide-dso --no-plt --durations --max-depth --pid --tid --cpu --time --symbol --snapshot-index --srcline --symfs --buildid-dir --buffer --core -j --jobs --shard -o --output --merge --progress --no-progress --follow -i --input --snapshot --pt --elf --image --mtc-freq --nom-freq --cpuid-0x15.eax --cpuid-0x15.ebx --to-perf-data --to-raw -q --quiet -V --version -h --help" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _ptdump ptdump
