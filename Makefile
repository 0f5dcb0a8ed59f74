# ptrec: targeted hardware instruction tracing (Intel PT, CoreSight) with AUX pause/resume.
#
#   make              build ptrec, ptdump and the software-tracer plugin into build/
#   make check        build and run every test suite; ends with "N passed, N failed, N skipped"
#   make check SANITIZE=1   the same with AddressSanitizer + UndefinedBehaviorSanitizer (build/san/)
#   make deps         install the Debian packages needed to build, test and run (root)
#   make install      PREFIX=/usr/local DESTDIR= : binaries, plugin, man pages, completions
#   make demo         the main job: record a real program and decode it
#   make cross-arm64  ptrec, ptdump and the unit tests for arm64 (build/arm64), with
#                     Debian's aarch64 cross compiler and arm64 multiarch libraries
#   make check-arm64  those unit tests under qemu-aarch64 ("N passed, N failed, N skipped")
#   make check-hw     on a machine with intel_pt or cs_etm (as root): the end-to-end
#                     recordings on the tracer, checked without ground truth, and a short
#                     report to paste into a bug report ($(B)/check-hw-report.txt); skips
#                     cleanly elsewhere
#   make deps-system  the whole-system software tracer's packages (qemu-system-x86, a kernel)
#   make check-system its tests (tests/system/: each boots a guest under TCG)
#   make fuzz-smoke   every fuzz target under libFuzzer for 60 s (make fuzz: longer)
#   make fuzz-afl     the same targets built and run by afl++
#
# Sources are picked up by wildcard: src/*/*.c and decoders/*.c form libprec.a,
# cmd/ptrec*.c make ptrec, cmd/ptdump*.c make ptdump, emulate/*.c make the QEMU
# plugin, tests/unit/test_*.c are one test binary each (with tests/support/*.c).
# Includes name their folder ("session/session.h", "decoders/decoder.h"): the
# folders of src/ are the layers of docs/DESIGN.md, and tests/cli/layers.sh
# (in make check) fails on an include that goes up a layer or round a cycle.

PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR   ?= $(PREFIX)/bin
LIBDIR   ?= $(PREFIX)/lib
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

CC       ?= cc
PKG_CONFIG ?= pkg-config
V        ?= 0
Q        := $(if $(filter 1,$(V)),,@)

ifeq ($(SANITIZE),1)
B        ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT      ?= -O1
else ifeq ($(SANITIZE),fuzz)
# libFuzzer builds of tests/fuzz (make fuzz, fuzz-smoke): clang, coverage,
# ASan + UBSan, and a trace-file reader that accepts any checksum.
B        ?= build/fuzz
CC       := clang
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
CPPFLAGS += -DPREC_FUZZING
OPT      ?= -O1
else ifeq ($(SANITIZE),afl)
# afl++ builds of the same fuzz targets (make fuzz-afl): afl-clang-fast's
# instrumentation, ASan + UBSan, its libFuzzer driver (-fsanitize=fuzzer).
B        ?= build/afl
CC       := afl-clang-fast
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
CPPFLAGS += -DPREC_FUZZING
OPT      ?= -O1
else
B        ?= build
SANFLAGS :=
OPT      ?= -O2
endif

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wstrict-prototypes
ifeq ($(WERROR),1)
WARN     += -Werror
endif

PKGS     := libzstd liblzma libelf libdw opencsd_c_api capstone
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
ifeq ($(PKG_LIBS),)
PKG_LIBS := -lzstd -llzma -lelf -ldw -lopencsd_c_api -lopencsd -lcapstone
endif
# libipt ships no .pc file: link it directly.
IPT_LIBS := -lipt
# NO_LIBIPT=1 builds without libipt (Debian has no arm64 package of it): no
# Intel PT decoding (decoders/intel_pt_none.c refuses it), no --packets, and
# no unit test that includes <intel-pt.h>. The software tracer's plugin needs
# libipt and is not part of such a build.
ifeq ($(NO_LIBIPT),1)
IPT_LIBS :=
CPPFLAGS += -DPREC_NO_LIBIPT
IPT_DROP := decoders/intel_pt.c decoders/ipt_walk.c
IPT_TESTS := $(shell grep -l '^\#include <intel-pt.h>' tests/unit/test_*.c)
else
IPT_DROP := decoders/intel_pt_none.c
IPT_TESTS :=
endif

