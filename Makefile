# tbctl: build the BPF objects, their skeletons, tbctl, tools and tests.
BUILD   ?= build
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config

# BPF objects are built for no host, but include the host's UAPI headers
# (asm/ sits in a multiarch folder on Debian): the host compiler's own
# system include directories, asked of it, searched after everything else.
SYS_INC := $(shell $(CC) -E -v -x c /dev/null 2>&1 | \
	awk '/search starts here:/ { on = 1; next } /End of search list/ { on = 0 } on { print "-idirafter " $$1 }')
# ABI_FLAGS picks a layout for both sides (tests/e2e/upgrade.sh builds the
# fixture of a later one with -DTB_FIXTURE_NEXT_LAYOUT).
ABI_FLAGS ?=
# Addresses are written as 32-bit words and compared as 64-bit ones
# (bpf/logic/table.h), so no build may assume the two never alias, as the
# kernel's own never does.
# The objects' debug paths are relative, so that the skeletons (and a
# package) are the same wherever the tree is built.
# The machine the objects are for, the compiler's (bpf/logic/order.h
# orders memory as that machine needs): x86 or arm64.
BPF_ARCH := $(shell $(CC) -dumpmachine | sed -e 's/^x86_64-.*/x86/' -e 's/^i[3-6]86-.*/x86/' -e 's/^aarch64-.*/arm64/')
BPF_CFLAGS := -O2 -g -target bpf -fno-strict-aliasing -Wall -Werror -Ibpf $(SYS_INC) $(ABI_FLAGS) \
	      -D__TARGET_ARCH_$(BPF_ARCH) -fdebug-prefix-map=$(CURDIR)=.
# The version, in one place: the Debian changelog's top entry.
VERSION := $(shell awk -F '[()]' 'NR == 1 { print $$2 }' debian/changelog)
# CFLAGS, CPPFLAGS and LDFLAGS are the user's (make CFLAGS=-fsanitize=address
# keeps the rest; a package build brings dpkg-buildflags' hardening).
CFLAGS  ?= -O2 -g
TB_CFLAGS = $(CPPFLAGS) $(CFLAGS) -DTBCTL_VERSION='"$(VERSION)"' -DTB_XDP_OBJECT_DIR='"$(XDP_OBJECT_DIR)"' $(ABI_FLAGS) -fno-strict-aliasing -Wall -Wextra -Werror -Wno-missing-field-initializers -std=gnu11 -Ibpf -Iuser \
	    -I$(BUILD)
# Every object lists the headers it read (.d files), so a change rebuilds
# exactly what depends on it.
DEPFLAGS = -MMD -MP
LDLIBS  := -lxdp -lbpf -lelf -lz -lmnl -lhiredis
# Where libxdp keeps the dispatcher it ships (user/lib/xdisp.c loads it to
# swap tbctl's program in place): its library folder's bpf/.
XDP_OBJECT_DIR := $(shell $(PKG_CONFIG) --variable=libdir libxdp 2>/dev/null)/bpf

