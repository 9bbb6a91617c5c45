# tensormap — build, test, bench, install.
#
#   make            library (static + shared), the tool, the examples       -> build/
#   make demo       build, write the demo model, run `tensormap info` on it
#   make test       install missing Debian dependencies (as root), build, run the test suite
#                   (the C suite, then the Python package's pytest suite: make test-python)
#   make SAN=1 test the same under AddressSanitizer + UndefinedBehaviorSanitizer -> build-san/
#   make bench      benchmarks (bench/open, bench/dequant, bench/export, bench/matvec);
#                   COLD=1 adds bench/cold (writes 4 GiB to TMPDIR or /var/tmp, evicts it from
#                   the page cache, decodes it cold: minutes, so not by default)
#                   GGML=DIR (a ggml source tree built with cmake in DIR/build) builds
#                   bench/matvec and bench/matmul with ggml beside tensormap -> build/bench-ggml/
#   make bench-ggml GGML=DIR   the side-by-side tables of BENCHMARKS.md (matvec and matmul)
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS each (clang)
#   make install    PREFIX=/usr/local DESTDIR=  (header, libraries, tensormap.pc and
#                   tensormap-static.pc, tool, man page,
#                   the Python package)
#   make wheel      the Python package with the library inside, for pip -> $(B)/dist/
#                   (`pip install --no-build-isolation .` builds and installs it directly:
#                   pyproject.toml, setup.py, docs/python.md)
#
# V=1 prints every command.

PREFIX     ?= /usr/local
prefix     ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir     ?= $(exec_prefix)/bin
libdir     ?= $(exec_prefix)/lib
includedir ?= $(prefix)/include
mandir     ?= $(prefix)/share/man
man1dir    ?= $(mandir)/man1
pkgconfigdir ?= $(libdir)/pkgconfig
# The Python package goes where Debian's python3 looks: /usr/lib/python3/dist-packages for
# PREFIX=/usr, $(prefix)/lib/python3.X/dist-packages for any other prefix (/usr/local, $HOME/.local).
PYTHON     ?= /usr/bin/python3
pythondir  ?= $(if $(filter /usr,$(prefix)),$(prefix)/lib/python3/dist-packages,$(prefix)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages)

VERSION := $(shell sed -n 's/^\#define TM_VERSION_STRING "\(.*\)"/\1/p' include/tensormap.h)
SOMAJOR := $(shell sed -n 's/^\#define TM_VERSION_MAJOR \([0-9]*\)/\1/p' include/tensormap.h)

CC      ?= cc
ARCH    := $(shell $(CC) -dumpmachine | cut -d- -f1)

ifeq ($(SAN),1)
B        ?= build-san
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fsanitize=alignment
SANLD    := -fsanitize=address,undefined
# Criterion has reported a test by the time its worker exits, so LeakSanitizer's report
# (printed at exit) would not fail it: the run's stderr and status are judged by
# tests/support/san_gate.sh (any sanitizer error, a leak with a frame of ours, or a failed test
# fails the run; Criterion's own runner leak is passed over; tests/san_gate_test.sh shows each).
# exitcode=86 keeps an ASan error in the tool, run by the tests, from passing as "exit 1".
export ASAN_OPTIONS  = detect_leaks=1:exitcode=86
export UBSAN_OPTIONS = print_stacktrace=1:halt_on_error=1
SAN_GATE = 2>$(B)/test.stderr; st=$$?; cat $(B)/test.stderr >&2; \
           tests/san_gate_test.sh && tests/support/san_gate.sh $(B)/test.stderr $$st
else
B        ?= build
OPT      := -O2 -g
SANLD    :=
endif

WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wcast-qual -Wstrict-prototypes \
        -Wmissing-prototypes -Wundef -Wvla -Wformat=2 -Wimplicit-fallthrough -Wconversion \
        $(WERROR)
# Warnings are errors in `make check` (what CI runs), not in a user's plain `make`: a newer
# compiler's new warning should not stop someone building a release.
WERROR ?=
# -Wswitch-enum is left out: switches over file-supplied type ids have a default on purpose.

BASE_CFLAGS := $(WARN) $(OPT) -D_GNU_SOURCE -Iinclude -pthread
LIB_CFLAGS  := $(BASE_CFLAGS) -fPIC -fvisibility=hidden -DTM_BUILDING_LIBRARY \
               -ffp-contract=off
