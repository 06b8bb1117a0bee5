# Trainyard: the one build file.
#
#   make              libkc and the programs, optimized, in build/
#   make test         check-style, then every unit suite (Check), the fuzz
#                     targets' seeds and regressions, and every end-to-end
#                     suite (bats), built with ASan and UBSan
#   make unit         the unit suites only (ASan/UBSan); SUITE=yaml picks one
#   make e2e          the end-to-end suites only
#   make check-style  banned functions, include rules, cppcheck
#   make bench        benchmarks that print figures
#   make fuzz         libFuzzer targets (clang), FUZZ_SECONDS each
#   make chaos        the chaos suite: faults, then invariants (CHAOS_SEED=
#                     replays a run; CHAOS_SCENARIOS="a b" picks scenarios)
#   make clean
#
# Missing packages are installed by scripts/install-deps on first use.

PKGS		 = libcurl json-c yajl yaml-0.1 openssl libwebsockets sqlite3 zlib
TEST_PKGS	 = check

# Install what is missing before any pkg-config call below needs it.
ifeq ($(filter clean,$(MAKECMDGOALS)),)
DEPS_OK := $(shell pkg-config --exists $(PKGS) $(TEST_PKGS) 2>/dev/null && \
	     command -v bats >/dev/null && command -v cppcheck >/dev/null && \
	     command -v jq >/dev/null && command -v parallel >/dev/null && echo yes)
ifneq ($(DEPS_OK),yes)
$(info make: some dependencies are missing; running scripts/install-deps)
DEPS_RUN := $(shell scripts/install-deps >&2; echo $$?)
ifneq ($(DEPS_RUN),0)
$(error scripts/install-deps failed; see the messages above)
endif
endif
endif

BUILD		?= build
VERSION		 = 0.1.0-dev
CC		?= gcc
OPT		?= -O2 -g

WARNINGS	 = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
		   -Wmissing-prototypes -Wpointer-arith -Wcast-qual -Wformat=2 \
		   -Wvla -Wundef -Wno-format-nonliteral
CPPFLAGS_ALL	 = -D_GNU_SOURCE -DKC_VERSION='"$(VERSION)"' -Ilib/include -Ilib
CFLAGS_ALL	 = -std=c11 -pthread -MMD -MP $(OPT) $(WARNINGS) \
		   $(shell pkg-config --cflags $(PKGS)) $(CFLAGS)
LDLIBS_ALL	 = $(shell pkg-config --libs $(PKGS)) -pthread $(LDLIBS)
TEST_CFLAGS	 = $(shell pkg-config --cflags $(TEST_PKGS)) \
		   -DKC_FIXTURES='"$(CURDIR)/tests/fixtures"'
TEST_LDLIBS	 = $(shell pkg-config --libs $(TEST_PKGS))

SAN_FLAGS	 = -fsanitize=address,undefined -fno-sanitize-recover=all \
		   -fno-omit-frame-pointer

# libkc, by layer: the data modules the devcluster may use, then the
# client side.
LIB_CORE_SRCS	 = lib/err.c lib/alloc.c lib/buf.c lib/str.c lib/json.c lib/jsonstream.c \
		   lib/clock.c lib/log.c
# Data structures and formats every layer shares (no threads, no network).
LIB_CORE_SRCS	+= lib/hash.c lib/heap.c lib/sbuf.c lib/base64.c lib/validation.c
# Deadlines and a cap for servers' connections, and their libwebsockets side.
LIB_CORE_SRCS	+= lib/connguard.c
# Pod Security Standards (the devcluster's admission and the controller's Run checks).
LIB_CORE_SRCS	+= lib/podsecurity.c
LIB_DATA_SRCS	 = $(LIB_CORE_SRCS) lib/yaml.c lib/selector.c lib/patch.c \
		   lib/cert.c
LIB_SRCS	 = $(LIB_DATA_SRCS) lib/kubeconfig.c lib/transport.c \
		   lib/client.c lib/watch.c
LIB_DATA_SRCS	+= lib/quantity.c
# The one piece of libkc's client side the devcluster uses: the transport's
# calls that never wait, for conversion and admission webhooks (devcluster/whcall.c).
DC_CLIENT_SRCS	 = lib/kubeconfig.c lib/transport.c

# trainyard-controller's pure modules: json-c in, json-c or structs out, no
# threads of their own and no network (the unit test binary links them).
CTL_PURE_SRCS	 = controller/config.c controller/model.c controller/session.c \
		   controller/cache.c controller/convert.c controller/project.c \
		   controller/admission.c controller/quota.c controller/names.c

# The client side's concurrency: shared rate limit, work queue, informers.
LIB_SRCS	+= lib/ratelimit.c lib/workqueue.c lib/informer.c
LIB_SRCS	+= lib/leader.c
# Compact texts (deflate with a preset dictionary): the controller's Run cache.
LIB_SRCS	+= lib/deflate.c

