# controller.bash: trainyard-controller against a suite's devcluster.
#
#	load devcluster
#	load controller
#
#	setup_file()    { ctl_setup_file; }
#	teardown_file() { ctl_teardown_file; }
#	teardown()      { ctl_check; }
#
# ctl_setup_file starts a devcluster with the example GPU cluster
# (examples/devcluster/gpu-cluster.yaml: two zones of four 8-GPU nodes) and
# fast simulation flags (100 ms pod start, nodes declared unreachable after
# 2 s), installs what the product installs (ctl_install: the Trainyard
# CRDs of crds/, v1beta1 stored and v1alpha1 served through the conversion
# webhook), the scheduling.x-k8s.io PodGroup CRD (not with
# CTL_NO_PODGROUP=1), the example PriorityClasses and ResourceProfiles, and
# starts the sanitizer build of the controller with a --config file that
# makes restarts quick (restartBackoff 1s doubling to 2s) and pods leave a
# dead machine after 2 s. Its log goes to $DC_DIR/controller.log (appended
# across restarts, kept when a test fails).
#
# The webhook is in place as in a cluster, the devcluster way (docs/upgrade.md,
# "On the devcluster"): the namespace trainyard-system holds the Service
# trainyard-webhook without a selector (examples/devcluster/webhook-service.yaml),
# ctl_start runs the controller with --webhook-cert-mode=self and
# POD_NAMESPACE=trainyard-system, so it keeps its certificates there and
# writes its CA into the CRDs' caBundle, and points the Service's Endpoints
# at the webhook port it logs, after every start and restart. A request at
# v1alpha1 thus converts while ctl_start's controller runs; tests that stop
# or kill it write their Runs at v1beta1, which needs no webhook.
#
# ctl_check (each test's teardown) fails the test when the log shows a
# sanitizer report or the controller died; ctl_stop sends SIGTERM and
# wants exit status 0 (LeakSanitizer runs then); ctl_kill9 and
# ctl_restart play a crash. The wait helpers use kubectl wait, never
# a sleep where a condition can be waited for.
#
# TRAINYARD_CONTROLLER names the binary to use; without it, make brings
# $DC_BUILD/san/bin/trainyard-controller up to date first.

CTL_BIN="${TRAINYARD_CONTROLLER:-$DC_REPO/$DC_BUILD/san/bin/trainyard-controller}"
CTL_WAIT="${CTL_WAIT:-20s}"

ctl_build() {
	if [ -z "${TRAINYARD_CONTROLLER:-}" ]; then
		dc_make "$DC_BUILD/san/bin/trainyard-controller" || return 1
	fi
	[ -x "$CTL_BIN" ]
}

# ctl_install: the CRDs of $CTL_CRDS (default crds/; the runbook starts
# from crds/previous/) and the PodGroup CRD unless CTL_NO_PODGROUP=1, the
# namespace trainyard-system and the webhook's selector-less Service,
# PriorityClasses and ResourceProfiles. It leaves $DC_DIR/webhook-service
# behind: ctl_start then runs the controller as the webhook behind it.
ctl_install() {
	local dir="${CTL_CRDS:-$DC_REPO/crds}"
	local crds=(-f "$dir/trainyard.dev_runs.yaml"
	    -f "$dir/trainyard.dev_resourceprofiles.yaml")
	if [ "${CTL_NO_PODGROUP:-0}" != 1 ]; then
		crds+=(-f "$DC_REPO/crds/third-party/scheduling.x-k8s.io_podgroups.yaml")
	fi
	kubectl apply "${crds[@]}" -f "$DC_REPO/manifests/namespace.yaml" \
	    -f "$DC_REPO/examples/devcluster/webhook-service.yaml" >/dev/null || return 1
	touch "$DC_DIR/webhook-service"
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev >/dev/null || return 1
	# The profiles at v1beta1, or at v1alpha1 when the CRDs are the
	# previous release's, which serve only that.
	local v=v1beta1
	grep -qx '  - name: v1beta1' "$dir/trainyard.dev_resourceprofiles.yaml" || v=v1alpha1
	ctl_profiles "$v"
}

# ctl_profiles VERSION: the example PriorityClasses and ResourceProfiles,
# the profiles written at trainyard.dev/VERSION (a ResourceProfile has the
# same schema in v1alpha1 and v1beta1).
ctl_profiles() {
	sed "s#^apiVersion: trainyard.dev/v1beta1\$#apiVersion: trainyard.dev/$1#" \
	    "$DC_REPO/examples/profiles.yaml" |
	    kubectl apply -f "$DC_REPO/examples/priorityclasses.yaml" -f - >/dev/null
}

