# bash completion for ptdump(1)
_ptdump()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	-i|--input|--pt|--elf|--image|--to-perf-data) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--symfs|--snapshot|--to-raw|--buildid-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--mtc-freq|--nom-freq|--cpuid-0x15.eax|--cpuid-0x15.ebx) return ;;
	--pid|--tid|--cpu|--time|--symbol) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--call-trace --call-ret-trace --insn-trace --branches --events --stats --info --sideband --ranges --packets --pid --tid --cpu --time --symbol --srcline --symfs --buildid-dir -i --input --snapshot --pt --elf --image --mtc-freq --nom-freq --cpuid-0x15.eax --cpuid-0x15.ebx --to-perf-data --to-raw -q --quiet -h --help" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _ptdump ptdump