# Unit suites: tests/unit/test_<name>.c, each listed in tests/unit/suites.h.
UNIT_SUITES	 = err buf str json jsonstream log yaml selector patch cert kubeconfig \
		   transport client watch dc_schema dc_regex dc_table dc_protobuf \
		   dc_fieldmanager dc_rbac dc_sched
UNIT_SUITES	+= dc_router dc_storage dc_watch dc_errors dc_auth dc_discovery \
		   dc_api
UNIT_SUITES	+= dc_openapi
UNIT_SUITES	+= dc_crd dc_convwebhook dc_admwebhook
UNIT_SUITES	+= dc_gc dc_persist
UNIT_SUITES	+= dc_authz
UNIT_SUITES	+= dc_faults
UNIT_SUITES	+= dc_quota dc_limitranger
UNIT_SUITES	+= dc_scheduler
UNIT_SUITES	+= dc_tokens dc_protobuf2
UNIT_SUITES	+= dc_nodes
UNIT_SUITES	+= dc_disruption
UNIT_SUITES	+= dc_apps dc_authn
UNIT_SUITES	+= dc_kubelet
UNIT_SUITES	+= quantity ctl_config ctl_model ctl_session
UNIT_SUITES	+= ratelimit workqueue informer
UNIT_SUITES	+= dc_exec
UNIT_SUITES	+= leader
UNIT_SUITES	+= hash heap sbuf base64 validation
UNIT_SUITES	+= ctl_metrics
UNIT_SUITES	+= podsecurity dc_podsecurity
UNIT_SUITES	+= deflate ctl_expect alloc
UNIT_SUITES	+= ctl_cache
UNIT_SUITES	+= ctl_review ctl_webhook ctl_certs
UNIT_SUITES	+= ctl_convert ctl_project ctl_admission ctl_quota ctl_names
UNIT_SUITES	+= cli_args
# logs, submit, run
UNIT_SUITES	+= cli_logs
UNIT_SUITES	+= cli_ops
UNIT_SUITES	+= cli_admin
UNIT_SUITES	+= connguard
UNIT_SUITES	+= clock
TEST_SUPPORT_SRCS = tests/fakes/fail_alloc.c tests/fakes/fake_clock.c \
		   tests/fakes/fake_transport.c tests/server/testserver.c \
		   tests/unit/testutil.c tests/unit/dc_testutil.c tests/unit/ctl_testutil.c
UNIT_SRCS	 = tests/unit/check_main.c $(TEST_SUPPORT_SRCS) \
		   $(UNIT_SUITES:%=tests/unit/test_%.c)

# What each suite needs beyond the core, for "make unit SUITE=x", which
# builds and links only that (so one module can be worked on alone).
SUITE_DEPS_err		=
SUITE_DEPS_buf		=
SUITE_DEPS_str		=
SUITE_DEPS_json		=
SUITE_DEPS_jsonstream	=
SUITE_DEPS_log		=
SUITE_DEPS_yaml		= lib/yaml.c
SUITE_DEPS_selector	= lib/selector.c
SUITE_DEPS_patch	= lib/patch.c
SUITE_DEPS_cert		= lib/cert.c
SUITE_DEPS_kubeconfig	= lib/yaml.c lib/kubeconfig.c
SUITE_DEPS_transport	= lib/cert.c lib/yaml.c lib/kubeconfig.c lib/transport.c \
			  tests/server/testserver.c
SUITE_DEPS_client	= lib/cert.c lib/yaml.c lib/kubeconfig.c lib/transport.c \
			  lib/client.c tests/fakes/fake_transport.c \
			  tests/server/testserver.c
SUITE_DEPS_watch	= $(SUITE_DEPS_client) lib/watch.c
SUITE_DEPS_dc_schema	= devcluster/schema.c devcluster/schema_crd.c devcluster/regex.c \
			  lib/yaml.c
SUITE_DEPS_dc_regex	= devcluster/regex.c
SUITE_DEPS_dc_table	= devcluster/jsonpath.c devcluster/table.c lib/yaml.c lib/selector.c
SUITE_DEPS_dc_protobuf	= devcluster/protobuf.c
SUITE_DEPS_dc_fieldmanager = devcluster/fieldset.c devcluster/fieldmanager.c lib/patch.c \
			  lib/yaml.c
SUITE_DEPS_dc_rbac	= devcluster/rbac.c lib/selector.c lib/yaml.c
SUITE_DEPS_dc_sched	= devcluster/sched.c devcluster/sched_res.c devcluster/sched_plan.c \
			  devcluster/sched_fit.c devcluster/sched_gang.c \
			  devcluster/sched_pgstatus.c lib/quantity.c lib/selector.c lib/yaml.c
SUITE_DEPS_dc_router	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c
SUITE_DEPS_dc_storage	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c
SUITE_DEPS_dc_watch	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c
SUITE_DEPS_dc_errors	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c
SUITE_DEPS_dc_auth	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c
SUITE_DEPS_dc_discovery	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c
SUITE_DEPS_dc_api	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_openapi	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_crd	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_convwebhook = $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c \
			  lib/cert.c lib/quantity.c tests/unit/dc_testutil.c tests/server/testserver.c