# ctl_install_projects [MANIFEST...]: after ctl_install, the Project and
# ProjectMember CRDs, the project roles and each MANIFEST, once the CRDs are
# established (the controller serves Projects only if they are there when
# it starts).
ctl_install_projects() {
	local extra=() m
	for m in "$@"; do extra+=(-f "$m"); done
	kubectl apply -f "$DC_REPO/crds/trainyard.dev_projects.yaml" \
	    -f "$DC_REPO/crds/trainyard.dev_projectmembers.yaml" \
	    -f "$DC_REPO/manifests/project-roles.yaml" "${extra[@]}" >/dev/null || return 1
	kubectl wait --for condition=established --timeout=20s \
	    crd/projects.trainyard.dev crd/projectmembers.trainyard.dev >/dev/null
}

# ctl_config: the controller's --config file.
ctl_config() {
	cat >"$DC_DIR/controller.yaml" <<EOF
apiVersion: trainyard.dev/v1alpha1
kind: ControllerConfig
restartBackoff: {base: 1s, max: 2s}
nodeFailureTolerationSeconds: 2
metricsBindAddress: "0"
healthProbeBindAddress: "0"
workers: 4
kubeAPIQPS: 1000
kubeAPIBurst: 1000
EOF
}

# ctl_webhook_endpoints PORT: the webhook Service's Endpoints at PORT on
# 127.0.0.1, as the endpoints controller would at a new pod.
ctl_webhook_endpoints() {
	kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Endpoints
metadata: {name: trainyard-webhook, namespace: trainyard-system}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: webhook, port: $1}]
EOF
}

# ctl_start [ARGS...]: starts the controller, waits until it logged
# "started". After ctl_install, it serves the conversion webhook with
# self-managed certificates in trainyard-system, and the Service's
# Endpoints point at it as soon as it logs its port.
ctl_start() {
	local n w i port="" hook=0 started ep=""
	local log="$DC_DIR/controller.log" re='s/.*conversion webhook on port \([0-9]*\).*/\1/p'
	n="$(grep -c 'msg=started' "$log" 2>/dev/null)" || true
	w="$(sed -n "$re" "$log" 2>/dev/null | wc -l)"
	[ -f "$DC_DIR/webhook-service" ] && hook=1
	rm -f "$DC_DIR/controller.rc" "$DC_DIR/controller.pid"
	# A wrapper records the exit status: a later test's shell cannot wait.
	(
		self=()
		if [ "$hook" = 1 ]; then
			export POD_NAMESPACE=trainyard-system
			self=(--webhook-cert-mode=self)
		fi
		"$CTL_BIN" --kubeconfig "$DC_DIR/kubeconfig" \
		    --config "$DC_DIR/controller.yaml" \
		    --metrics-bind-address 127.0.0.1:0 \
		    --health-probe-bind-address 127.0.0.1:0 \
		    --webhook-bind-address 127.0.0.1:0 \
		    "${self[@]}" "$@" >>"$log" 2>&1 &
		echo $! >"$DC_DIR/controller.pid.new"
		mv "$DC_DIR/controller.pid.new" "$DC_DIR/controller.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc" >"$DC_DIR/controller.rc"
	) 3>&- &
	for i in $(seq 100); do
		[ -s "$DC_DIR/controller.pid" ] && break
		sleep 0.01
	done
	for i in $(seq 400); do
		started=0
		[ "$(grep -c 'msg=started' "$log")" -gt "${n:-0}" ] && started=1
		# The port is logged before "started": the Endpoints follow it,
		# written while the controller's caches sync.
		if [ "$hook" = 1 ] && [ -z "$port" ] &&
		    [ "$(sed -n "$re" "$log" | wc -l)" -gt "$w" ]; then
			port="$(sed -n "$re" "$log" | tail -1)"
			ctl_webhook_endpoints "$port" &
			ep=$!
		fi
		if [ "$started" = 1 ]; then
			[ -z "$ep" ] || wait "$ep" || { echo "Endpoints not written" >&2; return 1; }
			return 0
		fi
		if ! kill -0 "$(cat "$DC_DIR/controller.pid")" 2>/dev/null; then
			echo "controller exited early:" >&2
			cat "$DC_DIR/controller.log" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "controller did not start:" >&2
	cat "$DC_DIR/controller.log" >&2
	return 1
}