ALL_CFLAGS  = $(BASE_CFLAGS) $(CFLAGS)
# What the library needs (and so tensormap.pc's Libs.private), and what the tool adds to it.
LIB_LIBS    := -ljansson -lpthread -lm
# Remote files (http://, https://, hf:) need libcurl; CURL=0 builds without it, and URLs are
# then refused with a message saying so.
CURL ?= 1
ifeq ($(CURL),1)
LIB_CFLAGS  += -DTM_HAVE_CURL
# tm_download checks the Hub's SHA-256 with libcrypto (libssl-dev, which libcurl's TLS needs).
LIB_LIBS    += -lcurl -lcrypto
endif
TOOL_LIBS   := -llz4 -lxxhash -lcrypto $(LIB_LIBS)

Q := $(if $(V),,@)

# Keep intermediate objects (the examples link from them) so a second make does nothing.
.SECONDARY:

# ---- sources -------------------------------------------------------------------------------

OBJ_DIR := $(B)/obj
include mk/sources.mk

TOOL_SRCS := tools/tensormap.c $(sort $(wildcard tools/cli/*.c tools/cmd/*.c))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(B)/obj/%.o)
EXAMPLES  := $(patsubst examples/%.c,$(B)/%,$(wildcard examples/*.c))
TEST_SRCS := $(sort $(wildcard tests/*.c tests/support/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(B)/obj/%.o)
BENCH_SRCS := $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRCS:bench/%.c=$(B)/bench/%)

STATIC := $(B)/libtensormap.a
SONAME := libtensormap.so.$(SOMAJOR)
SHARED := $(B)/libtensormap.so.$(VERSION)

.PHONY: all lib demo test test-build check test-golden bench fuzz install uninstall test-install clean deps \
        check-exports check-layers check-san cross-arm check-arm test-arm test-python wheel bench-ggml \
        test-c check-san-build check-san-python
all: lib $(B)/tensormap $(B)/tensormap.1 $(EXAMPLES) $(B)/demo.gguf

lib: $(STATIC) $(SHARED)

# ---- dependencies: Debian packages, installed by apt-get when missing and we are root --------

# Two sets: what the library and the tool build against (every object waits for it), and what
# the tests add (Criterion, numpy, pytest, the lz4 and openssl programs), wanted by `make test`.
DEPS_STAMP := $(B)/.deps-lib
TEST_DEPS_STAMP := $(B)/.deps-test
deps: $(DEPS_STAMP) $(TEST_DEPS_STAMP)
$(DEPS_STAMP):
	$(Q)mkdir -p $(B)
	$(Q)CURL=$(CURL) ./scripts/deps.sh lib
	$(Q)touch $@
# After the library's set: two apt-get runs at once (make -j) fail on dpkg's lock.
$(TEST_DEPS_STAMP): | $(DEPS_STAMP)
	$(Q)mkdir -p $(B)
	$(Q)CURL=$(CURL) ./scripts/deps.sh test
	$(Q)touch $@

# ---- compile ---------------------------------------------------------------------------------

# Header dependencies come from the compiler (-MMD -MP: a .d file beside each object).
DEPFLAGS := -MMD -MP

$(B)/obj/src/%.o: src/%.c mk/sources.mk | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(LIB_CFLAGS) $(ISA_FLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/obj/tools/%.o: tools/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/obj/examples/%.o: examples/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/obj/tests/%.o: tests/%.c | $(DEPS_STAMP) $(TEST_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes $(DEPFLAGS) -c $< -o $@

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

$(STATIC): $(LIB_OBJS)
	$(if $(V),,@echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(SHARED): $(LIB_OBJS)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) $(SANLD) -o $@ $^ $(LDFLAGS) $(LIB_LIBS)
	$(Q)ln -sf libtensormap.so.$(VERSION) $(B)/$(SONAME)
	$(Q)ln -sf $(SONAME) $(B)/libtensormap.so

$(B)/tensormap: $(TOOL_OBJS) $(STATIC)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(SANLD) -o $@ $(TOOL_OBJS) $(STATIC) $(LDFLAGS) $(TOOL_LIBS)

$(B)/%: $(B)/obj/examples/%.o $(STATIC)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(SANLD) -o $@ $< $(STATIC) $(LDFLAGS) $(LIB_LIBS)

# what bench/dequant prints as the library's flags
BENCH_LIB_FLAGS = $(OPT) -ffp-contract=off $(CFLAGS); scalar file +$(SCALAR_OPT); \
                  avx2 file +$(AVX2_FLAGS) $(AVX2_OPT); avx512 file +$(AVX512_FLAGS); \
                  avx512fp16 file +-mavx512fp16
# bench/open writes its model with examples/qwen2_model.h
$(B)/bench/%: bench/%.c $(STATIC) $(wildcard examples/*.h bench/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -DTM_BENCH_LIB_FLAGS='"$(BENCH_LIB_FLAGS)"' -o $@ $< $(STATIC) \
	    $(LDFLAGS) $(TOOL_LIBS)

# An LD_PRELOAD shim that fails the Nth write, sync or rename (tests/test_edit.c): built without
# sanitizers or the project's warnings set (it defines libc's own functions).
$(B)/fail_io.so: tests/shim/fail_io.c
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) -shared -fPIC -O1 -o $@ $< -ldl

# An LD_PRELOAD shim under which getaddrinfo knows only localhost and numeric addresses
# (tests/test_http.c: a host that does not resolve, without asking a resolver).
$(B)/no_resolve.so: tests/shim/no_resolve.c
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) -shared -fPIC -O1 -o $@ $< -ldl

$(B)/test_tensormap: $(TEST_OBJS) $(STATIC)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(SANLD) -o $@ $(TEST_OBJS) $(STATIC) $(LDFLAGS) -lcriterion $(TOOL_LIBS)

# The man page, generated from the commands' help texts (one source of truth).
$(B)/tensormap.1: $(B)/tensormap
	$(Q)$(B)/tensormap --man > $@

# The demo model the README's first command runs on: written by the project's own writer.
$(B)/demo.gguf: $(B)/mkdemo
	$(Q)$(B)/mkdemo $@

demo: all
	$(B)/tensormap info $(B)/demo.gguf

# ---- test ------------------------------------------------------------------------------------

# The tests find the tool, the demo model and the shared corpus through these.
export TM_TOOL   = $(abspath $(B)/tensormap)
export TM_MATVEC = $(abspath $(B)/matvec)
export TM_CORPUS = $(abspath ../shared/corpus)
export TM_FAIL_SHIM = $(abspath $(B)/fail_io.so)
export TM_RESOLVE_SHIM = $(abspath $(B)/no_resolve.so)
export TM_HTTP_SERVER = $(abspath tests/support/http_server.py)
export TM_S3_SERVER = $(abspath tests/support/s3/serve.js)
export TM_README = $(abspath README.md)

# What the suite runs, built; make check builds it with a job per CPU first (the suite itself
# runs as one make job: its timing tests want the CPUs to themselves).
test-build: $(TEST_DEPS_STAMP) all $(B)/test_tensormap $(B)/fail_io.so $(B)/no_resolve.so
# The C suite alone (test-c), then the Python tests. Criterion runs SUITE_JOBS tests at once, two
# per CPU by default: a test spends much of its time waiting on the tool it runs or on a test
# server, and with one per CPU the CPUs were up to a third idle (on 2 CPUs: 49 s -> 37 s, and
# under SAN=1 119 s -> 94 s).
SUITE_JOBS ?= $(shell echo $$(( 2 * $(JOBS) )))
test-c: test-build check-exports
	$(B)/test_tensormap --jobs=$(SUITE_JOBS) $(TEST_ARGS) $(SAN_GATE)
test: test-c
	$(PYTEST)

# The Python package's suite (python/tests) with Debian's interpreter, against this build's shared
# library. Under SAN=1 the sanitizer build's library is loaded into python3 with the ASan runtime
# preloaded (it must come first); LeakSanitizer is off there, since the interpreter itself does
# not free everything at exit. A missing numpy or pytest fails the run, naming the package.
PYTEST_ENV := TENSORMAP_LIBRARY=$(abspath $(B)/$(SONAME)) PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1
ifeq ($(SAN),1)
PYTEST_ENV += LD_PRELOAD=$(shell $(CC) -print-file-name=libasan.so) \
              ASAN_OPTIONS=detect_leaks=0:exitcode=86
endif
define PYTEST
$(Q)for m in numpy:python3-numpy pytest:python3-pytest; do \
    $(PYTHON) -c "import $${m%%:*}" 2>/dev/null || { echo "the Python tests need $${m#*:} for $(PYTHON) (as root: apt-get install $${m#*:})" >&2; exit 1; }; done
$(PYTEST_ENV) $(PYTHON) -m pytest -q -rs -p no:cacheprovider python/tests $(PYTEST_ARGS)
endef

test-python: $(SHARED)
	$(PYTEST)

check-san:
	$(MAKE) SAN=1 test

# The README's test command and CI's: the suite, then the suite again under the sanitizers.
# Each C suite runs with nothing beside it (its timing tests want the CPUs to themselves); what
# does not mind sharing them runs with a job per CPU, beside the next build: the Python tests,
# test-install (its CURL=0 build) and check-layers beside the sanitizer build, the sanitizer
# build's Python tests beside test-arm (the cross build and qemu). -O keeps each job's output
# together. On 2 CPUs that took make check from 6 minutes to 4 (with SUITE_JOBS above).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
check:
	$(MAKE) WERROR=-Werror -j$(JOBS) -O test-build
	$(MAKE) WERROR=-Werror test-c
	$(MAKE) WERROR=-Werror -j$(JOBS) -O test-python test-install check-layers check-san-build
	$(MAKE) WERROR=-Werror SAN=1 test-c
	$(MAKE) WERROR=-Werror -j$(JOBS) -O check-san-python test-arm

# make check's sanitizer build and Python tests, as jobs of a make without SAN=1.
check-san-build:
	$(MAKE) SAN=1 test-build
check-san-python:
	$(MAKE) SAN=1 test-python

# check-arm when the cross toolchain and qemu are there or can be installed (scripts/deps.sh
# arm); otherwise the NEON path is not run, and the last line of make check says so.
test-arm:
	$(Q)./scripts/deps.sh arm || true
	$(Q)if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64-static >/dev/null; \
	then $(MAKE) check-arm; \
	else echo "SKIPPED: the NEON path (make check-arm) was not run: no aarch64-linux-gnu-gcc or qemu-aarch64-static (as root: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static)"; fi

# The library (NEON kernels included) compiled for aarch64 by Debian's cross-compiler with the
# project's warnings: proof that it builds there. Linked into a static library, never run here.
cross-arm:
	$(MAKE) CC=aarch64-linux-gnu-gcc CURL=0 B=build-arm build-arm/libtensormap.a

# The NEON path run under qemu-aarch64-static (Debian's qemu-user-static): tests/arm/neon_check.c
# (golden corpus, NEON vs scalar, all halves) and tests/arm/matvec_check.c (golden rows and
# random blocks, NEON vs scalar products) over the cross-built library. Criterion, jansson
# and lz4 have no aarch64 build here; the check never reaches code that calls the last two, so
# their symbols are left unresolved in this static test binary.
check-arm: cross-arm
	aarch64-linux-gnu-gcc $(WARN) -O2 -D_GNU_SOURCE -Iinclude -static -o build-arm/neon_check \
	    tests/arm/neon_check.c build-arm/libtensormap.a -lpthread -lm \
	    -Wl,--unresolved-symbols=ignore-all
	qemu-aarch64-static build-arm/neon_check
	aarch64-linux-gnu-gcc $(WARN) -O2 -D_GNU_SOURCE -Iinclude -static -o build-arm/matvec_check \
	    tests/arm/matvec_check.c tests/support/random_blocks.c build-arm/libtensormap.a \
	    -lpthread -lm \
	    -Wl,--unresolved-symbols=ignore-all
	qemu-aarch64-static build-arm/matvec_check

# The shape of the code, from the build's own objects (scripts/check_layers.sh): the library's
# parts call only down (common <- io <- read <- compute, write; compute and write apart), the
# tool's only down (cli <- cmd <- the command table <- the man page <- main; no command calls
# another), and no objects loop. The script's own test plants each kind of bad call first, so
# that the check can be seen to fail.
LIB_LAYERS  := src/common=1 src/io=2 src/read=3 src/compute=4 src/write=4
TOOL_LAYERS := tools/cli=1 tools/cmd=2! tools/cli/commands.o=3 tools/cli/man.o=4 tools/tensormap.o=5
check-layers: $(LIB_OBJS) $(TOOL_OBJS)
	$(Q)CC=$(CC) tests/check_layers_test.sh
	$(Q)scripts/check_layers.sh $(B)/obj '$(LIB_LAYERS)' $(LIB_OBJS)
	$(Q)scripts/check_layers.sh $(B)/obj '$(TOOL_LAYERS)' $(TOOL_OBJS)

check-exports: $(SHARED)
	$(Q)if nm -D --defined-only $(SHARED) | awk '$$2 ~ /^[TDBR]$$/ {print $$3}' | grep -v '^tm_' \
	    | grep -v '^_' ; then echo "exported symbols without the tm_ prefix" >&2; exit 1; fi

# ---- bench -----------------------------------------------------------------------------------

# ggml beside the products (bench/ggml_side.h): GGML=DIR, a ggml source tree whose cmake build
# (BUILD_SHARED_LIBS=ON) is in GGML_LIBDIR. Those benches go in their own directory, so that a
# build with ggml and one without never stand in for each other.
GGML_LIBDIR ?= $(GGML)/build/src
GGML_BENCHES := $(B)/bench-ggml/matvec $(B)/bench-ggml/matmul
$(B)/bench-ggml/%: bench/%.c $(STATIC) $(wildcard bench/*.h) | $(DEPS_STAMP)
	$(if $(GGML),,$(error GGML=DIR names the ggml source tree to build $@ against))
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (with ggml)")
	$(Q)$(CC) $(ALL_CFLAGS) -DTM_BENCH_GGML -isystem $(GGML)/include \
	    -DTM_BENCH_LIB_FLAGS='"$(BENCH_LIB_FLAGS)"' -o $@ $< $(STATIC) $(LDFLAGS) \
	    -L$(GGML_LIBDIR) -Wl,-rpath,$(abspath $(GGML_LIBDIR)) -lggml-cpu -lggml-base $(TOOL_LIBS)
MATVEC_BENCH := $(if $(GGML),$(B)/bench-ggml/matvec,$(B)/bench/matvec)

bench: all $(BENCHES) $(if $(GGML),$(GGML_BENCHES))
	$(B)/bench/open
	$(B)/bench/dequant
	$(B)/bench/export $(B)/tensormap
	$(MATVEC_BENCH)
	$(if $(COLD),$(B)/bench/cold)

# Issue 23's types side by side with ggml on tensormap's BENCH_ISA path, one-thread rows timed
# by CPU time (a shared machine); then tm_matmul against ggml's mul_mat: 8-bit x on 1 thread (CPU
# time) and 2 (wall clock), and float32 x on 1 thread for n = 8 and 32 (n = 512 takes minutes).
BENCH_ISA ?= avx2
GGML_SIDE_TYPES := q4_0 q8_0 q4_K q5_K q6_K iq4_xs iq2_xxs mxfp4 f16 bf16
bench-ggml: all $(GGML_BENCHES)
	$(if $(GGML),,$(error make bench-ggml wants GGML=DIR, a ggml source tree built with cmake))
	$(Q)for t in $(GGML_SIDE_TYPES); do \
	    $(B)/bench-ggml/matvec --cpu-time --type $$t --isa $(BENCH_ISA) || exit 1; done
	$(Q)$(B)/bench-ggml/matmul --quick --cpu-time --mode q8
	$(Q)$(B)/bench-ggml/matmul --quick --threads 2 --mode q8
	$(Q)$(B)/bench-ggml/matmul --quick --cpu-time --mode f32 --max-n 32

# ---- fuzz ------------------------------------------------------------------------------------

FUZZ_SECONDS ?= 60
fuzz:
	$(Q)$(MAKE) -f fuzz/fuzz.mk FUZZ_SECONDS=$(FUZZ_SECONDS)

# ---- install ---------------------------------------------------------------------------------

install: all
	install -d $(DESTDIR)$(includedir) $(DESTDIR)$(libdir) $(DESTDIR)$(pkgconfigdir) \
	           $(DESTDIR)$(bindir) $(DESTDIR)$(man1dir)
	install -m 644 include/tensormap.h $(DESTDIR)$(includedir)/
	install -m 644 $(STATIC) $(DESTDIR)$(libdir)/
	install -m 755 $(SHARED) $(DESTDIR)$(libdir)/
	ln -sf libtensormap.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/libtensormap.so
	for pc in tensormap tensormap-static; do \
	  sed -e 's|@prefix@|$(prefix)|' -e 's|@libdir@|$(libdir)|' -e 's|@includedir@|$(includedir)|' \
	      -e 's|@VERSION@|$(VERSION)|' -e 's|@LIB_LIBS@|$(LIB_LIBS)|' $$pc.pc.in \
	      > $(DESTDIR)$(pkgconfigdir)/$$pc.pc || exit 1; \
	done
	install -m 755 $(B)/tensormap $(DESTDIR)$(bindir)/
	install -m 644 $(B)/tensormap.1 $(DESTDIR)$(man1dir)/
	install -d $(DESTDIR)$(pythondir)/tensormap
	install -m 644 python/tensormap/*.py $(DESTDIR)$(pythondir)/tensormap/
	echo 'LIBDIR = "$(shell $(PYTHON) -c 'import os, sys; print(os.path.relpath(*sys.argv[1:]))' \
	    $(libdir) $(pythondir)/tensormap)"  # the library, relative to this package' \
	    > $(DESTDIR)$(pythondir)/tensormap/_installed.py

# Debian's python3-build, offline (--no-isolation: its setuptools and wheel, nothing fetched);
# setup.py builds in and takes the library from this $(B).
wheel: lib
	TENSORMAP_BUILD_DIR=$(B) $(PYTHON) -m build --wheel --no-isolation --outdir $(B)/dist .

uninstall:
	rm -f $(DESTDIR)$(includedir)/tensormap.h $(DESTDIR)$(libdir)/libtensormap.a \
	      $(DESTDIR)$(libdir)/libtensormap.so* $(DESTDIR)$(pkgconfigdir)/tensormap.pc \
	      $(DESTDIR)$(pkgconfigdir)/tensormap-static.pc \
	      $(DESTDIR)$(bindir)/tensormap $(DESTDIR)$(man1dir)/tensormap.1
	rm -rf $(DESTDIR)$(pythondir)/tensormap

# Build a program against an installed copy through pkg-config, three ways: shared (run with
# LD_LIBRARY_PATH pointing at the staged library, not one installed on the machine);
# tensormap-static (the archive linked in: ldd must not list libtensormap); and a fully static
# `cc -static` with `pkg-config --static`, which adds the library's own dependencies.
test-install:
	rm -rf $(B)/stage && $(MAKE) install DESTDIR=$(abspath $(B)/stage) PREFIX=/usr
	$(Q)cd $(B)/stage && export PKG_CONFIG_SYSROOT_DIR=$$PWD PKG_CONFIG_PATH=$$PWD/usr/lib/pkgconfig \
	  && set -x \
	  && $(CC) -o shared $(CURDIR)/examples/matvec.c $$(pkg-config --cflags --libs tensormap) \
	  && LD_LIBRARY_PATH=$$PWD/usr/lib ./shared --help >/dev/null \
	  && $(CC) -o static $(CURDIR)/examples/matvec.c $$(pkg-config --cflags --libs tensormap-static) \
	  && ./static --help >/dev/null && ! ldd ./static | grep libtensormap
# A fully static program cannot take libcurl on Debian (its GSSAPI and LDAP dependencies ship no
# static archives): it links the library built with CURL=0, which also proves that build works
# and refuses a URL with its message.
	$(MAKE) CURL=0 B=$(B)/nocurl $(B)/nocurl/libtensormap.a
	$(Q)cd $(B)/stage && set -x \
	  && $(CC) -static -o all-static $(CURDIR)/examples/matvec.c -I$(CURDIR)/include \
	       $(abspath $(B)/nocurl/libtensormap.a) -ljansson -lpthread -lm \
	  && ./all-static --help >/dev/null && ! ldd ./all-static 2>&1 | grep libtensormap \
	  && { ./all-static hf:owner/repo/model.gguf w 2>&1 || true; } | grep 'built without libcurl'
	cd / && PYTHONPATH=$(abspath $(B)/stage)/usr/lib/python3/dist-packages PYTHONDONTWRITEBYTECODE=1 \
	  $(PYTHON) -c 'import tensormap, sys; lib = tensormap._c.path; \
	    assert lib.startswith("$(abspath $(B)/stage)/usr/lib/"), lib; \
	    f = tensormap.open("$(abspath $(B)/demo.gguf)"); print("python:", lib, len(f.keys()), "tensors")'

clean:
	rm -rf build build-san build-fuzz