SUITE_DEPS_dc_admwebhook = $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c \
			  lib/cert.c lib/quantity.c tests/unit/dc_testutil.c tests/server/testserver.c
SUITE_DEPS_dc_gc	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_persist	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_authz	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_faults	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_quota	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_limitranger = $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c \
			  lib/cert.c lib/quantity.c tests/unit/dc_testutil.c
SUITE_DEPS_dc_scheduler = $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_tokens	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_protobuf2	= devcluster/protobuf.c
SUITE_DEPS_dc_kubelet	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_nodes	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_disruption = $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_apps	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_authn	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_dc_exec	= $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c lib/cert.c lib/quantity.c \
			  tests/unit/dc_testutil.c
SUITE_DEPS_quantity	= lib/quantity.c
# cache.c's transforms read informer items and deflate Runs.
CTL_PURE_DEPS	 = lib/yaml.c lib/selector.c lib/quantity.c lib/deflate.c \
		   $(SUITE_DEPS_informer) $(CTL_PURE_SRCS)
SUITE_DEPS_ctl_config	= $(CTL_PURE_DEPS)
SUITE_DEPS_ctl_model	= $(CTL_PURE_DEPS)
SUITE_DEPS_ctl_session	= $(CTL_PURE_DEPS) controller/expect.c
SUITE_DEPS_ctl_names	= $(CTL_PURE_DEPS)
SUITE_DEPS_ctl_cache	= $(CTL_PURE_DEPS)
SUITE_DEPS_ctl_convert	= $(CTL_PURE_DEPS) controller/migrate.c
SUITE_DEPS_ctl_project	= $(CTL_PURE_DEPS) tests/unit/ctl_testutil.c
SUITE_DEPS_ctl_admission = $(CTL_PURE_DEPS) lib/patch.c tests/unit/ctl_testutil.c
SUITE_DEPS_ctl_quota	= $(CTL_PURE_DEPS) tests/unit/ctl_testutil.c
SUITE_DEPS_cli_args	= $(SUITE_DEPS_client) $(CLI_PURE_SRCS)
# logs, submit, run
SUITE_DEPS_cli_logs	= $(SUITE_DEPS_client) $(CLI_PURE_SRCS)
SUITE_DEPS_cli_ops	= $(SUITE_DEPS_client) $(CLI_PURE_SRCS) lib/watch.c
SUITE_DEPS_cli_admin	= $(SUITE_DEPS_client) $(CLI_PURE_SRCS)
SUITE_DEPS_client	+= lib/ratelimit.c
SUITE_DEPS_ratelimit	= $(SUITE_DEPS_client)
SUITE_DEPS_workqueue	= lib/ratelimit.c lib/workqueue.c
SUITE_DEPS_informer	= $(SUITE_DEPS_watch) lib/informer.c
SUITE_DEPS_leader	= $(SUITE_DEPS_client) lib/leader.c
SUITE_DEPS_ctl_metrics	= $(SUITE_DEPS_client) controller/metrics.c
SUITE_DEPS_deflate	= lib/deflate.c
SUITE_DEPS_alloc	=
SUITE_DEPS_hash		=
SUITE_DEPS_heap		=
SUITE_DEPS_connguard	=
SUITE_DEPS_clock	=
SUITE_DEPS_sbuf		=
SUITE_DEPS_base64	=
SUITE_DEPS_validation	=
SUITE_DEPS_podsecurity	=
SUITE_DEPS_dc_podsecurity = $(DC_SRCS) $(DC_CLIENT_SRCS) lib/yaml.c lib/selector.c lib/patch.c \
			  lib/cert.c lib/quantity.c tests/unit/dc_testutil.c
SUITE_DEPS_ctl_expect	= $(CTL_PURE_DEPS) controller/expect.c
SUITE_DEPS_ctl_review	= controller/review.c controller/convert.c
SUITE_DEPS_ctl_webhook	= $(SUITE_DEPS_client) lib/cert.c controller/review.c \
			  controller/webhook.c controller/metrics.c $(CTL_PURE_DEPS) lib/patch.c
SUITE_DEPS_ctl_certs	= $(SUITE_DEPS_ctl_webhook) controller/certs.c

# trainyard-devcluster: main.c plus DC_SRCS, which the unit suites link too.
# It links only libkc's data modules (ARCHITECTURE.md).
DC_SRCS		 = devcluster/http.c devcluster/router.c devcluster/registry.c \
		   devcluster/builtin.c devcluster/storage.c devcluster/watchhub.c \
		   devcluster/api.c devcluster/dispatch.c devcluster/write.c \
		   devcluster/reply.c devcluster/errors.c devcluster/discovery.c \
		   devcluster/auth.c
