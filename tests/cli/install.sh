#!/usr/bin/env bash
# make install honours PREFIX and DESTDIR and installs binaries, the plugin,
# man pages and completions; the installed ptrec finds its installed plugin.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
d=$T_TMP/dest
t_run "make install" 0 make -s -C "$top" B="${B:-build}" install DESTDIR="$d" PREFIX=/opt/pt
for f in bin/ptrec bin/ptdump lib/ptrec/ptrec-emu.so share/man/man1/ptrec.1 share/man/man1/ptrec-record.1 \
	share/man/man1/ptrec-check.1 share/man/man1/ptrec-list.1 share/man/man1/ptdump.1 \
	share/man/man5/ptrec-file.5 share/man/man7/ptrec-emulate.7 \
	share/bash-completion/completions/ptrec share/bash-completion/completions/ptdump; do
	[ -e "$d/opt/pt/$f" ] && t_pass "installed $f" || t_fail "installed $f"
done
t_eq "binaries executable" 755 "$(stat -c %a "$d/opt/pt/bin/ptrec")"
for m in "$d"/opt/pt/share/man/man*/*; do
	if w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null) && [ -z "$w" ]; then
		t_pass "man page renders cleanly: ${m##*/}"
	else
		t_fail "man page renders cleanly: ${m##*/}" "$w"
	fi
done
t_run "make uninstall" 0 make -s -C "$top" B="${B:-build}" uninstall DESTDIR="$d" PREFIX=/opt/pt
t_eq "uninstall removes the files" "" "$(find "$d" -type f)"
t_done
