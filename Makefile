# ptrec: targeted hardware instruction tracing (Intel PT, CoreSight) with AUX pause/resume.
#
#   make              build ptrec, ptdump and the software-tracer plugin into build/
#   make check        build and run every test suite; ends with "N passed, N failed, N skipped"
#   make check SANITIZE=1   the same with AddressSanitizer + UndefinedBehaviorSanitizer (build/san/)
#   make deps         install the Debian packages needed to build, test and run (root)
#   make install      PREFIX=/usr/local DESTDIR= : binaries, plugin, man pages, completions
#   make demo         the main job: record a real program and decode it
#
# Sources are picked up by wildcard: src/*.c and decoders/*.c form libprec.a,
# cmd/ptrec*.c make ptrec, cmd/ptdump*.c make ptdump, emulate/*.c make the QEMU
# plugin, tests/unit/test_*.c are one test binary each.

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
else
B        ?= build
SANFLAGS :=
OPT      ?= -O2
endif

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wstrict-prototypes
ifeq ($(WERROR),1)
WARN     += -Werror
endif

PKGS     := libzstd libelf libdw opencsd_c_api capstone
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
ifeq ($(PKG_LIBS),)
PKG_LIBS := -lzstd -lelf -ldw -lopencsd_c_api -lopencsd -lcapstone
endif
# libipt ships no .pc file: link it directly.
IPT_LIBS := -lipt

CPPFLAGS += -D_GNU_SOURCE -Isrc -Idecoders -DPTREC_LIBDIR='"$(LIBDIR)/ptrec"'
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 $(WARN) $(SANFLAGS) $(PKG_CFLAGS) -MMD -MP
LDFLAGS  += $(SANFLAGS)
LDLIBS   := $(IPT_LIBS) $(PKG_LIBS) -lpthread -lm

LIB_SRC  := $(sort $(wildcard src/*.c decoders/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
PTREC_SRC  := $(sort $(wildcard cmd/ptrec*.c cmd/cli*.c))
PTDUMP_SRC := $(sort $(wildcard cmd/ptdump*.c cmd/cli*.c))
PLUGIN_SRC := $(sort $(wildcard emulate/*.c))
# Code both software tracers' plugins share.
PLUGIN_COMMON_SRC := $(sort $(wildcard emulate/common/*.c))
# The CoreSight software tracer (qemu-aarch64 plugin writing ETMv4 trace).
ETM_PLUGIN_SRC := $(sort $(wildcard emulate/etm/*.c))
ETM_PLUGIN := $(if $(ETM_PLUGIN_SRC),$(B)/ptrec-emu-etm.so)
# aarch64 test programs for the CoreSight tests, built static with the cross compiler.
ARM_CC ?= aarch64-linux-gnu-gcc
ARM_PROG_SRC := $(sort $(wildcard tests/progs-arm64/*.c))
ARM_PROG_BIN := $(ARM_PROG_SRC:tests/progs-arm64/%.c=$(B)/progs-arm64/%)
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
TEST_LIB := $(sort $(wildcard tests/unit/harness*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
# Test programs for the software tracer: plain x86-64 binaries, no sanitizers.
PROG_SRC := $(sort $(wildcard tests/progs/*.c))
PROG_BIN := $(PROG_SRC:tests/progs/%.c=$(B)/progs/%)

PLUGIN   := $(B)/ptrec-emu.so

all: $(B)/ptrec $(B)/ptdump $(PLUGIN) $(ETM_PLUGIN)

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
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_LIB:%.c=$(B)/%.o) $(B)/libprec.a $(LDLIBS)

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

tests: all $(TEST_BIN) $(PROG_BIN) $(ARM_PROG_BIN)

bench: all $(BENCH_BIN)

check: deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)B=$(B) SANITIZE=$(SANITIZE) tests/run-all.sh

check-hw: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)B=$(B) tests/run-all.sh hw

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)B=$(B) ./demo.sh

deps:
	$(Q)./scripts/install-deps.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/ptrec $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(B)/ptrec $(B)/ptdump $(DESTDIR)$(BINDIR)/
	install -m 0644 $(PLUGIN) $(ETM_PLUGIN) $(DESTDIR)$(LIBDIR)/ptrec/
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

.PHONY: all tests bench check check-hw demo deps install uninstall clean
.DELETE_ON_ERROR:
.SECONDARY:

-include $(shell find $(B) -name '*.d' 2>/dev/null)