# _ctl_sanitizer: fails when the controller's log shows a sanitizer report.
_ctl_sanitizer() {
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ThreadSanitizer' \
	    "$DC_DIR/controller.log" 2>/dev/null; then
		echo "sanitizer report in the controller log:" >&2
		cat "$DC_DIR/controller.log" >&2
		return 1
	fi
}

# ctl_check: a test's teardown: no sanitizer report, the controller alive.
ctl_check() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		echo "# the controller's log (last 40 lines):" >&2
		tail -40 "$DC_DIR/controller.log" >&2
	fi
	_ctl_sanitizer || return 1
	if [ -f "$DC_DIR/controller.pid" ] &&
	    ! kill -0 "$(cat "$DC_DIR/controller.pid")" 2>/dev/null; then
		echo "the controller died:" >&2
		tail -50 "$DC_DIR/controller.log" >&2
		return 1
	fi
}

# ctl_stop: SIGTERM, then a clean exit (status 0) within 25 s.
ctl_stop() {
	local pid i rc status=0
	[ -f "$DC_DIR/controller.pid" ] || return 0
	pid="$(cat "$DC_DIR/controller.pid")"
	rm -f "$DC_DIR/controller.pid"
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 500); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		echo "controller $pid did not stop on SIGTERM" >&2
		status=1
	fi
	for i in $(seq 100); do
		[ -s "$DC_DIR/controller.rc" ] && break
		sleep 0.02
	done
	rc="$(cat "$DC_DIR/controller.rc" 2>/dev/null)" || rc=unknown
	if [ "$status" -eq 0 ] && [ "$rc" != 0 ]; then
		echo "controller exited with status $rc:" >&2
		tail -50 "$DC_DIR/controller.log" >&2
		status=1
	fi
	_ctl_sanitizer || status=1
	return "$status"
}

# ctl_kill9: a crash (SIGKILL), nothing flushed.
ctl_kill9() {
	local pid
	pid="$(cat "$DC_DIR/controller.pid")"
	rm -f "$DC_DIR/controller.pid"
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.01
	done
}

# ctl_restart [ARGS...]: starts the controller again after ctl_kill9/ctl_stop.
ctl_restart() {
	ctl_start "$@"
}

ctl_setup_file() {
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms --node-monitor-grace-period 2s \
	    --node-monitor-period 500ms "$@" || return 1
	ctl_build || return 1
	ctl_install || return 1
	ctl_config
	ctl_start
}

ctl_teardown_file() {
	local status=0
	if [ -n "${DC_DIR:-}" ]; then
		ctl_stop || status=1
		if [ "$status" -ne 0 ]; then
			# Keep the log where dc_stop keeps a failed devcluster's files.
			cp "$DC_DIR/controller.log" "${DC_DIR}.controller.log" 2>/dev/null
			echo "controller log kept in ${DC_DIR}.controller.log" >&2
		fi
	fi
	dc_stop || status=1
	return "$status"
}

# ---- runs and namespaces ------------------------------------------------

# ctl_ns: a fresh namespace for this test, in $NS.
ctl_ns() {
	NS="t${BATS_TEST_NUMBER}"
	kubectl create namespace "$NS" >/dev/null
	export NS
}

# ctl_apply: a manifest on stdin, into $NS.
ctl_apply() {
	kubectl apply -n "$NS" -f - >/dev/null
}

# rn NAME JSONPATH: prints a field of Run NAME in $NS.
rn() {
	kubectl get rn "$1" -n "$NS" -o jsonpath="$2"
}

# wait_rn NAME JSONPATH VALUE [TIMEOUT]: until the Run's field has VALUE.
wait_rn() {
	kubectl wait -n "$NS" --for=jsonpath="$2"="$3" "rn/$1" \
	    --timeout="${4:-$CTL_WAIT}" >/dev/null
}

# wait_phase NAME PHASE [TIMEOUT]
wait_phase() {
	wait_rn "$1" '{.status.phase}' "$2" "${3:-}"
}

# wait_cond NAME TYPE [STATUS] [TIMEOUT]: a status condition.
wait_cond() {
	kubectl wait -n "$NS" --for=condition="$2"="${3:-True}" "rn/$1" \
	    --timeout="${4:-$CTL_WAIT}" >/dev/null
}

# wait_cleaned NAME: the session's objects are gone (CleanedUp True).
wait_cleaned() {
	wait_cond "$1" CleanedUp True "${2:-}"
}

