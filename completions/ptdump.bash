# bash completion for ptdump(1)
_ptdump()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	-i|--input) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--symfs) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--pid|--tid|--cpu|--time|--symbol) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--call-trace --call-ret-trace --insn-trace --branches --events --stats --info --sideband --pid --tid --cpu --time --symbol --srcline --symfs -i --input -q --quiet -h --help" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _ptdump ptdump