CPPFLAGS += -D_GNU_SOURCE -Isrc -I. -DPTREC_LIBDIR='"$(LIBDIR)/ptrec"'
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 $(WARN) $(SANFLAGS) $(PKG_CFLAGS) -MMD -MP
LDFLAGS  += $(SANFLAGS)
LDLIBS   := $(IPT_LIBS) $(PKG_LIBS) -lpthread -lm

LIB_SRC  := $(filter-out $(IPT_DROP),$(sort $(wildcard src/*/*.c decoders/*.c)))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
PTREC_SRC  := $(sort $(wildcard cmd/ptrec*.c cmd/cli*.c))
PTDUMP_SRC := $(sort $(wildcard cmd/ptdump*.c cmd/cli*.c))
PLUGIN_SRC := $(sort $(wildcard emulate/*.c))
# Code both software tracers' plugins share.
PLUGIN_COMMON_SRC := $(sort $(wildcard emulate/common/*.c))
# The whole-system software tracer (qemu-system-x86_64 plugin writing Intel PT
# for a guest's user and kernel code) and the guest's first process, a static
# program put into the guest's initramfs.
SYS_PLUGIN_SRC := $(sort $(wildcard emulate/system/*.c)) emulate/pt_enc.c emulate/x86.c \
                  emulate/common/sideband.c
SYS_PLUGIN := $(B)/ptrec-emu-sys.so
GUEST_INIT := $(B)/ptrec-guest
# The CoreSight software tracer (qemu-aarch64 plugin writing ETMv4 trace).
ETM_PLUGIN_SRC := $(sort $(wildcard emulate/etm/*.c))
ETM_PLUGIN := $(if $(ETM_PLUGIN_SRC),$(B)/ptrec-emu-etm.so)
# aarch64 test programs for the CoreSight tests, built static with the cross compiler.
ARM_CC ?= aarch64-linux-gnu-gcc
ARM_PROG_SRC := $(sort $(wildcard tests/progs-arm64/*.c))
ARM_PROG_BIN := $(ARM_PROG_SRC:tests/progs-arm64/%.c=$(B)/progs-arm64/%)
TEST_SRC := $(filter-out $(IPT_TESTS),$(sort $(wildcard tests/unit/test_*.c)))
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
TEST_LIB := $(sort $(wildcard tests/unit/harness*.c tests/support/*.c))
# Test tools the shell suites run (tests/tools/*.c, linked with libprec).
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(B)/tools/%)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
# Test programs for the software tracer: plain x86-64 binaries, no sanitizers.
PROG_SRC := $(sort $(wildcard tests/progs/*.c))
PROG_BIN := $(PROG_SRC:tests/progs/%.c=$(B)/progs/%)

PLUGIN   := $(B)/ptrec-emu.so

# Fuzz targets (tests/fuzz/fuzz_*.c, libFuzzer entry points). make check
# builds each with a plain main() (tests/fuzz/replay.c) and replays the
# corpus and the regression inputs; make fuzz / fuzz-smoke build them with
# libFuzzer (SANITIZE=fuzz).
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(B)/fuzz-replay/%)
FUZZ_BIN := $(FUZZ_NAMES:%=$(B)/fuzz/%)

all: $(B)/ptrec $(B)/ptdump $(PLUGIN) $(ETM_PLUGIN) $(SYS_PLUGIN) $(GUEST_INIT)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/libprec.a: $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/ptrec: $(PTREC_SRC:%.c=$(B)/%.o) $(B)/libprec.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/ptdump: $(PTDUMP_SRC:%.c=$(B)/%.o) $(B)/libprec.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The QEMU plugin is loaded into qemu-x86_64, which is not built with the
# sanitizers, so it is always built without them.
$(B)/emu/%.o: emulate/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (plugin)"
	$(Q)$(CC) $(CPPFLAGS) -Iemulate $(OPT) -g -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(PLUGIN): $(PLUGIN_SRC:emulate/%.c=$(B)/emu/%.o) $(PLUGIN_COMMON_SRC:emulate/%.c=$(B)/emu/%.o)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $^ $(IPT_LIBS) -lpthread

$(SYS_PLUGIN): $(SYS_PLUGIN_SRC:emulate/%.c=$(B)/emu/%.o)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $^ $(IPT_LIBS) -lpthread

# Static: the guest has no C library of its own. libbpf reads the kernel's
# BTF; its static archive needs libelf's and zlib's.
GUEST_LIBS := $(shell $(PKG_CONFIG) --static --libs libbpf 2>/dev/null)
ifeq ($(GUEST_LIBS),)
GUEST_LIBS := -lbpf -lelf -lz
endif
$(GUEST_INIT): emulate/guest/ptrec-guest.c src/record/emusys_mb.h
	@mkdir -p $(dir $@)
	@echo "  CC      $< (guest init, static)"
	$(Q)$(CC) -Isrc -O2 -g -static -std=gnu11 $(WARN) -o $@ $< $(GUEST_LIBS)

$(B)/emu/etm/%.o: emulate/etm/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (plugin)"
	$(Q)$(CC) $(CPPFLAGS) -Iemulate -Iemulate/etm $(OPT) -g -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(B)/ptrec-emu-etm.so: $(ETM_PLUGIN_SRC:emulate/etm/%.c=$(B)/emu/etm/%.o) $(PLUGIN_COMMON_SRC:emulate/%.c=$(B)/emu/%.o)
	@echo "  LD      $@"
	$(Q)$(CC) -shared -o $@ $^ -lpthread

$(B)/progs-arm64/%: tests/progs-arm64/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (aarch64 test program)"
	$(Q)$(ARM_CC) -O1 -g -static -fno-omit-frame-pointer -Wall -o $@ $< -pthread \
		$$(sed -n 's,^// LDFLAGS: ,,p' $<)

$(B)/tests/%: tests/unit/%.c $(TEST_LIB:%.c=$(B)/%.o) $(B)/libprec.a
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit -Itests/support $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_LIB:%.c=$(B)/%.o) $(B)/libprec.a $(LDLIBS)

$(B)/tools/%: tests/tools/%.c $(B)/libprec.a
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libprec.a $(LDLIBS)

$(B)/bench/%: bench/%.c $(B)/libprec.a
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libprec.a $(LDLIBS)

# Each test program may name extra link flags in a line "// LDFLAGS: ...".
$(B)/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (test program)"
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -fcf-protection=none -Wall -o $@ $< -pthread \
		$$(sed -n 's,^// LDFLAGS: ,,p' $<)

$(B)/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/fuzz.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(B)/libprec.a
	@mkdir -p $(dir $@)
	@echo "  CC      $< (replay)"
	$(Q)$(CC) $(CPPFLAGS) -Itests/fuzz $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/fuzz.c \
		tests/fuzz/replay.c $(B)/libprec.a $(LDLIBS)

$(B)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.c tests/fuzz/fuzz.h $(B)/libprec.a
	@mkdir -p $(dir $@)
	@echo "  CC      $< (libFuzzer driver: $(CC))"
	$(Q)$(CC) $(CPPFLAGS) -Itests/fuzz $(CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< \
		tests/fuzz/fuzz.c $(B)/libprec.a $(LDLIBS)

fuzz-bins: $(FUZZ_BIN) $(B)/ptrec

# bench/ipt_floor too: tests/cli/rawpt.sh decodes its raw streams with it.
tests: all $(TEST_BIN) $(TOOL_BIN) $(PROG_BIN) $(ARM_PROG_BIN) $(FUZZ_REPLAY) $(if $(filter 1,$(NO_LIBIPT)),,$(B)/bench/ipt_floor)

bench: all $(BENCH_BIN)

check: deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)B=$(B) SANITIZE=$(SANITIZE) tests/run-all.sh

# Every fuzz target for 60 s (SECONDS=...) with memory, time and output
# limits; ends with "N passed, N failed". make fuzz TARGET=fuzz_x SECONDS=N
# runs one target for longer (corpus kept in build/fuzz/corpus/TARGET).
fuzz-smoke: deps
	$(Q)$(MAKE) --no-print-directory SANITIZE=fuzz fuzz-bins
	$(Q)B=build/fuzz tests/fuzz/run.sh smoke $(if $(SECONDS),$(SECONDS),60)

fuzz: deps
	$(Q)$(MAKE) --no-print-directory SANITIZE=fuzz fuzz-bins
	$(Q)B=build/fuzz tests/fuzz/run.sh long $(if $(SECONDS),$(SECONDS),600) $(TARGET)

# The same targets built and run by afl++ (Debian's afl++): make fuzz-afl
# TARGET=fuzz_x SECONDS=N (default every target for 60 s); findings in
# build/afl/out/TARGET/default/crashes. Ends with "N passed, N failed".
fuzz-afl: deps
	$(Q)$(MAKE) --no-print-directory SANITIZE=afl fuzz-bins
	$(Q)B=build/afl tests/fuzz/run-afl.sh $(if $(SECONDS),$(SECONDS),60) $(TARGET)

check-hw: deps
	$(Q)$(MAKE) --no-print-directory all $(PROG_BIN)
	$(Q)B=$(B) PTREC_BACKEND=hw tests/run-all.sh hw; st=$$?; \
		echo "the report to paste into a bug report: $(B)/check-hw-report.txt"; exit $$st

# The arm64 cross build: its own build directory, no libipt (see NO_LIBIPT),
# no software-tracer plugins (they load into the host's qemu).
ARM64_B ?= build/arm64
ARM64_CC ?= aarch64-linux-gnu-gcc
cross-arm64:
	$(Q)./scripts/install-deps.sh arm64
	$(Q)$(MAKE) --no-print-directory B=$(ARM64_B) CC=$(ARM64_CC) NO_LIBIPT=1 \
		PKG_CONFIG='PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config' \
		$(ARM64_B)/ptrec $(ARM64_B)/ptdump arm64-unit-tests

arm64-unit-tests: $(TEST_BIN)

# The native build records the traces the arm64 ptdump decodes (tests/run-arm64.sh).
check-arm64: cross-arm64
	$(Q)$(MAKE) --no-print-directory all $(ARM_PROG_BIN) $(PROG_BIN)
	$(Q)B=$(ARM64_B) NATIVE_B=$(B) tests/run-arm64.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)B=$(B) ./demo.sh

deps:
	$(Q)./scripts/install-deps.sh

deps-system:
	$(Q)./scripts/install-deps.sh system

# The whole-system tracer's suite: guests boot under TCG, so it is apart from check.
check-system: deps-system
	$(Q)$(MAKE) --no-print-directory all
	$(Q)B=$(B) tests/run-all.sh system

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/ptrec $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(B)/ptrec $(B)/ptdump $(DESTDIR)$(BINDIR)/
	install -m 0644 $(PLUGIN) $(ETM_PLUGIN) $(SYS_PLUGIN) $(DESTDIR)$(LIBDIR)/ptrec/
	install -m 0755 $(GUEST_INIT) $(DESTDIR)$(LIBDIR)/ptrec/
	install -m 0644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 man/*.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 0644 completions/ptrec.bash $(DESTDIR)$(BASHCOMPDIR)/ptrec
	install -m 0644 completions/ptdump.bash $(DESTDIR)$(BASHCOMPDIR)/ptdump

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ptrec $(DESTDIR)$(BINDIR)/ptdump
	rm -rf $(DESTDIR)$(LIBDIR)/ptrec
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard man/*.1))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man5/%,$(wildcard man/*.5))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man7/%,$(wildcard man/*.7))
	rm -f $(DESTDIR)$(BASHCOMPDIR)/ptrec $(DESTDIR)$(BASHCOMPDIR)/ptdump

clean:
	rm -rf build

.PHONY: all tests bench check check-hw check-system deps-system demo deps install uninstall clean fuzz fuzz-smoke fuzz-afl fuzz-bins \
	cross-arm64 arm64-unit-tests check-arm64
.DELETE_ON_ERROR:
.SECONDARY:

-include $(shell find $(B) -name '*.d' 2>/dev/null)
