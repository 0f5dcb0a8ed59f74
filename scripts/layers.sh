#!/usr/bin/env bash
# The layering rule of docs/DESIGN.md, checked over the #include "..." lines:
#   - every project include names its folder ("session/session.h"), except a
#     cmd/ main's own cmd/ headers;
#   - a folder includes only itself and the folders below it (LAYERS below);
#   - no two headers or sources include each other round a cycle;
#   - the recorder's sources call the perf interface only through
#     record/kernel.h (its backends kernel_sys.c and kmodel.c excepted).
# Usage: scripts/layers.sh [TOP]   (default: the repository this script is in)
# Prints one line per violation and exits 1 if there is any, else prints a
# summary and exits 0.
set -u
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 2

# Each folder and the folders it may include (besides itself). The order is
# the data flow: cmd -> spec/record/interop/output -> decoders -> session ->
# tracefile -> base.
declare -A LAYERS=(
	[base]=""
	[tracefile]="base"
	[session]="tracefile base"
	[decoders]="session tracefile base"
	[spec]="base"
	[interop]="decoders session tracefile base"
	[output]="interop decoders session tracefile base"
	[record]="spec tracefile base"
	[cmd]="spec record interop output decoders session tracefile base"
)

folder_of() { # path -> layer name ("" if not a layered folder)
	case $1 in
	src/*/*) local f=${1#src/}; echo "${f%%/*}" ;;
	decoders/*) echo decoders ;;
	cmd/*) echo cmd ;;
	*) echo "" ;;
	esac
}
path_of() { # include name -> repository path ("" if none)
	case $1 in
	decoders/*) [ -e "$1" ] && echo "$1" ;;
	*/*) [ -e "src/$1" ] && echo "src/$1" ;;
	esac
}

bad=0 nedges=0 nfiles=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
files=$(ls src/*/*.[ch] decoders/*.[ch] cmd/*.[ch] 2>/dev/null)
for f in $files; do
	nfiles=$((nfiles + 1))
	from=$(folder_of "$f")
	if [ -z "${LAYERS[$from]+x}" ]; then
		echo "$f: folder '$from' is not a layer (add it to scripts/layers.sh and docs/DESIGN.md)"
		bad=$((bad + 1))
		continue
	fi
	while IFS=: read -r line inc; do
		inc=${inc#*\"}
		inc=${inc%%\"*}
		if [ "$from" = cmd ] && [ "${inc#*/}" = "$inc" ] && [ -e "cmd/$inc" ]; then
			echo "cmd/$inc $f" >>"$edges"
			continue
		fi
		p=$(path_of "$inc")
		if [ -z "$p" ]; then
			echo "$f:$line: #include \"$inc\" names no folder-qualified project header"
			bad=$((bad + 1))
			continue
		fi
		to=$(folder_of "$p")
		nedges=$((nedges + 1))
		echo "$p $f" >>"$edges"
		[ "$to" = "$from" ] && continue
		case " ${LAYERS[$from]} " in
		*" $to "*) ;;
		*)
			echo "$f:$line: $from/ includes $inc: $to/ is not below $from/"
			bad=$((bad + 1))
			;;
		esac
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done

# A header and its source are one module: x.c's includes are x.h's too, so a
# cycle through a pair of modules shows up as a cycle of headers.
mod_edges=$(mktemp)
trap 'rm -f "$edges" "$mod_edges"' EXIT
while read -r dep user; do
	echo "${dep%.[ch]} ${user%.[ch]}"
done <"$edges" | awk '$1 != $2' | sort -u >"$mod_edges"
if ! tsort "$mod_edges" >/dev/null 2>"$edges.loop"; then
	echo "include cycle between modules:"
	grep -v 'input contains a loop' "$edges.loop" | sed 's/^tsort: /  /'
	bad=$((bad + 1))
fi
rm -f "$edges.loop"

# The recorder reaches the kernel's perf interface only through its seam
# (record/kernel.h): perf_event_open, ioctl and mmap/munmap are issued, and
# the PERF_EVENT_IOC_* requests handled, by the backends alone: kernel_sys.c
# (the real kernel) and kmodel.c (the model). poll(2) is not checked: the
# software tracer's runner polls its plugin socket, which is no event.
while IFS=: read -r f line _; do
	echo "$f:$line: calls the kernel's perf interface directly (use record/kernel.h)"
	bad=$((bad + 1))
done < <(ls src/record/*.c 2>/dev/null | grep -vE '^src/record/(kernel_sys|kmodel)\.c$' |
	xargs -r grep -nE '(^|[^_>.a-z])(prec_perf_event_open|ioctl|mmap|munmap)[[:space:]]*\(|PERF_EVENT_IOC_' |
	grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)')

if [ "$bad" -ne 0 ]; then
	echo "layers: $bad violation(s)"
	exit 1
fi
echo "layers: $nfiles files, $nedges project includes, no upward include, no cycle, one way into the kernel"
