# cellgate - a Redis-protocol rate-limiting daemon.
#
#   make            build ./cellgate
#   make run        install missing Debian packages, build, run with conf/cellgate.conf
#   make test       install, build, then every suite: unit, integration (all of
#                   it under AddressSanitizer + UndefinedBehaviorSanitizer),
#                   stress, ThreadSanitizer, fuzzers; each part's time at the end
#   make bench      cellgate vs redis-server with redis-benchmark (bench/run.sh)
#   make bench-callgrind  instructions per request inside cellgate (bench/callgrind.sh)
#   make bench-perf  where the server's CPU time goes, kernel included (bench/perf.sh)
#   make bench-ping  server CPU per CL.THROTTLE against Redis's per PING (bench/ping_ratio.sh)
#   make bench-threads  per-thread CPU per request, io-threads 2 against 1 (bench/threads.py)
#   make install    binary, man page, config and systemd unit under PREFIX
#                   (default /usr/local; DESTDIR stages them); make uninstall
#   make deb        a Debian package in build-deb/ (dpkg-buildpackage)
#   make difftest   DIFFTEST_COMMANDS (1000000) random commands to ./cellgate and
#                   redis-server, replies compared byte for byte (RESP2 and RESP3)
#
#   make test-stress  the stress driver (tests/stress/) against the plain and
#                   the ASan+UBSan daemon, io-threads 2 (STRESS_SECONDS each)
#   make test-tsan  the stress driver against the ThreadSanitizer daemon
#   make test-integration-threads  the threaded subset of the integration
#                   suite (CELLGATE_IO_THREADS=2)
#
# SANITIZE=1 builds into build-san/ with -fsanitize=address,undefined;
# SANITIZE=thread into build-tsan/ with -fsanitize=thread (gcc's TSan:
# libuv, hiredis and Lua are Debian's, not instrumented, see
# tests/stress/tsan.supp).

CC       ?= cc
STD      := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wwrite-strings
OPT      ?= -O2
DEBUG    ?= -g
# Scripts run on Debian's Lua 5.1 with its cjson and bit modules, and
# msgpack-c's packer under cmsgpack (its inline functions: the binary
# needs libmsgpack-dev to build, no msgpack library to run).
DEPS_PC     := libuv hiredis libmicrohttpd yaml-0.1 libnghttp2 libprotobuf-c \
               lua5.1 lua5.1-cjson lua5.1-bitop msgpack
DEPS_CFLAGS := $(shell pkg-config --cflags $(DEPS_PC) 2>/dev/null)
DEPS_LIBS   := $(shell pkg-config --libs $(DEPS_PC) 2>/dev/null)
CHECK_LIBS  := $(shell pkg-config --libs check 2>/dev/null)

ifeq ($(SANITIZE),1)
BUILD    := build-san
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
BIN      := $(BUILD)/cellgate
else ifeq ($(SANITIZE),thread)
BUILD    := build-tsan
SAN      := -fsanitize=thread -fno-omit-frame-pointer
OPT      := -O1
BIN      := $(BUILD)/cellgate
else
BUILD    := build
SAN      :=
BIN      := cellgate
endif

FINAL_CFLAGS  := $(STD) $(WARN) $(OPT) $(DEBUG) $(SAN) -I. -I$(BUILD)/gen \
                 $(DEPS_CFLAGS) $(CFLAGS)
FINAL_LDFLAGS := $(SAN) $(LDFLAGS)

