# The library's sources and the per-file ISA flags, shared by the Makefile and fuzz/fuzz.mk so the
# two builds cannot drift. Set ARCH (the target's, from `$(CC) -dumpmachine`) and OBJ_DIR (where
# this build's objects go) before including.

# One list per part of the library; each part may use only the parts listed before it
# (common <- io <- read <- compute, write), which `make check-layers` enforces.
COMMON_SRCS  := $(sort $(wildcard src/common/*.c))
IO_SRCS      := $(sort $(wildcard src/io/*.c))
READ_SRCS    := $(sort $(wildcard src/read/*.c))
COMPUTE_SRCS := $(sort $(wildcard src/compute/*.c))
WRITE_SRCS   := $(sort $(wildcard src/write/*.c))
LIB_SRCS := $(COMMON_SRCS) $(IO_SRCS) $(READ_SRCS) $(COMPUTE_SRCS) $(WRITE_SRCS)

# Kernel files, one line each, in the list of the instruction-set path they are built for. The
# list gives a file its -m flags (nothing else gets any) and its path: adding a kernel file is
# this one edit, its line here. The file exports one table named after it, tm__kernels_<name>
# (src/compute/x86/dequant_avx2_lut.c: tm__kernels_dequant_avx2_lut), which src/compute/isa.c
# merges into the path; KERNEL_TABLES below hands isa.c the list, and a table the file does not
# define fails the link. (A new path is a line of TM__ISA_LIST in src/compute/kernels.h, a list
# here and its KERNEL_PATHS entry.)
AVX2_FLAGS   := -mavx2 -mfma -mf16c -mbmi2
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512vl -mavx512vbmi -mavx512dq -mavx2 -mfma -mf16c -mbmi2
AVX512FP16_FLAGS := $(AVX512_FLAGS) -mavx512fp16
SCALAR_SRCS  := src/compute/dequant_scalar.c
SCALAR_SRCS  += src/compute/dequant_scalar_iq.c
SCALAR_SRCS  += src/compute/dequant_scalar_lut.c
SCALAR_SRCS  += src/compute/matvec_scalar.c
SCALAR_SRCS  += src/compute/matvec_scalar_q8.c
AVX2_SRCS    := src/compute/x86/dequant_avx2.c
AVX2_SRCS    += src/compute/x86/dequant_avx2_lut.c
AVX2_SRCS    += src/compute/x86/dequant_avx2_iq.c
AVX2_SRCS    += src/compute/x86/matvec_avx2.c
AVX2_SRCS    += src/compute/x86/matvec_avx2_q8.c
AVX2_SRCS    += src/compute/x86/matvec_avx2_iq.c
AVX2_SRCS    += src/compute/x86/matmul_avx2_q8.c
AVX2_SRCS    += src/compute/x86/matmul_avx2_f16.c
AVX512_SRCS  := src/compute/x86/dequant_avx512.c
AVX512_SRCS  += src/compute/x86/dequant_avx512_lut.c
AVX512_SRCS  += src/compute/x86/dequant_avx512_iq.c
AVX512_SRCS  += src/compute/x86/matvec_avx512.c
AVX512_SRCS  += src/compute/x86/matmul_avx512_f16.c
AVX512_SRCS  += src/compute/x86/matmul_avx512_q8.c
AVX512_SRCS  += src/compute/x86/matvec_avx512_iq.c
AVX512FP16_SRCS := src/compute/x86/matvec_avx512fp16.c
NEON_SRCS    := src/compute/arm/dequant_neon.c
NEON_SRCS    += src/compute/arm/dequant_neon_iq.c
NEON_SRCS    += src/compute/arm/matvec_neon.c
NEON_SRCS    += src/compute/arm/matvec_neon_q8.c
NEON_SRCS    += src/compute/arm/matvec_neon_iq.c

# The paths built for this architecture (the scalar files are in COMPUTE_SRCS already).
KERNEL_PATHS := SCALAR
ifeq ($(ARCH),x86_64)
KERNEL_PATHS += AVX2 AVX512 AVX512FP16
LIB_SRCS += src/compute/x86/cpu.c $(AVX2_SRCS) $(AVX512_SRCS) $(AVX512FP16_SRCS)
endif
ifeq ($(ARCH),aarch64)
KERNEL_PATHS += NEON
LIB_SRCS += $(NEON_SRCS)
endif
# X(tm__kernels_<name>,PATH) for every kernel file built, as TM__KERNEL_TABLES(X) for isa.c.
KERNEL_TABLES := $(foreach p,$(KERNEL_PATHS),$(foreach f,$($(p)_SRCS),X(tm__kernels_$(basename $(notdir $(f))),$(p))))
LIB_OBJS := $(LIB_SRCS:%.c=$(OBJ_DIR)/%.o)

# Optimisation beyond the build's own, per kernel file (measured: BENCHMARKS.md, 2026-12-01).
# The scalar kernels are what every CPU without AVX2 (or NEON) runs: -O3 lets the compiler
# vectorize their plain loops with the baseline SIMD (SSE2 on x86-64), still bit-exact
# (-ffp-contract=off, no fast-math: each float operation is rounded as written). The AVX2
# dequant file gains 10-25% on q3_K..q6_K from -O3 (its short per-group loops unrolled); the
# AVX-512 dequant file lost up to 25% on q2_K, q4_K and q6_K at -O3, so it keeps the build's.
# The AVX2 batched matmul kernels gain 10-25% on q4_K, q5_K, q6_K at -O3 (their per-column
# loops unrolled, the accumulators kept in registers; 2026-12-02, cache-resident W). The AVX2
# 8-bit row kernels of the other types gain at -O3 too: q5_K 11.3 -> 14.6 GB/s, mxfp4 7.6 ->
# 9.5, iq4_xs 3-17 %, iq2_xxs 4 % (AMD EPYC with AVX-512, one thread, W from DRAM, two
# alternated runs each, 2026-12-02 15:01 UTC). So do the four fused types' row kernels of
# matvec_avx2.c: q6_K 8-bit 13.8-16.0 -> 22.1-23.2 GB/s, q4_K 8-bit 16.8 -> 19.6-20.0 and F32
# 4.9-5.0 -> 6.6-6.7, q8_0 F32 6.9-9.4 -> 11.2-11.7 (q4_0 unchanged; same machine, 15:15 UTC).
SCALAR_OPT  := -O3
AVX2_OPT    := -O3
SCALAR_O3_SRCS := src/compute/dequant_scalar.c src/compute/dequant_scalar_iq.c src/compute/dequant_scalar_lut.c src/compute/matvec_scalar_q8.c
AVX2_O3_SRCS := src/compute/x86/dequant_avx2.c src/compute/x86/matmul_avx2_q8.c src/compute/x86/matvec_avx2_q8.c \
                src/compute/x86/matvec_avx2_iq.c src/compute/x86/matvec_avx2.c
# matvec_avx2_iq.c's kernels built for AVX-512 (matvec_avx512_iq.c) keep their -O3.
AVX512_O3_SRCS := src/compute/x86/matvec_avx512_iq.c

$(AVX2_SRCS:%.c=$(OBJ_DIR)/%.o):   ISA_FLAGS := $(AVX2_FLAGS)
$(AVX512_SRCS:%.c=$(OBJ_DIR)/%.o): ISA_FLAGS := $(AVX512_FLAGS)
$(AVX512FP16_SRCS:%.c=$(OBJ_DIR)/%.o): ISA_FLAGS := $(AVX512FP16_FLAGS)
$(SCALAR_O3_SRCS:%.c=$(OBJ_DIR)/%.o): ISA_FLAGS := $(SCALAR_OPT)
$(AVX2_O3_SRCS:%.c=$(OBJ_DIR)/%.o): ISA_FLAGS := $(AVX2_FLAGS) $(AVX2_OPT)
$(AVX512_O3_SRCS:%.c=$(OBJ_DIR)/%.o): ISA_FLAGS := $(AVX512_FLAGS) $(AVX2_OPT)
$(OBJ_DIR)/src/compute/isa.o: ISA_FLAGS := -D'TM__KERNEL_TABLES(X)=$(KERNEL_TABLES)'