# wait_pods NAME JSONPATH VALUE: every pod of the run has VALUE.
wait_pods() {
	kubectl wait -n "$NS" --for=jsonpath="$2"="$3" pod -l "trainyard.dev/run=$1" \
	    --timeout="${4:-$CTL_WAIT}" >/dev/null
}

# wait_gone KIND/NAME...: deleted.
wait_gone() {
	kubectl wait -n "$NS" --for=delete "$@" --timeout="$CTL_WAIT" >/dev/null
}

# owned NAME: "pods services networkpolicies podgroups" counts of run NAME.
owned() {
	local kinds="pods,services,networkpolicies" n
	if [ "${CTL_NO_PODGROUP:-0}" != 1 ]; then
		kinds="$kinds,podgroups.scheduling.x-k8s.io"
	fi
	n="$(kubectl get "$kinds" -n "$NS" -l "trainyard.dev/run=$1" -o name | wc -l)"
	echo "$n"
}

# events NAME REASON: the messages of the Run's Events with that reason.
events() {
	kubectl get events -n "$NS" \
	    --field-selector "involvedObject.kind=Run,involvedObject.name=$1,reason=$2" \
	    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}

# writes: the API writes counted by the devcluster since the last reset.
writes() {
	kubectl get --raw /devcluster/stats |
	    jq '[.requests[] | select(.verb == "create" or .verb == "update" or
	        .verb == "patch" or .verb == "delete") | .count] | add // 0'
}

# ---- several controllers at once, by name (tests/e2e/ctl_ops.bats) -------
#
# These run next to (not instead of) ctl_start's single controller: each
# named controller keeps its log, pid and exit status in
# $DC_DIR/ctl-NAME.{log,pid,rc}, so a suite can run a leader and standbys,
# other kubeconfigs and log formats at once. "started" is found in the
# text and the JSON log format alike.

# ctl_proc_launch NAME [ARGS...]: starts controller NAME in the background
# with the suite's kubeconfig and --config file, every listener (metrics,
# health, conversion webhook) on 127.0.0.1:0, then ARGS (a later --kubeconfig or --config wins). No wait.
ctl_proc_launch() {
	local name="$1" i
	shift
	rm -f "$DC_DIR/ctl-$name.rc" "$DC_DIR/ctl-$name.pid"
	(
		"$CTL_BIN" --kubeconfig "$DC_DIR/kubeconfig" \
		    --config "$DC_DIR/controller.yaml" \
		    --metrics-bind-address 127.0.0.1:0 \
		    --health-probe-bind-address 127.0.0.1:0 \
		    --webhook-bind-address 127.0.0.1:0 \
		    "$@" >>"$DC_DIR/ctl-$name.log" 2>&1 &
		echo $! >"$DC_DIR/ctl-$name.pid.new"
		mv "$DC_DIR/ctl-$name.pid.new" "$DC_DIR/ctl-$name.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc" >"$DC_DIR/ctl-$name.rc"
	) 3>&- 2>/dev/null &
	for i in $(seq 200); do
		[ -s "$DC_DIR/ctl-$name.pid" ] && return 0
		sleep 0.01
	done
	echo "controller $name: no pid" >&2
	return 1
}

# ctl_proc_pid NAME
ctl_proc_pid() {
	cat "$DC_DIR/ctl-$1.pid"
}

# ctl_proc_alive NAME: whether controller NAME runs.
ctl_proc_alive() {
	[ -s "$DC_DIR/ctl-$1.pid" ] && kill -0 "$(ctl_proc_pid "$1")" 2>/dev/null
}

# ctl_proc_wait NAME ERE [SECONDS]: until NAME's log has a line matching
# ERE (default 20 s); fails, showing the log, on timeout or if it exits.
ctl_proc_wait() {
	local name="$1" re="$2" secs="${3:-20}" i
	for i in $(seq $((secs * 20))); do
		grep -qE "$re" "$DC_DIR/ctl-$name.log" 2>/dev/null && return 0
		if ! ctl_proc_alive "$name"; then
			grep -qE "$re" "$DC_DIR/ctl-$name.log" 2>/dev/null && return 0
			echo "controller $name exited before logging /$re/:" >&2
			tail -40 "$DC_DIR/ctl-$name.log" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "controller $name logged no line matching /$re/ in $secs s:" >&2
	tail -40 "$DC_DIR/ctl-$name.log" >&2
	return 1
}