# Pure modules: json-c in, json-c (or bytes) out, no event loop state.
DC_PURE_SRCS	 = devcluster/schema.c devcluster/schema_crd.c devcluster/regex.c \
		   devcluster/jsonpath.c devcluster/table.c \
		   devcluster/protobuf.c devcluster/fieldset.c devcluster/fieldmanager.c \
		   devcluster/rbac.c devcluster/sched.c devcluster/sched_res.c \
		   devcluster/sched_plan.c devcluster/sched_fit.c devcluster/sched_gang.c \
		   devcluster/sched_pgstatus.c
DC_SRCS		+= $(DC_PURE_SRCS)
DC_SRCS		+= devcluster/openapi.c devcluster/ssa.c
DC_SRCS		+= devcluster/crd.c devcluster/convwebhook.c devcluster/whcall.c
DC_SRCS		+= devcluster/admwebhook.c
DC_SRCS		+= devcluster/gc.c devcluster/namespace.c devcluster/persist.c
DC_SRCS		+= devcluster/authz.c
DC_SRCS		+= devcluster/quota.c devcluster/limitranger.c
DC_SRCS		+= devcluster/faults.c
DC_SRCS		+= devcluster/scheduler.c
DC_SRCS		+= devcluster/nodes.c
DC_SRCS		+= devcluster/tokens.c
DC_SRCS		+= devcluster/disruption.c
DC_SRCS		+= devcluster/apps.c devcluster/authn.c
DC_SRCS		+= devcluster/kubelet.c
DC_SRCS		+= devcluster/exec.c
DC_SRCS		+= devcluster/podsecurity.c
DC_SRCS		+= devcluster/plugins.c
DEVCLUSTER_SRCS	 = devcluster/main.c $(DC_SRCS)

# trainyard-controller: main.c plus CTL_SRCS (the pure ones are unit tested
# in check_main); it links the whole of libkc.
CTL_SRCS	 = $(CTL_PURE_SRCS) controller/manager.c controller/workers.c \
		   controller/reconcile_run.c controller/reconcile_project.c \
		   controller/reconcile_member.c controller/expect.c controller/events.c
# metrics.c: threads and a server, yet unit tested (ctl_metrics), so check_main
# links it too (the rule below adds it), as it does expect.c (ctl_expect).
CTL_SRCS	+= controller/metrics.c
# migrate.c: the "migrate" subcommand; its pure parts are unit tested (ctl_convert).
CTL_SRCS	+= controller/migrate.c
# The conversion webhook and its certificates: unit tested too (ctl_review,
# ctl_webhook, ctl_certs), linked into check_main by the rule below.
CTL_SRCS	+= controller/review.c controller/webhook.c controller/certs.c
CONTROLLER_SRCS	 = controller/main.c $(CTL_SRCS)

# kubectl-trainyard, the kubectl plugin (docs/cli.md): cli/main.c and a
# cmd_<name>.c per command; CLI_PURE_SRCS are what the unit tests link.
CLI_PURE_SRCS	 = cli/common.c
CLI_SRCS	 = cli/main.c $(CLI_PURE_SRCS) cli/cmd_version.c
# logs, submit, run
CLI_PURE_SRCS	+= cli/logmux.c
CLI_SRCS	+= cli/cmd_logs.c cli/cmd_submit.c
# wait, stop/resume/restart, describe, list
CLI_PURE_SRCS	+= cli/ops.c
CLI_SRCS	+= cli/cmd_wait.c cli/cmd_control.c cli/cmd_describe.c cli/cmd_list.c
# cli-admin: exec, invite/members/remove, upgrade, completion
CLI_PURE_SRCS	+= cli/admin.c
CLI_SRCS	+= cli/cmd_exec.c cli/cmd_members.c cli/cmd_upgrade.c cli/cmd_completion.c