# User space in layers (docs/design.md): each folder uses only those
# below it (lib, view, then fleet and exporter, then cli), as
# tests/layering.sh checks.
layer_src = $(sort $(wildcard user/$(1)/*.c))
TBCTL_SRC := $(call layer_src,cli)
OBJ     := $(BUILD)/obj
layer_obj = $(patsubst %.c,$(OBJ)/%.o,$(call layer_src,$(1)))
# Each layer below the CLI is an archive, so that a test or tool links
# what it uses and no more; listed from the top down, as the linker
# resolves each archive against those after it.
LAYER_AR := $(foreach l,exporter fleet view lib,$(BUILD)/ar/libtb-$(l).a)
LIB_OBJ := $(LAYER_AR)
TBCTL_OBJ := $(TBCTL_SRC:%.c=$(OBJ)/%.o)

TBCTL   := $(BUILD)/tbctl
UNIT    := $(BUILD)/tests/test_bucket $(BUILD)/tests/test_charge $(BUILD)/tests/test_parse $(BUILD)/tests/test_units \
	   $(BUILD)/tests/test_heap $(BUILD)/tests/test_table $(BUILD)/tests/test_place $(BUILD)/tests/test_group \
	   $(BUILD)/tests/test_match $(BUILD)/tests/test_fleet $(BUILD)/tests/test_hold $(BUILD)/tests/test_devkey \
	   $(BUILD)/tests/test_event $(BUILD)/tests/test_ban
# Against a redis-server it starts: a test of make test, not of make unit.
STORE_TEST := $(BUILD)/tests/test_store
PROG    := $(BUILD)/tests/test_prog
TOOLS   := $(BUILD)/tbgen $(BUILD)/tbbench $(BUILD)/fleetsim $(BUILD)/delayline
# Another tool's program on a tcx hook, for the tests (tests/peer/).
TCXPEER := $(BUILD)/tests/tcxpeer

.SECONDEXPANSION:
.PHONY: all deps test test-full unit demo bench clean install fixture deb arm64 deb-arm64
# Keep the BPF objects: the skeletons embed them, tbbench loads them.
.SECONDARY:
# A failed step (a bpftool that dies mid-skeleton) leaves no truncated file.
.DELETE_ON_ERROR:
all: $(TBCTL) $(UNIT) $(STORE_TEST) $(PROG) $(TOOLS) $(TCXPEER)

$(BUILD) $(BUILD)/tests:
	mkdir -p $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/%.bpf.o: tests/peer/%.bpf.c | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@

# The fleet store's Lua function, a file of its own, as a C string for
# user/fleet/store.c to load into each server.
$(BUILD)/grant_lua.h: user/fleet/grant.lua | $(BUILD)
	{ echo 'static const char grant_lua[] ='; \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/\t"/; s/$$/\\n"/' $<; echo ';'; } >$@

# The skeletons are generated headers: made before any C that may include
# them; the .d files then say who does.
$(OBJ)/%.o: %.c | $(BUILD)/tb.skel.h $(BUILD)/anchor.skel.h $(BUILD)/bench.skel.h $(BUILD)/peer.skel.h $(BUILD)/grant_lua.h
	@mkdir -p $(@D)
	$(CC) $(TB_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/ar/libtb-%.a: $$(call layer_obj,$$*)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(TBCTL): $(TBCTL_OBJ) $(LIB_OBJ)
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ljson-c -lmicrohttpd -lncursesw -lm

$(BUILD)/tests/test_%: $(OBJ)/tests/unit/test_%.o $(LIB_OBJ) | $(BUILD)/tests
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ljson-c

# The program tests: a topic a file, one binary.
PROG_SRC := $(sort $(wildcard tests/prog/*.c))
$(PROG): $(PROG_SRC:%.c=$(OBJ)/%.o) $(LIB_OBJ) | $(BUILD)/tests
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ljson-c -lpthread

$(TCXPEER): $(OBJ)/tests/peer/tcxpeer.o $(LIB_OBJ) | $(BUILD)/tests
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tbgen: $(OBJ)/tools/tbgen.o | $(BUILD)
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ -lm

$(BUILD)/delayline: $(OBJ)/tools/delayline.o | $(BUILD)
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@

$(BUILD)/fleetsim: $(OBJ)/tools/fleetsim.o $(LIB_OBJ) | $(BUILD)
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ljson-c -lm

$(BUILD)/tbbench: $(OBJ)/tools/tbbench.o $(LIB_OBJ) | $(BUILD)
	$(CC) $(TB_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS) -ljson-c -lpthread -lm

# Not those of the other builds in it (next, arm64), nor the VMs' roots.
-include $(shell find $(BUILD) \( -path '$(BUILD)/next' -o -path '$(BUILD)/arm64' -o -path '$(BUILD)/vm' \) -prune \
	-o -name '*.d' -type f -print 2>/dev/null)

# tbctl of the layout after this one, in $(BUILD)/next, for the upgrade
# tests (tests/e2e/upgrade.sh, tests/vm/e2e/upgrade.sh).
fixture:
	$(MAKE) BUILD=$(BUILD)/next ABI_FLAGS=-DTB_FIXTURE_NEXT_LAYOUT $(BUILD)/next/tbctl

# Installs what a fresh Debian machine lacks, mounts bpffs, then builds.
deps:
	tools/deps.sh

# Built in parallel (the builds, this machine's, the next layout's and
# arm64's, share nothing). The packages are built by tests/run.sh beside
# the benchmark's smoke run, where they keep no suite waiting; make
# test-full builds them first, for the VM's package suite.
test: deps
	$(MAKE) -j$$(nproc) all fixture arm64
	tests/run.sh

# Every kill point and every fuzz case, where make test tries a sample of
# them (TB_SEED): before a release, and after changing how tbctl
# publishes rules or upgrades pins.
test-full: deps
	$(MAKE) -j$$(nproc) all fixture arm64 deb deb-arm64
	TB_FULL=1 tests/run.sh

unit: $(UNIT)
	for t in $(UNIT); do $$t || exit 1; done

demo: deps
	$(MAKE) -j$$(nproc) all
	tools/demo.sh

# Every benchmark section, or the one SECTION names (tools/bench.sh lists
# them, each under 30 minutes): its figures replace the section's in
# docs/performance/sections/, and docs/performance.md is assembled anew
# from the latest run of every section.
bench: deps
	$(MAKE) -j$$(nproc) all
	BENCH_DOCS=docs tools/bench.sh $(SECTION)

# make install [PREFIX=/usr/local] [DESTDIR=...]: the binary, its man
# page, bash completion, the systemd units and an example configuration.
PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
UNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
install: $(TBCTL)
	install -D -m 0755 $(TBCTL) $(DESTDIR)$(SBINDIR)/tbctl
	install -D -m 0644 dist/tbctl.8 $(DESTDIR)$(MANDIR)/man8/tbctl.8
	install -D -m 0644 dist/tbctl.bash-completion $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tbctl
	install -d $(DESTDIR)$(UNITDIR)
	for u in tbctl@.service tbctl-exporter.service tbctl-fleet@.service tbctl-events@.service; do \
		sed 's|@SBINDIR@|$(SBINDIR)|g' dist/$$u >$(DESTDIR)$(UNITDIR)/$$u; done
	install -D -m 0644 dist/example.conf $(DESTDIR)$(PREFIX)/share/doc/tbctl/example.conf

# The Debian package (debian/) as dpkg-buildpackage -us -uc -b makes it,
# from a copy of the tree, whose dh clean leaves this build alone:
# $(BUILD)/deb/tbctl_$(VERSION)_amd64.deb.
# The package is built from a copy of the tree's files, in $(BUILD)/deb,
# for this machine; deb-arm64 cross-builds it for arm64 in
# $(BUILD)/deb-arm64 (tests/e2e/package.sh checks both with lintian).
DEB_DIR = $(BUILD)/deb$(if $(DEB_ARCH),-$(DEB_ARCH))
deb:
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/tbctl
	git ls-files -co --exclude-standard -z | xargs -0 cp -a --parents -t $(DEB_DIR)/tbctl
	cd $(DEB_DIR)/tbctl && env -u MAKEFLAGS -u MAKELEVEL DEB_BUILD_OPTIONS=parallel=$$(nproc) \
		dpkg-buildpackage $(if $(DEB_ARCH),-a $(DEB_ARCH)) -us -uc -b >../build.log 2>&1 || \
		{ tail -n 30 ../build.log; exit 1; }

deb-arm64:
	$(MAKE) DEB_ARCH=arm64 deb

# tbctl, its tools and tests for arm64, with Debian's cross toolchain and
# arm64 libraries (tools/deps.sh), in $(BUILD)/arm64: tests/vm/run --arch
# arm64 runs them in Debian's arm64 kernel.
arm64:
	$(MAKE) BUILD=$(BUILD)/arm64 CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar \
		PKG_CONFIG=aarch64-linux-gnu-pkg-config all

clean:
	rm -rf $(BUILD)
