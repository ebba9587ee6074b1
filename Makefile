# tbctl: build the BPF objects, their skeletons, tbctl, tools and tests.
BUILD   ?= build
ARCH    := $(shell uname -m)
CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool

# Debian keeps asm/ under the multiarch directory; BPF builds need it.
ARCH_INC := -I/usr/include/$(ARCH)-linux-gnu
BPF_CFLAGS := -O2 -g -target bpf -Wall -Werror $(ARCH_INC) -Ibpf
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Werror -Wno-missing-field-initializers -std=gnu11 -Ibpf -Iuser -I$(BUILD) $(ARCH_INC)
LDLIBS  := -lbpf -lelf -lz -lmnl

BPF_HDRS := $(wildcard bpf/*.h)
USER_LIB := user/prefix.c user/ruleset.c user/units.c user/state.c user/output.c user/qdisc.c user/upgrade.c
TBCTL_SRC := user/tbctl.c user/batch.c user/cmd_attach.c user/cmd_rule.c user/cmd_show.c user/cmd_config.c $(USER_LIB)
USER_HDRS := $(wildcard user/*.h)

TBCTL   := $(BUILD)/tbctl
UNIT    := $(BUILD)/tests/test_bucket $(BUILD)/tests/test_charge $(BUILD)/tests/test_parse $(BUILD)/tests/test_units
PROG    := $(BUILD)/tests/test_prog
TOOLS   := $(BUILD)/tbgen $(BUILD)/tbbench

.PHONY: all deps test unit demo bench clean
# Keep the BPF objects: the skeletons embed them, tbbench loads them.
.SECONDARY:
all: $(TBCTL) $(UNIT) $(PROG) $(TOOLS)

$(BUILD) $(BUILD)/tests:
	mkdir -p $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@

$(TBCTL): $(TBCTL_SRC) $(USER_HDRS) $(BPF_HDRS) $(BUILD)/tb.skel.h
	$(CC) $(CFLAGS) $(TBCTL_SRC) -o $@ $(LDLIBS) -ljson-c

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BPF_HDRS) $(USER_HDRS) tests/*.h $(USER_LIB) $(BUILD)/tb.skel.h | $(BUILD)/tests
	$(CC) $(CFLAGS) $< $(USER_LIB) -o $@ $(LDLIBS) -ljson-c

$(PROG): tests/prog/test_prog.c tests/*.h $(USER_LIB) $(USER_HDRS) $(BUILD)/tb.skel.h | $(BUILD)/tests
	$(CC) $(CFLAGS) $< $(USER_LIB) -o $@ $(LDLIBS) -ljson-c -lpthread

$(BUILD)/tbgen: tools/tbgen.c | $(BUILD)
	$(CC) $(CFLAGS) $< -o $@

$(BUILD)/tbbench: tools/tbbench.c $(USER_LIB) $(USER_HDRS) $(BUILD)/tb.skel.h $(BUILD)/bench.skel.h | $(BUILD)
	$(CC) $(CFLAGS) $< $(USER_LIB) -o $@ $(LDLIBS) -ljson-c -lpthread -lm

# Installs what a fresh Debian machine lacks, mounts bpffs, then builds.
deps:
	tools/deps.sh

test: deps
	$(MAKE) all
	tests/run.sh

unit: $(UNIT)
	for t in $(UNIT); do $$t || exit 1; done

demo: deps
	$(MAKE) all
	tools/demo.sh

bench: deps
	$(MAKE) all
	tools/bench.sh

clean:
	rm -rf $(BUILD)