# ctl_proc_start NAME [ARGS...]: ctl_proc_launch, then waits for "started".
ctl_proc_start() {
	ctl_proc_launch "$@" || return 1
	ctl_proc_wait "$1" '(msg=started|"msg":"started")'
}

# ctl_proc_port NAME metrics|health: the port NAME listens on.
ctl_proc_port() {
	local line
	line="$(grep -oE 'metrics on port [0-9]+, health probes on port [0-9]+' \
	    "$DC_DIR/ctl-$1.log" | tail -1)"
	if [ "$2" = health ]; then
		echo "${line##* }"
	else
		line="${line%%,*}"
		echo "${line##* }"
	fi
}

# ctl_proc_identity NAME: its leader-election identity, from its log.
ctl_proc_identity() {
	grep -oE 'leader election on Lease [^ ]+ as [^ "]+' "$DC_DIR/ctl-$1.log" |
	    tail -1 | sed 's/.* as //'
}

# ctl_proc_kill9 NAME: a crash.
ctl_proc_kill9() {
	local pid
	pid="$(ctl_proc_pid "$1")"
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.01
	done
}

# ctl_proc_term NAME [SECONDS]: SIGTERM, then wants exit status 0 within
# SECONDS (default 25) and no sanitizer report; SIGKILL past that.
ctl_proc_term() {
	local name="$1" secs="${2:-25}" pid i rc
	pid="$(ctl_proc_pid "$name")"
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq $((secs * 50))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		echo "controller $name did not stop within $secs s of SIGTERM:" >&2
		tail -40 "$DC_DIR/ctl-$name.log" >&2
		return 1
	fi
	for i in $(seq 100); do
		[ -s "$DC_DIR/ctl-$name.rc" ] && break
		sleep 0.02
	done
	rc="$(cat "$DC_DIR/ctl-$name.rc" 2>/dev/null)" || rc=unknown
	if [ "$rc" != 0 ]; then
		echo "controller $name exited with status $rc:" >&2
		tail -40 "$DC_DIR/ctl-$name.log" >&2
		return 1
	fi
	ctl_proc_sanitizer "$name"
}

# ctl_proc_sanitizer [NAME...]: no sanitizer report in their logs (all
# named controllers' without NAME).
ctl_proc_sanitizer() {
	local f files=() status=0
	if [ $# -eq 0 ]; then
		files=("$DC_DIR"/ctl-*.log)
	else
		for f in "$@"; do files+=("$DC_DIR/ctl-$f.log"); done
	fi
	for f in "${files[@]}"; do
		[ -f "$f" ] || continue
		if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ThreadSanitizer' "$f"; then
			echo "sanitizer report in $f:" >&2
			cat "$f" >&2
			status=1
		fi
	done
	return "$status"
}

# ctl_proc_stop_all: SIGTERMs every named controller still running (a
# test's teardown); fails on a bad exit or a sanitizer report.
ctl_proc_stop_all() {
	local f name status=0
	for f in "$DC_DIR"/ctl-*.pid; do
		[ -f "$f" ] || continue
		name="${f##*/ctl-}"
		name="${name%.pid}"
		if ctl_proc_alive "$name"; then
			ctl_proc_term "$name" || status=1
		fi
		rm -f "$f"
	done
	ctl_proc_sanitizer || status=1
	return "$status"
}

# ctl_sa_kubeconfig FILE [NAMESPACE NAME]: a kubeconfig for a service
# account (default trainyard-system/trainyard-controller) holding a token
# from "kubectl create token", with the suite's server and CA.
ctl_sa_kubeconfig() {
	local file="$1" ns="${2:-trainyard-system}" sa="${3:-trainyard-controller}"
	local token
	token="$(kubectl -n "$ns" create token "$sa")" || return 1
	# The current cluster (server and CA) with the token as its only user.
	kubectl config view --raw --minify -o json |
	    jq --arg sa "$sa" --arg ns "$ns" --arg token "$token" '{
		apiVersion: "v1", kind: "Config",
		clusters: [{name: "devcluster", cluster: .clusters[0].cluster}],
		users: [{name: $sa, user: {token: $token}}],
		contexts: [{name: $sa,
		    context: {cluster: "devcluster", user: $sa, namespace: $ns}}],
		"current-context": $sa}' >"$file.new" &&
	    mv "$file.new" "$file"
}

# lease_holder NAMESPACE NAME: the Lease's holderIdentity ("" if released).
lease_holder() {
	kubectl get lease "$2" -n "$1" -o jsonpath='{.spec.holderIdentity}'
}
