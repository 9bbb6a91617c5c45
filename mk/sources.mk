# The library's sources and the per-file ISA flags, shared by the Makefile and fuzz/fuzz.mk so the
# two builds cannot drift. Set ARCH (the target's, from `$(CC) -dumpmachine`) and OBJ_DIR (where
# this build's objects go) before including.

LIB_SRCS := $(wildcard src/*.c)
ifeq ($(ARCH),x86_64)
LIB_SRCS += src/x86/cpu.c src/x86/dequant_avx2.c src/x86/dequant_avx512.c
endif
ifeq ($(ARCH),aarch64)
LIB_SRCS += $(wildcard src/arm/*.c)
endif
LIB_OBJS := $(LIB_SRCS:%.c=$(OBJ_DIR)/%.o)

# Each ISA file gets its own -m flags; nothing else does (the rules are at the end, after the
# optimisation levels they use).
AVX2_FLAGS   := -mavx2 -mfma -mf16c -mbmi2
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512vbmi -mavx512dq -mavx2 -mf16c -mbmi2
# Optimisation beyond the build's own, per kernel file (measured: BENCHMARKS.md, 2026-12-01).
# The scalar kernels are what every CPU without AVX2 (or NEON) runs: -O3 lets the compiler
# vectorize their plain loops with the baseline SIMD (SSE2 on x86-64), still bit-exact
# (-ffp-contract=off, no fast-math: each float operation is rounded as written). The AVX2 file
# gains 10-25% on q3_K..q6_K from -O3 (its short per-group loops unrolled); the AVX-512 file
# lost up to 25% on q2_K, q4_K and q6_K at -O3, so it keeps the build's level.
SCALAR_OPT := -O3
AVX2_OPT   := -O3
$(OBJ_DIR)/src/dequant_scalar.o: ISA_FLAGS := $(SCALAR_OPT)
$(OBJ_DIR)/src/x86/dequant_avx2.o:   ISA_FLAGS := $(AVX2_FLAGS) $(AVX2_OPT)
$(OBJ_DIR)/src/x86/dequant_avx512.o: ISA_FLAGS := $(AVX512_FLAGS)