# Small programs that use libkc (examples/libkc/): each file is one program,
# built into $(BUILD)/bin/examples/ and run by tests/e2e/examples.bats.
EXAMPLE_SRCS	 = $(sort $(wildcard examples/libkc/*.c))
EXAMPLES	 = $(EXAMPLE_SRCS:examples/libkc/%.c=$(BUILD)/bin/examples/%)

ALL_SRCS	 = $(LIB_SRCS) $(UNIT_SRCS) $(DEVCLUSTER_SRCS) $(CONTROLLER_SRCS) $(CLI_SRCS)

# ---------------------------------------------------------------------------

.PHONY: all test test-build test-lane unit e2e check-style bench chaos clean demo image install
.DEFAULT_GOAL := all

BINS		 = $(BUILD)/bin/trainyard-devcluster $(BUILD)/bin/trainyard-controller \
		   $(BUILD)/bin/kubectl-trainyard

all: $(BUILD)/lib/libkc.a $(BINS) $(EXAMPLES)

$(BUILD)/bin/examples/%: $(BUILD)/examples/libkc/%.o $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

LIB_OBJS	 = $(LIB_SRCS:%.c=$(BUILD)/%.o)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(TEST_CFLAGS) -c $< -o $@

$(BUILD)/lib/libkc.a: $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/bin/trainyard-devcluster: $(DEVCLUSTER_SRCS:%.c=$(BUILD)/%.o) \
    $(LIB_DATA_SRCS:%.c=$(BUILD)/%.o) $(DC_CLIENT_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/bin/trainyard-controller: $(CONTROLLER_SRCS:%.c=$(BUILD)/%.o) \
    $(LIB_SRCS:%.c=$(BUILD)/%.o)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/bin/kubectl-trainyard: $(CLI_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# make install: the controller and the kubectl plugin into $(DESTDIR)$(PREFIX)/bin.
PREFIX		?= /usr/local

install: $(BUILD)/bin/trainyard-controller $(BUILD)/bin/kubectl-trainyard
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $^ $(DESTDIR)$(PREFIX)/bin/

# The sanitizer tree: every object again, with ASan and UBSan.
SAN		 = $(BUILD)/san

$(SAN)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(SAN_FLAGS) $(TEST_CFLAGS) -c $< -o $@

# The code under test at -O1, as the AddressSanitizer documentation advises:
# it compiles in half the CPU time of -O2 (measured: the sanitizer programs
# and unit tests, 113 against 210 CPU s), and the unit suites run as fast
# (37.6 against 37.0 CPU s), the sanitizers' own work being most of it. The
# tests' own code at -O0: a third of what "make test" compiles is tests/,
# and -O1 did not make the suites faster (33.8 s against 35.0 s).
$(SAN)/%.o: OPT = -O1 -g
$(SAN)/tests/%.o: OPT = -O0 -g

# Every sanitizer program links the sanitizers' defaults of the test builds
# (a smaller quarantine: tests/sanitizer_options.c says why).
SAN_RT		 = $(SAN)/tests/sanitizer_options.o

$(SAN)/bin/trainyard-devcluster: $(DEVCLUSTER_SRCS:%.c=$(SAN)/%.o) \
    $(LIB_DATA_SRCS:%.c=$(SAN)/%.o) $(DC_CLIENT_SRCS:%.c=$(SAN)/%.o) $(SAN_RT)
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_ALL)

$(SAN)/bin/trainyard-controller: $(CONTROLLER_SRCS:%.c=$(SAN)/%.o) \
    $(LIB_SRCS:%.c=$(SAN)/%.o) $(SAN_RT)
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_ALL)

$(SAN)/bin/kubectl-trainyard: $(CLI_SRCS:%.c=$(SAN)/%.o) $(LIB_SRCS:%.c=$(SAN)/%.o) \
    $(SAN_RT)
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_ALL)

$(SAN)/bin/examples/%: $(SAN)/examples/libkc/%.o $(LIB_SRCS:%.c=$(SAN)/%.o) $(SAN_RT)
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_ALL)

$(SAN)/tests/unit/check_main: $(UNIT_SRCS:%.c=$(SAN)/%.o) $(LIB_SRCS:%.c=$(SAN)/%.o) \
    $(DC_SRCS:%.c=$(SAN)/%.o) $(CTL_PURE_SRCS:%.c=$(SAN)/%.o) $(SAN_RT)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(TEST_LDLIBS) $(LDLIBS_ALL)

$(SAN)/tests/unit/check_main: $(SAN)/controller/metrics.o $(SAN)/controller/expect.o \
    $(SAN)/controller/migrate.o $(SAN)/controller/review.o $(SAN)/controller/webhook.o \
    $(SAN)/controller/certs.o $(CLI_PURE_SRCS:%.c=$(SAN)/%.o)

ifdef SUITE
ONE_SRCS	 = $(sort $(LIB_CORE_SRCS) $(SUITE_DEPS_$(SUITE)) \
		   tests/fakes/fail_alloc.c tests/fakes/fake_clock.c \
		   tests/unit/testutil.c tests/unit/test_$(SUITE).c)

$(SAN)/one/check_$(SUITE).o: tests/unit/check_main.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(SAN_FLAGS) $(TEST_CFLAGS) \
	    -DKC_ONE_SUITE=$(SUITE)_suite -c $< -o $@

$(SAN)/one/check_$(SUITE): $(SAN)/one/check_$(SUITE).o $(ONE_SRCS:%.c=$(SAN)/%.o) $(SAN_RT)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(TEST_LDLIBS) $(LDLIBS_ALL)

unit: $(SAN)/one/check_$(SUITE)
	CK_FORK=no $(SAN)/one/check_$(SUITE)
else
# The suites in UNIT_JOBS processes side by side, each taking the next suite
# none has taken (KC_UNIT_QUEUE, see tests/unit/check_main.c), each
# process's report printed once it is done.
unit: $(SAN)/tests/unit/check_main
	@n=$(UNIT_JOBS); pids=; q=$(SAN)/unit.queue; \
	rm -f $$q $(SAN)/unit-*.log; : >$$q; \
	for i in $$(seq 0 $$((n - 1))); do \
		echo "CK_FORK=no KC_UNIT_QUEUE=$$q $<"; \
		CK_FORK=no KC_UNIT_QUEUE=$$q $< >$(SAN)/unit-$$i.log 2>&1 & \
		pids="$$pids $$!"; \
	done; \
	st=0; i=0; \
	for p in $$pids; do \
		wait $$p || st=1; \
		cat $(SAN)/unit-$$i.log; \
		i=$$((i + 1)); \
	done; \
	cat $(SAN)/unit-*.log | awk -v n=$$n '/^unit: [0-9]+ suites, / { \
		c += $$4; f += $$6; e += $$8 } \
		END { printf "unit: %d checks in %d processes, %d failures, %d errors\n", \
		c, n, f, e }'; \
	exit $$st
endif

# make test runs in two lanes. The end-to-end suites take most of the time,
# so they start as soon as the programs they run are built, on every CPU.
# Beside them, at the lowest priority (nice 19), so that it takes only what
# they leave idle, the second lane checks the style (cppcheck is
# single-threaded), builds the unit suites and replays the fuzz inputs: work
# that costs the same CPU time however long it waits for a CPU. Its output is
# saved in $(SAN)/test-lane.log and printed once the end-to-end suites are
# done. The unit suites run last, on every CPU (UNIT_JOBS processes): they
# time servers, timeouts and cancels on the real clock, which a process
# starved at nice 19 cannot keep (a request that waits seconds for a CPU
# times out). make test fails if any step failed. TEST_LANES=1 runs it all
# one step after the other: the style check and build, the fuzz replays, the
# unit suites, the end-to-end suites.
NPROC		:= $(shell nproc 2>/dev/null || echo 2)
UNIT_JOBS	?= $(NPROC)
# What the end-to-end suites run (they also build it themselves when run
# one by one with bats).
E2E_BUILD	 = $(SAN)/bin/trainyard-devcluster $(SAN)/bin/trainyard-controller \
		   $(SAN)/bin/kubectl-trainyard $(SAN)/bin/examples/run-wait \
		   $(SAN)/bin/examples/gpu-usage $(BUILD)/bin/trainyard-controller \
		   $(BUILD)/bin/ty-hostile
TEST_BUILD	 = $(SAN)/tests/unit/check_main $(E2E_BUILD) $(FUZZ_REPLAYS)

TEST_LANES	?= 2

test-build:
	$(MAKE) --no-print-directory -j$(NPROC) $(TEST_BUILD)

ifeq ($(TEST_LANES),1)
test: test-lane
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory e2e
else
test:
	$(MAKE) --no-print-directory -j$(NPROC) $(E2E_BUILD)
	@lane=$(SAN)/test-lane.log; start=$$(date +%s); \
	rm -f $$lane $$lane.status $$lane.took; \
	echo "test: the style check, the unit suites' build and the fuzz replays" \
	    "beside the end-to-end suites, at nice 19 (output: $$lane)"; \
	( nice -n 19 $(MAKE) --no-print-directory test-lane >$$lane 2>&1; \
	  echo $$? >$$lane.status; \
	  echo $$(( $$(date +%s) - start )) >$$lane.took ) & \
	st=0; $(MAKE) --no-print-directory e2e || st=$$?; \
	echo "test: the end-to-end suites took $$(( $$(date +%s) - start )) s"; \
	wait; \
	echo "test: the second lane took $$(cat $$lane.took) s; its output:"; \
	cat $$lane; \
	if [ "$$(cat $$lane.status)" != 0 ]; then \
		echo "test: the second lane failed (status $$(cat $$lane.status))"; \
		st=1; \
	fi; \
	t=$$(date +%s); \
	$(MAKE) --no-print-directory unit || st=1; \
	echo "test: the unit suites took $$(( $$(date +%s) - t )) s"; \
	exit $$st
endif

# The second lane of make test, one step after the other.
test-lane:
	$(MAKE) --no-print-directory -j$(NPROC) check-style $(TEST_BUILD)
	$(MAKE) --no-print-directory fuzz-replay

demo: all
	scripts/demo $(BUILD)

# The controller's container image (Containerfile), with docker or podman.
image:
	scripts/build-image

# The longest suites first (bats --timing's figures), then the others: with
# the suites side by side, one that starts last then ends with the rest.
E2E_LONG	 = ctl_project_quota ctl_ops ctl_upgrade cli_ops cli_logs ctl_projects ctl_chaos \
		   cli_admin dc_gang dc_api dc_robust ctl_objects \
		   ctl_webhook dc_core ctl_runbook dc_lifecycle manifests ctl_hostile
E2E_SUITES	 = $(wildcard $(E2E_LONG:%=tests/e2e/%.bats)) \
		   $(filter-out $(E2E_LONG:%=tests/e2e/%.bats),$(wildcard tests/e2e/*.bats))
# Suites run side by side, one per CPU (GNU parallel, as bats --jobs needs);
# the tests of one suite run in order. E2E_JOBS=1 runs them one at a time.
# --timing prints how long each test took, for keeping "make test" short.
E2E_JOBS	?= $(NPROC)

# The programs are built once here, on every CPU, so no suite runs make
# (TRAINYARD_E2E_BUILT, tests/e2e/devcluster.bash); kubectl runs from a copy
# in memory with huge pages, where root may mount one (tests/e2e/kubectl-in-memory).
e2e:
ifeq ($(strip $(E2E_SUITES)),)
	@echo "e2e: no end-to-end suites yet"
else
	$(MAKE) --no-print-directory -j$(NPROC) $(E2E_BUILD)
	TRAINYARD_E2E_BUILT=1 tests/e2e/kubectl-in-memory $(SAN)/kubectl \
	    bats --timing --jobs $(E2E_JOBS) --no-parallelize-within-files $(E2E_SUITES)
endif

# The chaos suite (tests/chaos/chaos.sh, docs/reliability.md): every
# scenario against the sanitizer builds; "make test" runs its short subset
# (tests/e2e/ctl_chaos.bats). CHAOS_SEED replays the random choices of a run.
# kubectl runs from memory, as in make e2e.
CHAOS_SEED	?=
CHAOS_SCENARIOS	?=

chaos: $(SAN)/bin/trainyard-devcluster $(SAN)/bin/trainyard-controller
	CHAOS_SEED=$(CHAOS_SEED) tests/e2e/kubectl-in-memory $(SAN)/kubectl \
	    tests/chaos/chaos.sh $(CHAOS_SCENARIOS)

# ---------------------------------------------------------------------------
# Fuzzing (docs/reliability.md): libFuzzer targets, tests/fuzz/fuzz_<name>.c,
# one per parser of untrusted input, built with clang, ASan and UBSan.
#
#   make fuzz                      every target for FUZZ_SECONDS (default 60) each
#   make fuzz FUZZ_TARGET=yaml     one target
#   make fuzz-replay               seeds and regressions through a plain driver
#                                  (gcc, the unit tests' sanitizers; make test runs it)
#
# The code under test goes into one archive per compiler; each target links
# what it uses from it.

FUZZ_CC		?= clang
FUZZ_SECONDS	?= 60
FUZZ_TARGET	?=
FUZZ_JOBS	?= 1
FUZZ_DIR	 = $(BUILD)/fuzz
FUZZ_ALL	 = $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_TARGETS	 = $(if $(FUZZ_TARGET),$(FUZZ_TARGET),$(FUZZ_ALL))
FUZZ_DEP_SRCS	 = $(sort $(LIB_SRCS) $(DC_SRCS) $(DC_CLIENT_SRCS) $(CTL_PURE_SRCS) \
		   controller/review.c controller/migrate.c $(CLI_PURE_SRCS) \
		   tests/fuzz/fuzzutil.c)
FUZZ_SAN	 = -fsanitize=address,undefined -fno-sanitize-recover=all \
		   -fno-omit-frame-pointer

$(FUZZ_DIR)/obj/%.o: OPT = -O1 -g
$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(TEST_CFLAGS) $(FUZZ_SAN) \
	    -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/libdeps.a: $(FUZZ_DEP_SRCS:%.c=$(FUZZ_DIR)/obj/%.o)
	rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/bin/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/libdeps.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LDLIBS_ALL)

# The replay driver: no clang needed.
$(SAN)/fuzz/libdeps.a: $(FUZZ_DEP_SRCS:%.c=$(SAN)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(SAN)/fuzz/replay_%: $(SAN)/tests/fuzz/fuzz_%.o $(SAN)/tests/fuzz/replay.o \
    $(SAN_RT) $(SAN)/fuzz/libdeps.a
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_ALL)

FUZZ_REPLAYS	 = $(FUZZ_ALL:%=$(SAN)/fuzz/replay_%)

ifneq ($(filter fuzz fuzz-build,$(MAKECMDGOALS)),)
ifeq ($(shell command -v $(FUZZ_CC) 2>/dev/null),)
$(error make fuzz: $(FUZZ_CC) not found; scripts/install-deps installs clang and \
    libclang-rt-14-dev (make fuzz-replay needs neither))
endif
endif

.PHONY: fuzz fuzz-build fuzz-replay
fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/bin/fuzz_%)

fuzz: fuzz-build
	nice -n $(or $(FUZZ_NICE),0) scripts/fuzz $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

fuzz-replay: $(FUZZ_REPLAYS)
	@scripts/fuzz-replay $(SAN)/fuzz $(FUZZ_ALL)

# ---------------------------------------------------------------------------
# Style: banned functions, include rules, cppcheck.

BANNED_FUNCS	 = sprintf vsprintf strcpy strcat strncpy strncat gets atoi atol \
		   atoll atof sscanf system sleep usleep strtok strerror gmtime \
		   localtime asctime ctime
space		:= $(subst ,, )
BANNED		 = '(^|[^_a-zA-Z0-9.>])($(subst $(space),|,$(strip $(BANNED_FUNCS))))[[:space:]]*\('
STYLE_SRCS	 = $(sort $(wildcard lib/*.c lib/*.h lib/include/kc/*.h \
		   controller/*.c controller/*.h devcluster/*.c devcluster/*.h \
		   tests/unit/*.c tests/unit/*.h tests/fakes/*.c tests/fakes/*.h \
		   tests/server/*.c tests/server/*.h examples/*/*.c cli/*.c cli/*.h))

check-style:
	@! grep -nE $(BANNED) $(STYLE_SRCS) || \
	    { echo 'check-style: banned function (see STYLE.md section 9)'; exit 1; }
	@! grep -l '<curl/curl.h>' $(STYLE_SRCS) | grep -vx lib/transport.c || \
	    { echo 'check-style: curl outside lib/transport.c'; exit 1; }
	@! grep -l '<yaml.h>' $(STYLE_SRCS) | grep -vx lib/yaml.c || \
	    { echo 'check-style: libyaml outside lib/yaml.c'; exit 1; }
	@! grep -l '<zlib.h>' $(STYLE_SRCS) | grep -vx lib/deflate.c || \
	    { echo 'check-style: zlib outside lib/deflate.c'; exit 1; }
	@! grep -lE '<(curl|yaml|zlib|libwebsockets|openssl/)' lib/include/kc/*.h || \
	    { echo 'check-style: third-party header in a public kc/ header'; exit 1; }
	@! grep -l '<libwebsockets.h>' $(STYLE_SRCS) | \
	    grep -vxE 'lib/connguard.c|controller/metrics.c|controller/webhook.c|devcluster/http.c|devcluster/exec.c|tests/server/testserver.c|cli/cmd_exec.c' || \
	    { echo 'check-style: libwebsockets outside its allowed files'; exit 1; }
	@! grep -lE '"(\.\./)*(controller|devcluster)/' lib/*.c lib/*.h || \
	    { echo 'check-style: lib/ includes a program header'; exit 1; }
	@! grep -l 'internal.h"' $(wildcard controller/*.c devcluster/*.c) /dev/null || \
	    { echo 'check-style: a program includes lib/internal.h'; exit 1; }
	cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
	    --enable=warning,portability --suppress=missingIncludeSystem \
	    -D__GNUC__ -DKC_FIXTURES='"tests/fixtures"' -DKC_VERSION='"0"' \
	    -Ilib/include -Ilib $(filter %.c,$(STYLE_SRCS))
	@echo "check-style: ok"

# ---------------------------------------------------------------------------
# Benchmarks (tests/bench/README.md), release build, not part of make test.
# Each section prints one "bench: scenario=..." line per scenario.

$(BUILD)/bin/dc-bench: $(BUILD)/tests/bench/dc_bench.o $(BUILD)/tests/bench/bench.o \
    $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/bin/ctl-bench: $(BUILD)/tests/bench/ctl_bench.o $(BUILD)/tests/bench/bench.o \
    $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/bin/conv-bench: $(BUILD)/tests/bench/conv_bench.o $(BUILD)/tests/bench/bench.o \
    $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/bin/proj-bench: $(BUILD)/tests/bench/proj_bench.o $(BUILD)/tests/bench/bench.o \
    $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# Hostile clients against a listener, with a prober (e2e and bench).
$(BUILD)/bin/ty-hostile: $(BUILD)/tests/bench/hostile.o $(BUILD)/tests/bench/bench.o \
    $(BUILD)/lib/libkc.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

STYLE_SRCS	+= $(wildcard tests/bench/*.c)
STYLE_SRCS	+= $(wildcard tests/fuzz/*.c tests/fuzz/*.h)

# BENCH_SECTIONS="ctl" runs only the controller's section; "proj" only its
# Project scenarios (ctl-projects, ctl-quota); "hostile" only ctl-hostile.
BENCH_SECTIONS	?= dc ctl conv

bench: $(BUILD)/bin/trainyard-devcluster $(BUILD)/bin/trainyard-controller \
    $(BUILD)/bin/dc-bench $(BUILD)/bin/ctl-bench $(BUILD)/bin/conv-bench \
    $(BUILD)/bin/proj-bench $(BUILD)/bin/ty-hostile
	@for s in $(BENCH_SECTIONS); do \
		case $$s in \
		dc|ctl|conv) tests/bench/$$s-bench.sh $(BUILD) || exit 1 ;; \
		proj)	BENCH_CTL_SCENARIOS=projects tests/bench/ctl-bench.sh $(BUILD) || exit 1 ;; \
		hostile) BENCH_CTL_SCENARIOS=hostile tests/bench/ctl-bench.sh $(BUILD) || exit 1 ;; \
		*)	echo "bench: unknown section $$s (dc, ctl, proj, hostile, conv)" >&2; exit 1 ;; \
		esac; \
	done

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