# Every .c under the source folders, subfolders (server/'s wings) included:
# a new file or folder is built without naming it here, and check-deps
# fails if one is not.
SRC_DIRS := lib protocol algorithms conf server
ALL_SRC  := $(sort $(shell find $(SRC_DIRS) -name '*.c'))
ALL_HDR  := $(sort $(shell find $(SRC_DIRS) -name '*.h'))
LIB_SRC  := $(filter-out server/main.c,$(ALL_SRC))
# The gRPC messages: C generated from protocol/*.proto by protoc-c.
PROTOS   := $(wildcard protocol/*.proto)
PB_SRC   := $(PROTOS:%.proto=$(BUILD)/gen/%.pb-c.c)
PB_HDR   := $(PROTOS:%.proto=$(BUILD)/gen/%.pb-c.h)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(PB_SRC:%.c=%.o)
MAIN_OBJ := $(BUILD)/server/main.o
UNIT_SRC := $(filter-out tests/unit/gcra_replay.c,$(wildcard tests/unit/*.c))
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(BUILD)/check_unit
# Creates millions of keys fast (bench runs, the million-key tests).
BENCH_FILL := $(BUILD)/bench-fill
# redis-benchmark for a sequence of commands on one random key (INCR+EXPIRE).
BENCH_SEQ  := $(BUILD)/bench-seq
# Clients blocked in BLPOP, a producer LPUSHing to them (bench/handoff.c).
BENCH_HANDOFF := $(BUILD)/bench-handoff
# Unit tests link every module but main.c (the process): the dispatcher
# and the handlers run in them without sockets (check_cmd.c).
UNIT_LIB_OBJ := $(LIB_OBJ)
REPLAY_BIN := $(BUILD)/gcra_replay
VECTORS  := tests/conformance/cl_throttle_vectors.jsonl
# The replay's own cases for what no recorded vector covers (a planted
# string redis-cell cannot read, SET's and DEL's edges).
REPLAY_MODEL := tests/unit/gcra_replay_model.jsonl

PKGS := libuv1-dev libhiredis-dev check pkg-config redis-tools redis-server \
        redis-sentinel \
        python3-redis python3-pytest python3-pytest-xdist gcc make clang libclang-rt-14-dev \
        libmicrohttpd-dev libyaml-dev libnghttp2-dev libprotobuf-c-dev \
        protobuf-c-compiler protobuf-compiler python3-grpcio \
        python3-protobuf python3-prometheus-client tmux golang-go \
        golang-gopkg-redis.v5-dev groff-base systemd \
        liblua5.1-0-dev lua-cjson-dev lua-bitop-dev libmsgpack-dev \
        python3-limits libtsan2 php-cli php-redis php-symfony-semaphore \
        python3-kombu tzdata prometheus
# Only `make bench`, `make bench-callgrind` and `make bench-perf` need these.
BENCH_PKGS := valgrind gnuplot-nox linux-perf nghttp2-client

.PHONY: all run test test-unit test-integration test-integration-plain \
        build-daemon build-tests bench-micro bench-journal \
        stress stress-reference test-stress test-tsan test-integration-threads \
        bench-replication bench-grpc sanitize \
        bench bench-callgrind bench-perf bench-ping bench-threads deps clean check-deps fuzz test-fuzz repl-fuzz difftest \
        docker-test \
        install install-files uninstall deb deb-deps build-deps test-deb

all: $(BIN)

$(BIN): $(LIB_OBJ) $(MAIN_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(DEPS_LIBS) -lm

$(BUILD)/%.o: %.c | $(PB_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -MMD -MP -c -o $@ $<

# Generated once and kept: make would otherwise delete them as
# intermediates after a failed build.
.SECONDARY: $(PB_SRC) $(PB_HDR)

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: %.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $<

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(FINAL_CFLAGS) -MMD -MP -c -o $@ $<

# Check's assertions without a write(2) each (tests/unit/check_quiet.h).
$(UNIT_OBJ): FINAL_CFLAGS += -include tests/unit/check_quiet.h

$(UNIT_BIN): $(UNIT_OBJ) $(UNIT_LIB_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(DEPS_LIBS) $(CHECK_LIBS) -lm

# Replays the recorded redis-cell vectors against the pure algorithm.
$(REPLAY_BIN): $(BUILD)/tests/unit/gcra_replay.o $(BUILD)/algorithms/gcra.o
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ -lm

-include $(BUILD)/tests/unit/gcra_replay.d $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_OBJ:.o=.d)

# Install whatever Debian packages are missing (dpkg -s first: no apt when
# everything is there).
# $(call apt_install,packages,extra shell test): install the packages dpkg
# does not know, with apt-get; nothing runs apt when all are there.
apt_install = missing=""; for p in $(1); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	$(2) \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $$missing; \
	fi

deps:
	@$(call apt_install,$(PKGS) $(EXTRA_PKGS),command -v node >/dev/null 2>&1 && \
	  command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm";)

# What building alone needs (make install on a fresh machine). Elsewhere
# than Debian and its derivatives (no dpkg), installing them is the user's.
BUILD_PKGS := gcc make pkg-config libuv1-dev libhiredis-dev libmicrohttpd-dev \
              libyaml-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler \
              liblua5.1-0-dev lua-cjson-dev lua-bitop-dev libmsgpack-dev
build-deps:
	@command -v dpkg >/dev/null 2>&1 || exit 0; \
	$(call apt_install,$(BUILD_PKGS),)

run: deps
	$(MAKE) all
	./cellgate conf/cellgate.conf

# make test: every part in turn, each timed (tests/parts.sh prints the
# times at the end). Builds use every core. The ASan+UBSan build runs the
# whole integration suite; the plain build runs the threaded subset and
# what the sanitizers change (test-integration-plain), so no test is left
# out and none runs twice on one build for nothing. The ASan+UBSan
# integration run, the longest part, takes three test processes on two
# cores: its tests mostly wait on daemons (two processes kept the cores
# half idle; three take about 1.4 of them and a fifth off its time).
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: deps
	@bash tests/parts.sh \
	  "build" "$(MAKE) -j$(NPROC) build-tests" \
	  "layering (check-deps)" "$(MAKE) check-deps" \
	  "micro benchmark" "$(MAKE) bench-micro MICRO_N=20000" \
	  "unit" "$(MAKE) test-unit" \
	  "Debian package" "$(MAKE) test-deb" \
	  "integration, plain" "$(MAKE) test-integration-plain" \
	  "integration, io-threads 2" "$(MAKE) test-integration-threads" \
	  "build, ASan+UBSan" "$(MAKE) -j$(NPROC) SANITIZE=1 build-tests" \
	  "unit, ASan+UBSan" "$(MAKE) SANITIZE=1 test-unit" \
	  "integration, ASan+UBSan" "$(MAKE) SANITIZE=1 test-integration TEST_JOBS=3" \
	  "stress, plain and ASan" "$(MAKE) test-stress STRESS_SECONDS=$(TEST_STRESS_SECONDS)" \
	  "build, TSan" "$(MAKE) -j$(NPROC) SANITIZE=thread build-daemon" \
	  "stress and subset, TSan" "$(MAKE) test-tsan STRESS_SECONDS=$(TEST_STRESS_SECONDS)" \
	  "fuzzers" "$(MAKE) -j$(NPROC) test-fuzz"
	@echo "make test: all suites passed (plain, ASan+UBSan, TSan)"

# TEST_JOBS processes run the tests side by side: the unit suites one
# process each (tests/unit/run.sh), the integration suite in pytest-xdist
# processes, a test file to each at a time (--dist loadfile: a file's
# module fixtures start once; its tests mostly wait on daemons).
TEST_JOBS ?= 2
XDIST := $(if $(filter-out 1,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile)

test-unit: $(UNIT_BIN) $(REPLAY_BIN)
	CELLGATE_CONF=conf/cellgate.conf bash tests/unit/run.sh ./$(UNIT_BIN) $(TEST_JOBS)
	./$(REPLAY_BIN) $(VECTORS)
	./$(REPLAY_BIN) $(REPLAY_MODEL)

test-integration: $(BIN) $(BENCH_FILL)
	CELLGATE_BIN=$(abspath $(BIN)) CELLGATE_FILL=$(abspath $(BENCH_FILL)) \
	  SANITIZE=$(SANITIZE) bash tests/integration/run.sh $(XDIST)

# The plain build's share of the suite next to the threaded subset: the
# slow tests the sanitizer run skips, the tests whose outcome rests on
# used_memory, which counts the allocator's block sizes (ASan's allocator
# sizes blocks otherwise), and those meant for both builds (the cluster's
# redis-cli --cluster runs): the markers in tests/integration/conftest.py.
test-integration-plain: $(BIN) $(BENCH_FILL)
	CELLGATE_BIN=$(abspath $(BIN)) CELLGATE_FILL=$(abspath $(BENCH_FILL)) \
	  SANITIZE= bash tests/integration/run.sh $(XDIST) -m "slow or allocator or plain_too"

sanitize:
	$(MAKE) SANITIZE=1 all

# ---- the threaded subset of the integration suite -------------------------
# Every daemon the tests start gets --io-threads 2 (CELLGATE_IO_THREADS,
# tests/integration/harness.py). The files cover each area the I/O
# threads touch: limiters (throttle, conformance, windows, log_tiers,
# named_limits), strings, transactions, scripts and -BUSY (scripts,
# scripts_states), WAIT, CLIENT PAUSE/KILL/REPLY and MONITOR
# (client_commands), pub/sub, output limits, maxclients and timeout
# (limits, abuse), the journal under appendfsync always (journal),
# replication, gRPC, the protocol, AUTH, databases, INFO and metrics, and
# what forks or exits with threads running (lifecycle: daemonize; snapshot;
# children: SHUTDOWN during a child), one client's write serving another
# (blocking pops, keyspace notifications). The -k leaves out the slowest tests
# whose threading another test covers already, to stay near 2 minutes on a
# 2-core machine, and the CLIENT LIST walk beside a single-threaded Redis
# (ONE_LOOP_ONLY, left out of the TSan subset too: with an I/O thread, a
# pipelined CLIENT INFO's qbuf= still counts the request run before it in
# the same read; the ASan run checks the walk).
ONE_LOOP_ONLY := client_list_and_info_fields_as_redis
THREADS_SUBSET := $(addprefix tests/integration/test_,$(addsuffix .py, \
    throttle conformance windows log_tiers named_limits strings \
    transactions scripts scripts_states client_commands pubsub limits abuse \
    journal replication grpc protocol io_threads auth databases commands \
    metrics hotpath lifecycle snapshot children blocking notify))
THREADS_DESELECT := not (killing_the_rewrite_child_or_the_parent or \
    torn_last_record_loads or (kill_9_under_load and everysec) or \
    big_strings_survive_kill_9 or replica_gets_big_strings or \
    (test_children and not (shutdown_kills or info_reports_the_running_child)) or \
    $(ONE_LOOP_ONLY))
test-integration-threads: $(BIN) $(BENCH_FILL)
	CELLGATE_IO_THREADS=2 CELLGATE_BIN=$(abspath $(BIN)) \
	  CELLGATE_FILL=$(abspath $(BENCH_FILL)) SANITIZE=$(SANITIZE) \
	  bash tests/integration/run.sh $(XDIST) $(THREADS_SUBSET) -k "$(THREADS_DESELECT)"

# ---- stress and ThreadSanitizer --------------------------------------------
# The stress driver (tests/stress/stress.c): one binary on libc and
# pthreads (and lib/sha1.c, for the scripts' names), built plain whatever
# SANITIZE is: the daemon is what the sanitizers watch.
# tests/stress/run.sh starts $(BIN) (plain, SANITIZE=1 or SANITIZE=thread)
# on a free loopback port with io-threads 2 and small output limits, runs
# the driver STRESS_SECONDS with STRESS_SEED (fixed by default, so a
# failure names a seed that repeats each client's sequence of requests;
# STRESS_SEED= picks a new one, printed), stops the daemon by its PID and
# fails on a sanitizer report. STRESS_ARGS are more daemon arguments.
STRESS_BIN     := build/stress
STRESS_SECONDS ?= 30
STRESS_SEED    ?= 1
STRESS_ARGS    ?=
# What make test gives each of its three runs (about 30 s each with the
# daemon's start and stop).
TEST_STRESS_SECONDS ?= 25

$(STRESS_BIN): tests/stress/stress.c lib/sha1.c lib/sha1.h
	@mkdir -p build
	$(CC) $(STD) $(WARN) -O2 -g -I. -pthread -o $@ tests/stress/stress.c lib/sha1.c

# What the tests run, built for SANITIZE's build (make -j builds it on
# every core; the test targets alone would build it one file at a time).
build-daemon: $(BIN) $(BENCH_FILL) $(STRESS_BIN)
build-tests: build-daemon $(UNIT_BIN) $(REPLAY_BIN)

stress: $(BIN) $(STRESS_BIN)
	STRESS_SECONDS=$(STRESS_SECONDS) STRESS_SEED=$(STRESS_SEED) \
	  SANITIZE=$(SANITIZE) bash tests/stress/run.sh $(BIN) $(STRESS_BIN) \
	  $(STRESS_ARGS)

# The plain daemon with the journal holding replies for fsync (appendfsync
# always), then the ASan+UBSan one.
test-stress:
	$(MAKE) stress SANITIZE= STRESS_ARGS="--appendonly yes --appendfsync always $(STRESS_ARGS)"
	$(MAKE) stress SANITIZE=1

# The driver against Debian's redis-server 7.0.15 with io-threads 2 and
# threaded reads (Redis 7.0 really does the socket work on its I/O
# threads), without CL.THROTTLE: every reply it expects is Redis's.
stress-reference: $(STRESS_BIN)
	STRESS_SECONDS=$(STRESS_SECONDS) STRESS_SEED=$(STRESS_SEED) STRESS_REFERENCE=1 \
	  bash tests/stress/run.sh /usr/bin/redis-server $(STRESS_BIN) $(STRESS_ARGS)

# The ThreadSanitizer daemon under the driver (journal on: its file
# retirement runs on libuv's thread pool), then, with io-threads 2, the
# integration tests of what crosses clients (scripts and the busy server's
# thread, CLIENT PAUSE/KILL/REPLY, MONITOR, pub/sub, transactions, abuse
# and limits, the io-threads options, blocking pops): about 50 s under TSan. The whole
# threaded subset under TSan: make SANITIZE=thread test-integration-threads.
# tests/stress/tsan.supp says what is suppressed and why (third-party
# libraries only).
TSAN_SUBSET := $(addprefix tests/integration/test_,$(addsuffix .py, \
    scripts client_commands pubsub transactions abuse io_threads blocking))
test-tsan:
	$(MAKE) stress SANITIZE=thread STRESS_ARGS="--appendonly yes --appendfsync everysec $(STRESS_ARGS)"
	$(MAKE) SANITIZE=thread build-tsan/bench-fill
	CELLGATE_IO_THREADS=2 CELLGATE_BIN=$(abspath build-tsan/cellgate) \
	  CELLGATE_FILL=$(abspath build-tsan/bench-fill) SANITIZE=thread \
	  bash tests/integration/run.sh $(TSAN_SUBSET) -k "not ($(ONE_LOOP_ONLY))"

# ---- install ---------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=/staging/root]: the binary, its
# man page cellgate(1) written from its own --help and --describe-config
# (tools/gen-manpage, so it lists exactly the options table), the config and
# the systemd unit. The config goes where Debian's conventions put it
# (/usr/local/etc for /usr/local, /etc for /usr) and is never overwritten.
# INSTALL_BIN installs a binary already built (the tests pass theirs, so
# nothing is rebuilt under them).
PREFIX      ?= /usr/local
SYSCONFDIR  ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR     ?= $(PREFIX)/lib/systemd/system
STATEDIR    ?= /var/lib/cellgate
INSTALL_BIN ?= $(BIN)
BINDIR      := $(PREFIX)/bin
MAN1DIR     := $(PREFIX)/share/man/man1
CONFDIR     := $(SYSCONFDIR)/cellgate
# The documented config, with a service's data directory instead of ".".
INSTALL_CONF = sed 's|^dir \.$$|dir $(STATEDIR)|' conf/cellgate.conf
UNIT_PATHS  = -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' \
              -e 's|@STATEDIR@|$(STATEDIR)|g'

# The build's packages first (a fresh machine has none), then the files.
install: build-deps
	@$(MAKE) --no-print-directory install-files

install-files: $(INSTALL_BIN)
	@grep -qx 'dir \.' conf/cellgate.conf || { echo "install:" \
	  "conf/cellgate.conf has no 'dir .' line to set to $(STATEDIR)"; exit 1; }
	install -D -m 755 $(INSTALL_BIN) $(DESTDIR)$(BINDIR)/cellgate
	install -d $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(CONFDIR) $(DESTDIR)$(UNITDIR)
	tools/gen-manpage $(abspath $(INSTALL_BIN)) $(CONFDIR) $(STATEDIR) \
	  > $(DESTDIR)$(MAN1DIR)/cellgate.1 || { rm -f $(DESTDIR)$(MAN1DIR)/cellgate.1; exit 1; }
	chmod 644 $(DESTDIR)$(MAN1DIR)/cellgate.1
	sed $(UNIT_PATHS) conf/cellgate.service.in > $(DESTDIR)$(UNITDIR)/cellgate.service
	chmod 644 $(DESTDIR)$(UNITDIR)/cellgate.service
	@if [ -e $(DESTDIR)$(CONFDIR)/cellgate.conf ]; then \
	  echo "install: kept $(DESTDIR)$(CONFDIR)/cellgate.conf (it exists);" \
	    "the new default is conf/cellgate.conf"; \
	else \
	  echo "install: $(DESTDIR)$(CONFDIR)/cellgate.conf"; \
	  $(INSTALL_CONF) > $(DESTDIR)$(CONFDIR)/cellgate.conf && \
	  chmod 644 $(DESTDIR)$(CONFDIR)/cellgate.conf; \
	fi

# Removes what install put there, but a config that differs from the one
# install writes (the user changed it) stays, and so does the data directory.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/cellgate $(DESTDIR)$(MAN1DIR)/cellgate.1 \
	  $(DESTDIR)$(UNITDIR)/cellgate.service
	@conf=$(DESTDIR)$(CONFDIR)/cellgate.conf; \
	if [ -e $$conf ] && ! $(INSTALL_CONF) | cmp -s - $$conf; then \
	  echo "uninstall: kept $$conf: it differs from the installed default"; \
	else \
	  rm -f $$conf; rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true; \
	fi

# ---- the Debian package ----------------------------------------------------
# make deb: build-deb/cellgate_<version>_<arch>.deb (and its -dbgsym), from
# debian/ with dpkg-buildpackage. It builds a copy of the sources in
# build-deb/src: debian/rules' clean then never touches this checkout's
# builds, and dpkg-buildpackage's outputs, written beside the source tree,
# land in build-deb/ whatever this checkout's parent is.
DEB_PKGS := debhelper dpkg-dev build-essential pkg-config \
            libuv1-dev libhiredis-dev libmicrohttpd-dev libyaml-dev \
            libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
DEB_DIR  := build-deb
DEB_SRC  := Makefile README.md algorithms conf debian lib protocol server tools
VERSION  := $(shell sed -n 's/^\#define CELLGATE_VERSION "\(.*\)"/\1/p' server/server.h)

# What building the package needs, installed as `make deps` does.
deb-deps:
	@$(call apt_install,$(DEB_PKGS),)

# nocheck: the package build does not run the tests; `make test` does
# (and runs `make deb` itself, in test-deb).
deb: deb-deps
	@v=$$(dpkg-parsechangelog -l debian/changelog -S Version); \
	[ "$$v" = "$(VERSION)" ] || { echo "deb: debian/changelog is at $$v," \
	  "server/server.h at $(VERSION): add a changelog entry (dch -v $(VERSION))"; exit 1; }
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	cp -R $(DEB_SRC) $(DEB_DIR)/src/
	cd $(DEB_DIR)/src && DEB_BUILD_OPTIONS="nocheck parallel=$$(nproc) $(DEB_BUILD_OPTIONS)" \
	  dpkg-buildpackage -us -uc -b
	rm -rf $(DEB_DIR)/src
	@ls -l $(DEB_DIR)/*.deb

# The package on this machine: dpkg -i, what it installed, dpkg --purge
# (tests/deb/run.sh). Needs root; make test runs it once.
test-deb: deb
	bash tests/deb/run.sh $(DEB_DIR)/cellgate_$(VERSION)_$$(dpkg --print-architecture).deb

# Build the Dockerfile with podman and check the running image.
docker-test: deps
	bash tests/docker/run.sh

bench:
	$(MAKE) deps EXTRA_PKGS="$(BENCH_PKGS)"
	$(MAKE) all $(BENCH_FILL) $(BENCH_SEQ) $(BENCH_HANDOFF)
	BENCH_FILL=$(BENCH_FILL) BENCH_SEQ=$(BENCH_SEQ) BENCH_HANDOFF=$(BENCH_HANDOFF) bash bench/run.sh
	BENCH_FILL=$(BENCH_FILL) /usr/bin/python3 bench/journal.py
	BENCH_FILL=$(BENCH_FILL) /usr/bin/python3 bench/replication.py
	/usr/bin/python3 bench/grpc.py

# What a ShouldRateLimit call costs next to CL.THROTTLE and RL.CHECK
# (server CPU per call, same invocation; bench/results/grpc.txt).
bench-grpc:
	$(MAKE) deps EXTRA_PKGS="$(BENCH_PKGS)"
	$(MAKE) all
	/usr/bin/python3 bench/grpc.py

# What two replicas cost a primary (server CPU per request, same
# invocation) and the longest PING stall of a full sync at 1M keys
# (bench/results/replication.txt).
bench-replication:
	$(MAKE) deps
	$(MAKE) all $(BENCH_FILL)
	BENCH_FILL=$(BENCH_FILL) /usr/bin/python3 bench/replication.py

# The journal's cost: server CPU per request with appendonly off, everysec
# and always in one invocation, journal bytes per decision, the longest
# PING stall of a rewrite at 1M keys (bench/results/journal.txt).
bench-journal:
	$(MAKE) deps
	$(MAKE) all $(BENCH_FILL)
	BENCH_FILL=$(BENCH_FILL) /usr/bin/python3 bench/journal.py

# The data-structure microbenchmarks (bench/micro/): `make bench-micro`
# builds and runs them at their full sizes; make test runs them small, so
# they keep building against the code they measure.
MICRO_BINS := $(BUILD)/bench_store $(BUILD)/bench_wheel
MICRO_N    ?=

$(BUILD)/bench_%: bench/micro/bench_%.c server/store.c server/wheel.c lib/mem.c lib/rand.c \
	    lib/keyslot.c
	@mkdir -p $(BUILD)
	$(CC) $(FINAL_CFLAGS) -o $@ $^

bench-micro: $(MICRO_BINS)
	./$(BUILD)/bench_store $(MICRO_N)
	./$(BUILD)/bench_wheel $(MICRO_N)

$(BENCH_FILL): bench/fill.c
	@mkdir -p $(BUILD)
	$(CC) $(FINAL_CFLAGS) -o $@ $< $(DEPS_LIBS)

$(BENCH_SEQ): bench/seq.c
	@mkdir -p $(BUILD)
	$(CC) $(FINAL_CFLAGS) -o $@ $< $(DEPS_LIBS)

$(BENCH_HANDOFF): bench/handoff.c
	@mkdir -p $(BUILD)
	$(CC) $(FINAL_CFLAGS) -o $@ $< $(DEPS_LIBS)

# Instructions per request inside the server (callgrind): the low-noise
# figure to compare builds with. Also part of `make bench`.
bench-callgrind:
	$(MAKE) deps EXTRA_PKGS="$(BENCH_PKGS)"
	$(MAKE) all $(BENCH_FILL) $(BENCH_SEQ) $(BENCH_HANDOFF)
	BENCH_FILL=$(BENCH_FILL) BENCH_SEQ=$(BENCH_SEQ) BENCH_HANDOFF=$(BENCH_HANDOFF) bash bench/callgrind.sh

# Is a CL.THROTTLE cheaper for the server than Redis's PING? Server CPU per
# request of both at -P 1 and -P 16 (9 interleaved repetitions), syscalls
# per request and instructions per request by function
# (bench/results/ping-ratio.txt).
bench-ping:
	$(MAKE) deps EXTRA_PKGS="$(BENCH_PKGS)"
	$(MAKE) all $(BENCH_FILL)
	BENCH_FILL=$(BENCH_FILL) bash bench/ping_ratio.sh

# The I/O threads: the executing thread's and every thread's CPU per
# non-pipelined CL.THROTTLE with io-threads 2 against io-threads 1, the
# capacity that implies, latencies (bench/results/threads.txt).
bench-threads:
	$(MAKE) deps EXTRA_PKGS="$(BENCH_PKGS)"
	$(MAKE) all
	/usr/bin/python3 bench/threads.py

# perf samples of the server process, kernel time included: how much of a
# request's CPU is the socket work that callgrind cannot see. Also part of
# `make bench`.
bench-perf:
	$(MAKE) deps EXTRA_PKGS="$(BENCH_PKGS)"
	$(MAKE) all
	bash bench/perf.sh

# libFuzzer drivers (clang): the request parser, the config parser, and
# the command path (random commands through the real handlers into an
# in-process keyspace, tests/fuzz/fuzz_cmd.c), and Lua scripts through
# EVAL on the same in-process server (tests/fuzz/fuzz_script.c, with
# lua-memory-limit 8mb; each run bounded by -timeout since a script cannot
# be stopped yet), and Redis's RDB format as RESTORE and a Redis RDB file
# at start-up read it (tests/fuzz/fuzz_rdb.c). `make fuzz` fuzzes each for
# FUZZ_SECONDS (FUZZ_CMD_SECONDS for the command path); `make test-fuzz`
# (part of make test) replays the committed seed corpora and fuzzes each
# briefly. New inputs go to build-fuzz/, never into the committed corpus.
FUZZ_SECONDS ?= 600
FUZZ_CMD_SECONDS ?= $(FUZZ_SECONDS)
# The replication fuzzer (tests/integration/repl_fuzz.py): real daemons, a
# primary with replicas and faults between bursts of writes, for
# REPL_FUZZ_SECONDS in make fuzz (REPL_FUZZ_SEED to choose its seed); make
# test runs a round of each shape in the integration suite.
REPL_FUZZ_SECONDS ?= $(FUZZ_SECONDS)
REPL_FUZZ_SEED ?=
FUZZ_BRIEF   ?= 5
FUZZ_CMD_BRIEF ?= 20
FUZZ_CFLAGS  := $(STD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=undefined -I. -Ibuild/gen $(DEPS_CFLAGS)
FUZZ_RESP    := build-fuzz/fuzz_resp
FUZZ_CONF    := build-fuzz/fuzz_conf
FUZZ_CMD     := build-fuzz/fuzz_cmd
FUZZ_GRPC    := build-fuzz/fuzz_grpc
FUZZ_SCRIPT  := build-fuzz/fuzz_script
FUZZ_RDB     := build-fuzz/fuzz_rdb
FUZZ_BUS     := build-fuzz/fuzz_bus
# The command and gRPC drivers link the whole server (the messages' C
# generated into build/gen); main() is renamed away.
FUZZ_PB_SRC  := $(PROTOS:%.proto=build/gen/%.pb-c.c)

FUZZ_RESP_SRC := tests/fuzz/fuzz_resp.c protocol/resp.c $(wildcard lib/*.c)
FUZZ_CONF_SRC := tests/fuzz/fuzz_conf.c conf/conf.c conf/special.c $(wildcard lib/*.c)
FUZZ_BUS_SRC  := tests/fuzz/fuzz_bus.c protocol/cluster_msg.c

$(FUZZ_RESP): $(FUZZ_RESP_SRC) protocol/resp.h $(wildcard lib/*.h)
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -o $@ $(FUZZ_RESP_SRC) $(DEPS_LIBS)

$(FUZZ_BUS): $(FUZZ_BUS_SRC) protocol/cluster_msg.h
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -o $@ $(FUZZ_BUS_SRC)

$(FUZZ_CONF): $(FUZZ_CONF_SRC) conf/conf.h conf/options.h conf/special.h $(wildcard lib/*.h)
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -o $@ $(FUZZ_CONF_SRC)

# The server's objects, compiled once for the three drivers that link it
# (one clang per file, so make -j uses every core; one clang invocation
# per driver compiled the server three times, a file at a time).
FUZZ_SERVER_OBJ := $(patsubst %.c,build-fuzz/obj/%.o,$(LIB_SRC) $(FUZZ_PB_SRC) server/main.c)

build-fuzz/obj/%.o: %.c | $(PB_HDR)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Dmain=cellgate_main -MMD -MP -c -o $@ $<

-include $(FUZZ_SERVER_OBJ:.o=.d)

$(FUZZ_CMD) $(FUZZ_GRPC) $(FUZZ_SCRIPT) $(FUZZ_RDB): build-fuzz/%: tests/fuzz/%.c $(FUZZ_SERVER_OBJ)
	clang $(FUZZ_CFLAGS) -Dmain=cellgate_main -o $@ $< $(FUZZ_SERVER_OBJ) \
	    $(DEPS_LIBS) -lm

fuzz: $(FUZZ_RESP) $(FUZZ_CONF) $(FUZZ_CMD) $(FUZZ_GRPC) $(FUZZ_SCRIPT) $(FUZZ_RDB) $(FUZZ_BUS)
	@mkdir -p build-fuzz/found-resp build-fuzz/found-conf build-fuzz/found-cmd \
	    build-fuzz/found-grpc build-fuzz/found-script build-fuzz/found-rdb \
	    build-fuzz/found-bus
	./$(FUZZ_RESP) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    build-fuzz/found-resp tests/fuzz/corpus/resp
	./$(FUZZ_CONF) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    build-fuzz/found-conf tests/fuzz/corpus/conf
	./$(FUZZ_CMD) -max_total_time=$(FUZZ_CMD_SECONDS) -print_final_stats=1 \
	    -max_len=4096 build-fuzz/found-cmd tests/fuzz/corpus/cmd
	./$(FUZZ_GRPC) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    build-fuzz/found-grpc tests/fuzz/corpus/grpc
	LSAN_OPTIONS=suppressions=tests/fuzz/lsan-script.supp \
	./$(FUZZ_SCRIPT) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -max_len=4096 -timeout=60 build-fuzz/found-script tests/fuzz/corpus/script
	./$(FUZZ_RDB) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -max_len=65536 build-fuzz/found-rdb tests/fuzz/corpus/rdb
	./$(FUZZ_BUS) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -max_len=16384 build-fuzz/found-bus tests/fuzz/corpus/bus
	$(MAKE) repl-fuzz

# SANITIZE=1 runs it on the ASan+UBSan build.
repl-fuzz: $(BIN)
	CELLGATE_BIN=$(abspath $(BIN)) SANITIZE=$(SANITIZE) PYTHONDONTWRITEBYTECODE=1 \
	  /usr/bin/python3 tests/integration/repl_fuzz.py \
	  --seconds $(REPL_FUZZ_SECONDS) $(if $(REPL_FUZZ_SEED),--seed $(REPL_FUZZ_SEED))

# The differential suite (tests/integration/difftest.py): seeded random
# command sequences sent to cellgate and Debian's redis-server 7.0.15,
# replies compared byte for byte in RESP2 and RESP3; prints how often each
# command, option and error was exercised. DIFFTEST_SEED chooses the seed;
# DIFFTEST_ARGS defaults to --plant-limiters (string commands meet limiter
# keys too). make test runs it bounded (tests/integration/test_difftest.py).
# SANITIZE=1 runs the ASan build.
DIFFTEST_COMMANDS ?= 1000000
DIFFTEST_SEED ?=
DIFFTEST_ARGS ?= --plant-limiters
difftest: $(BIN)
	CELLGATE_BIN=$(abspath $(BIN)) SANITIZE=$(SANITIZE) PYTHONDONTWRITEBYTECODE=1 \
	  /usr/bin/python3 tests/integration/difftest.py --commands $(DIFFTEST_COMMANDS) \
	  --stats $(if $(DIFFTEST_SEED),--seed $(DIFFTEST_SEED)) $(DIFFTEST_ARGS)

test-fuzz: $(FUZZ_RESP) $(FUZZ_CONF) $(FUZZ_CMD) $(FUZZ_GRPC) $(FUZZ_SCRIPT) $(FUZZ_RDB) $(FUZZ_BUS)
	@mkdir -p build-fuzz/brief-resp build-fuzz/brief-conf build-fuzz/brief-cmd \
	    build-fuzz/brief-grpc build-fuzz/brief-script build-fuzz/brief-rdb \
	    build-fuzz/brief-bus
	./$(FUZZ_RESP) -max_total_time=$(FUZZ_BRIEF) build-fuzz/brief-resp \
	    tests/fuzz/corpus/resp
	./$(FUZZ_CONF) -max_total_time=$(FUZZ_BRIEF) build-fuzz/brief-conf \
	    tests/fuzz/corpus/conf
	./$(FUZZ_CMD) -runs=0 tests/fuzz/corpus/cmd
	./$(FUZZ_CMD) -max_total_time=$(FUZZ_CMD_BRIEF) -max_len=4096 \
	    build-fuzz/brief-cmd tests/fuzz/corpus/cmd
	./$(FUZZ_GRPC) -runs=0 tests/fuzz/corpus/grpc
	./$(FUZZ_GRPC) -max_total_time=$(FUZZ_BRIEF) build-fuzz/brief-grpc \
	    tests/fuzz/corpus/grpc
	LSAN_OPTIONS=suppressions=tests/fuzz/lsan-script.supp \
	./$(FUZZ_SCRIPT) -runs=0 tests/fuzz/corpus/script
	LSAN_OPTIONS=suppressions=tests/fuzz/lsan-script.supp \
	./$(FUZZ_SCRIPT) -max_total_time=$(FUZZ_BRIEF) -max_len=4096 -timeout=60 \
	    build-fuzz/brief-script tests/fuzz/corpus/script
	./$(FUZZ_RDB) -runs=0 tests/fuzz/corpus/rdb
	./$(FUZZ_RDB) -max_total_time=$(FUZZ_BRIEF) -max_len=65536 \
	    build-fuzz/brief-rdb tests/fuzz/corpus/rdb
	./$(FUZZ_BUS) -runs=0 tests/fuzz/corpus/bus
	./$(FUZZ_BUS) -max_total_time=$(FUZZ_BRIEF) -max_len=16384 \
	    build-fuzz/brief-bus tests/fuzz/corpus/bus
	@echo "test-fuzz: the seven fuzzers ran their corpus and fuzzed briefly without a finding"

# The layering (tests/check_deps.py): lib <- protocol, algorithms, conf
# <- server, and inside server the floors main > conn > the table >
# handlers > dispatcher > keyspace and the rest > store > wheel, with no
# loops; what a file includes and the symbols its object uses both count.
# With it, the rule of errors.h (an error text is spelled in one place) and
# the length of a function (at most 80 lines).
check-deps: $(LIB_OBJ) $(MAIN_OBJ)
	/usr/bin/python3 tests/check_deps.py $(BUILD)
	/usr/bin/python3 tests/check_errors.py
	/usr/bin/python3 tests/check_functions.py
	@! grep -n '#include <\(uv\|hiredis\)' algorithms/*.[ch] conf/*.[ch] lib/*.[ch]

clean:
	rm -rf build build-san build-tsan build-fuzz build-deb cellgate
