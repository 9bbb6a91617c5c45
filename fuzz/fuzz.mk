# libFuzzer harnesses for the two parsers, built with clang into build-fuzz/ (never mixed with
# build/ or build-san/). Run from the project root:
#
#   make fuzz FUZZ_SECONDS=N      build, write the seeds, run each harness N seconds
#
# The library sources are compiled straight into the harnesses with ASan + UBSan (alignment
# included) and libFuzzer's coverage. Crashes land in build-fuzz/crash-*; the corpora the
# fuzzers grow in build-fuzz/corpus/; logs in build-fuzz/*.log.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
TM_CORPUS    ?= $(abspath ../shared/corpus)
FB           := build-fuzz
ARCH         := $(shell $(FUZZ_CC) -dumpmachine | cut -d- -f1)

SAN       := -fsanitize=address,undefined -fsanitize=alignment -fno-sanitize-recover=all
COMMON    := -std=c11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE -pthread -Iinclude $(SAN)
LIB_FLAGS := $(COMMON) -fsanitize=fuzzer-no-link -DTM_BUILDING_LIBRARY -ffp-contract=off
OWN_FLAGS := $(COMMON) -Wall -Wextra -Wconversion -Wshadow -Werror
LIBS      := -ljansson -llz4 -lpthread -lm

OBJ_DIR := $(FB)/obj
include mk/sources.mk

# Inputs larger than max_len are cut on loading (the big corpus files become truncated files,
# which is a class of their own); 64 KiB holds every seed mkseeds writes.
GGUF_RUN := -max_len=65536 -dict=fuzz/gguf.dict
ST_RUN   := -max_len=16384 -dict=fuzz/safetensors.dict
# A hang is a bug (-timeout: wall-clock seconds, loose because a shared machine can stall a
# process for seconds); so is an allocation sized by a number the input cannot back: no
# 64 KiB input may ask for 64 MB at once (-malloc_limit_mb).
RUN_FLAGS := -timeout=30 -report_slow_units=30 -malloc_limit_mb=64 -rss_limit_mb=1024 \
             -print_final_stats=1

.PHONY: fuzz fuzz-build seeds
.SECONDARY:
fuzz: fuzz-build seeds
	@echo "  FUZZ    gguf, $(FUZZ_SECONDS) s (log: $(FB)/fuzz_gguf.log)"
	$(FB)/fuzz_gguf $(GGUF_RUN) $(RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FB)/crash-gguf- $(FB)/corpus/gguf $(FB)/seeds/gguf \
	    2>&1 | tee $(FB)/fuzz_gguf.log | grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|==|SUMMARY|stat::)'
	@echo "  FUZZ    safetensors, $(FUZZ_SECONDS) s (log: $(FB)/fuzz_safetensors.log)"
	$(FB)/fuzz_safetensors $(ST_RUN) $(RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
	    -artifact_prefix=$(FB)/crash-safetensors- $(FB)/corpus/safetensors \
	    $(FB)/seeds/safetensors 2>&1 | tee $(FB)/fuzz_safetensors.log \
	    | grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|==|SUMMARY|stat::)'
	@! ls $(FB)/crash-* 2>/dev/null

fuzz-build: $(FB)/fuzz_gguf $(FB)/fuzz_safetensors

$(FB)/obj/src/%.o: src/%.c $(wildcard src/*/*.h src/*/*/*.h) include/tensormap.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(LIB_FLAGS) $(ISA_FLAGS) -c $< -o $@

$(FB)/obj/fuzz/%.o: fuzz/%.c fuzz/walk.h include/tensormap.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(OWN_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FB)/fuzz_%: $(FB)/obj/fuzz/fuzz_%.o $(FB)/obj/fuzz/walk.o $(LIB_OBJS)
	$(FUZZ_CC) $(SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS)

$(FB)/mkseeds: $(FB)/obj/fuzz/mkseeds.o $(LIB_OBJS)
	$(FUZZ_CC) $(SAN) -fsanitize=fuzzer-no-link -o $@ $^ $(LIBS)

# Seeds are made anew each run: the corpora as they are, plus files written by mkseeds.
seeds: $(FB)/mkseeds
	rm -rf $(FB)/seeds && mkdir -p $(FB)/seeds/gguf $(FB)/seeds/safetensors \
	    $(FB)/corpus/gguf $(FB)/corpus/safetensors
	cp $(TM_CORPUS)/hostile/*.gguf $(TM_CORPUS)/damaged/*.gguf $(FB)/seeds/gguf/
	$(FB)/mkseeds $(FB)/seeds/gguf $(FB)/seeds/safetensors $(TM_CORPUS)/golden/*.gguf
	cp fuzz/regress/* $(FB)/seeds/gguf/ 2>/dev/null || true
