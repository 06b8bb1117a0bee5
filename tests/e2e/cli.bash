# cli.bash: what the kubectl-trainyard suites (cli_*.bats) share: the
# plugin built with the sanitizers and first on PATH, so the real kubectl
# runs it as "kubectl trainyard"; a devcluster of GPU nodes with the
# controller (ctl_setup_file); ctl_ns gives each test a namespace.

load devcluster
load controller

CLI_BIN="${TRAINYARD_CLI:-$DC_REPO/$DC_BUILD/san/bin/kubectl-trainyard}"

# cli_build: builds the plugin and puts its directory first on PATH.
cli_build() {
	if [ -z "${TRAINYARD_CLI:-}" ]; then
		dc_make "$DC_BUILD/san/bin/kubectl-trainyard" || return 1
	fi
	[ -x "$CLI_BIN" ] || return 1
	mkdir -p "$DC_DIR/plugins"
	ln -sf "$CLI_BIN" "$DC_DIR/plugins/kubectl-trainyard"
	export PATH="$DC_DIR/plugins:$PATH"
}

# cli_setup_file: a devcluster of GPU nodes, the CRDs, profiles and the
# controller; the plugin on PATH.
cli_setup_file() {
	ctl_setup_file "$@" || return 1
	cli_build
}

# kt ARGS...: what "kubectl trainyard ARGS" runs: kubectl finds
# kubectl-trainyard on PATH and execs it with ARGS and its environment, so
# the plugin is run the same way here without a kubectl start (0.15 CPU s
# each, a few hundred times). The tests that run the real "kubectl trainyard"
# (plugin discovery, signals through it, completion) say so.
kt() {
	kubectl-trainyard "$@"
}

cli_teardown_file() {
	ctl_teardown_file
}
