#!/usr/bin/env bash
# chaos.sh: the chaos suite (docs/reliability.md, "Chaos suite").
#
#	tests/chaos/chaos.sh [--quick] [--list] [SCENARIO...]
#
# Starts one devcluster (the GPU example cluster, a data dir, a fixed port
# so it can be restarted under its clients) and the sanitizer build of the
# controller, then runs each scenario: a workload, a fault, then, once the
# system settled, the invariants of check.bash, read from the API. Each
# scenario runs in a namespace of its own and prints one line; the last
# line is the summary
#
#	chaos: scenarios=N passed=N failed=N duplicates=0 orphans=0 stuck=0
#
# and the exit status is 0 only when every scenario passed. --quick runs
# the short fixed-seed subset "make test" runs. CHAOS_SEED picks the
# random choices (kill points, failing node, storm shares) and is printed
# first; the same seed replays the same choices. CHAOS_DEBUG=1 runs the
# controller at log level debug. TRAINYARD_CONTROLLER and DEVCLUSTER name other
# binaries, as for the e2e suites.

set -u
set -o pipefail

CHAOS_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BATS_TEST_DIRNAME="$CHAOS_HERE/../e2e"
# shellcheck source=../e2e/devcluster.bash
. "$CHAOS_HERE/../e2e/devcluster.bash"
# shellcheck source=../e2e/controller.bash
. "$CHAOS_HERE/../e2e/controller.bash"
# shellcheck source=check.bash
. "$CHAOS_HERE/check.bash"

CHAOS_BOUND="${CHAOS_BOUND:-60}"	# seconds a Run may take to settle
CHAOS_QUICK=(kill-start-4 kill-suspend-3 dc-restart-start storm-429-pods)

# ---- the cluster ------------------------------------------------------------

DC_ARGS=(--nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml"
    --pod-start-delay 100ms --node-monitor-grace-period 2s --node-monitor-period 500ms)

chaos_setup() {
	local server
	dc_start "${DC_ARGS[@]}" || return 1
	server="$(command kubectl --kubeconfig "$DC_DIR/kubeconfig" config view \
	    -o jsonpath='{.clusters[0].cluster.server}')"
	CHAOS_PORT="${server##*:}"
	ctl_build || return 1
	ctl_install || return 1
	ctl_install_projects || return 1
	ctl_config
	[ "${CHAOS_DEBUG:-0}" = 1 ] && echo "logLevel: debug" >>"$DC_DIR/controller.yaml"
	ctl_start || return 1
	chaos_watch_start "$DC_DIR/runs.watch"
}

# dc_restart [KILL]: the devcluster stopped (SIGTERM, or SIGKILL with
# KILL=kill) and started again on the same port and data dir.
dc_restart() {
	local pid i sig=TERM
	[ "${1:-}" = kill ] && sig=KILL
	pid="$(cat "$DC_DIR/pid")"
	kill -"$sig" "$pid"
	for i in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	wait "$pid" 2>/dev/null
	cat "$DC_DIR/log" >>"$DC_DIR/log.before-restarts"
	mv "$DC_DIR/kubeconfig" "$DC_DIR/kubeconfig.old"
	"$DC_BIN" --listen "127.0.0.1:$CHAOS_PORT" --kubeconfig "$DC_DIR/kubeconfig" \
	    --data-dir "$DC_DIR/data" "${DC_ARGS[@]}" >"$DC_DIR/log" 2>&1 3>&- &
	echo $! >"$DC_DIR/pid"
	for i in $(seq 200); do
		[ -s "$DC_DIR/kubeconfig" ] && return 0
		sleep 0.05
	done
	echo "the devcluster did not come back" >&2
	return 1
}

# fault JSON: adds a fault rule; faults_clear removes them all.
fault() {
	kubectl create --raw /devcluster/faults -f - <<<"$1" >/dev/null
}

faults_clear() {
	kubectl delete --raw /devcluster/faults >/dev/null
}

# ---- the controller ----------------------------------------------------------

CHAOS_KILLS=0	# kills a scenario asked for (--exit-after-writes-for-testing)

# ctl_crash_after K [ARGS...]: the controller restarted so that it kills
# itself after its K-th API write (only NS's Runs: its writes alone count).
ctl_crash_after() {
	local k="$1"
	shift
	ctl_stop || return 1
	CHAOS_KILLS=$((CHAOS_KILLS + 1))
	ctl_start --namespace "$NS" --exit-after-writes-for-testing "$k" "$@"
}

# ctl_wait_crash: until the controller killed itself (then it is restarted
# normally), or, when it never reached its k-th write within 20 s, it is
# stopped and restarted so the scenario goes on.
ctl_wait_crash() {
	local pid i
	pid="$(cat "$DC_DIR/controller.pid")"
	for i in $(seq 400); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		CHAOS_KILLS=$((CHAOS_KILLS - 1))
		ctl_stop || return 1
	else
		rm -f "$DC_DIR/controller.pid"
		CHAOS_NOTE="$(grep 'killed after write' "$DC_DIR/controller.log" | tail -1 |
		    sed -n 's/.*killed after write \([0-9]*\) (\([A-Z]*\) \([^ ?)]*\).*/write \1: \2 \3/p' |
		    sed 's#/apis\{0,1\}/[^ ]*/namespaces/[^/]*/#.../#')"
		[ -n "$CHAOS_NOTE" ] || {
			echo "crashed: the controller died by itself"
			return 1
		}
	fi
	ctl_start
}

# ---- the controller's wall clock -----------------------------------------------
#
# --wall-clock-offset-file-for-testing FILE: the controller's wall clock is
# the machine's plus the seconds FILE holds, read again every 100 ms; its
# monotonic clock does not move, as on an NTP step or a VM resumed.

# ctl_clock_start [ARGS...]: the controller restarted with its wall clock
# following $DC_DIR/clock-offset (no offset to begin with).
ctl_clock_start() {
	rm -f "$DC_DIR/clock-offset"
	ctl_stop || return 1
	ctl_start --wall-clock-offset-file-for-testing "$DC_DIR/clock-offset" "$@"
}

# ctl_clock_stop: the controller restarted without it.
ctl_clock_stop() {
	ctl_stop || return 1
	rm -f "$DC_DIR/clock-offset"
	ctl_start
}

# clock_write SECONDS [FILE]: the wall clock that follows FILE (default
# $DC_DIR/clock-offset) steps by SECONDS (negative: back); it takes the
# step at its next reading of the wall clock. Prints the new offset.
clock_write() {
	local file="${2:-$DC_DIR/clock-offset}" cur=0
	[ -s "$file" ] && cur="$(cat "$file")"
	printf '%s\n' "$((cur + $1))" >"$file.new" && mv "$file.new" "$file" || return 1
	echo "$((cur + $1))"
}

# clock_taken OFFSET N [LOG]: the controller logging to LOG (default
# controller.log) said more than N times that its clock is OFFSET s off.
clock_taken() {
	local re="the wall clock is now [+]\\{0,1\\}$1 s off"
	[ "$(grep -c "$re" "${3:-$DC_DIR/controller.log}")" -gt "$2" ]
}

# clock_step SECONDS [FILE [LOG]]: clock_write, then waits (5 s) until the
# controller logging to LOG says it took the step (it reads its wall clock
# at every reconcile of a Run with something timed).
clock_step() {
	local file="${2:-$DC_DIR/clock-offset}" log="${3:-$DC_DIR/controller.log}" cur=0 n i to
	[ -s "$file" ] && cur="$(cat "$file")"
	to=$((cur + $1))
	n="$(grep -c "the wall clock is now [+]\\{0,1\\}$to s off" "$log")" || true
	clock_write "$1" "$file" >/dev/null || return 1
	for i in $(seq 100); do
		clock_taken "$to" "$n" "$log" && return 0
		sleep 0.05
	done
	echo "clock: the controller did not take the step to $to s"
	return 1
}

# session_seconds NAME: sessionEndTime - sessionStartTime of the Run.
session_seconds() {
	kubectl get runs.trainyard.dev "$1" -n "$NS" -o json |
	    jq '(.status.sessionEndTime | fromdate) - (.status.sessionStartTime | fromdate)'
}

# ends_in NAME PHASE REASON T0 LOW HIGH: Run NAME reaches PHASE/REASON
# between LOW and HIGH seconds of real time after T0 (date +%s.%N), and
# its status says it lasted as long (the Finished time on the same clock).
ends_in() {
	local name="$1" phase="$2" reason="$3" t0="$4" low="$5" high="$6" t dur end
	end=$((SECONDS + CHAOS_BOUND))
	until [ "$(rnf "$name" '{.status.phase}/{.status.reason}')" = "$phase/$reason" ]; do
		[ "$SECONDS" -le "$end" ] || break
		sleep 0.1
	done
	t="$(echo "$(date +%s.%N) - $t0" | bc)"
	if [ "$(echo "$t < $low || $t > $high" | bc)" = 1 ]; then
		echo "clock: Run $NS/$name is $(rnf "$name" '{.status.phase}/{.status.reason}')" \
		    "after ${t}s; expected $phase/$reason after $low to $high s"
		return 1
	fi
	dur="$(session_seconds "$name")"
	if [ -z "$dur" ] || [ "$dur" -lt "${low%.*}" ] || [ "$dur" -gt "${high%.*}" ]; then
		echo "clock: Run $NS/$name's status says its session lasted ${dur}s, not $low to $high"
		return 1
	fi
	echo "$name ended $phase/$reason after ${t}s (status: ${dur}s)" >&2
}

# ---- workloads ----------------------------------------------------------------

# run NAME NODES [SPEC LINES] [-- KEY=VALUE...]: a Run in $NS at v1beta1
# (no webhook needed); each KEY=VALUE is the pod annotation
# devcluster.trainyard.dev/KEY (run-seconds, exit-code: docs/devcluster.md,
# "Kubelet"). Without run-seconds its pods run until deleted.
run() {
	local name="$1" nodes="$2" spec=() ann=() kv
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do spec+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	for kv in "$@"; do
		ann+=("devcluster.trainyard.dev/${kv%%=*}: \"${kv#*=}\"")
	done
	{
		printf 'apiVersion: trainyard.dev/v1beta1\nkind: Run\nmetadata: {name: %s}\n' "$name"
		printf 'spec:\n  nodes: %s\n  container: {image: busybox}\n' "$nodes"
		# A here-string, not a pipe: grep -q would make printf fail (pipefail).
		grep -q '^profile:' <<<"$(printf '%s\n' "${spec[@]}")" ||
		    printf '  profile: cpu-small\n'
		[ ${#spec[@]} -eq 0 ] || printf '  %s\n' "${spec[@]}"
		if [ ${#ann[@]} -gt 0 ]; then
			printf '  template:\n    metadata:\n      annotations:\n'
			printf '        %s\n' "${ann[@]}"
		fi
	} | kubectl apply -n "$NS" -f - >/dev/null
}

# rn NAME JSONPATH
rnf() {
	kubectl get runs.trainyard.dev "$1" -n "$NS" -o jsonpath="$2" 2>/dev/null
}

# expect NAME PHASE [REASON [SESSION]]: waits (CHAOS_BOUND) until Run NAME
# is stable in PHASE: Running with every node running, or an end phase
# with CleanedUp True, with that end reason and session. A Run that does
# not get there is stuck.
expect() {
	local name="$1" phase="$2" reason="${3:-}" session="${4:-}" end=$((SECONDS + CHAOS_BOUND)) got
	while [ "$SECONDS" -le "$end" ]; do
		got="$(kubectl get runs.trainyard.dev "$name" -n "$NS" -o json 2>/dev/null | jq -r '
		    .status as $s |
		    ([$s.conditions[]? | select(.type == "CleanedUp")] | first | .status // "") as $c |
		    [$s.phase // "", $s.reason // "", ($s.session // 0 | tostring),
		     (if $s.phase == "Running" then
		         (if ($s.nodes.running // 0) == .spec.nodes then "stable" else "moving" end)
		      elif $c == "True" then "stable" else "moving" end)] | join(" ")')"
		if [ "$phase" = Running ]; then
			[ "$got" = "Running  ${session:-1} stable" ] && return 0
		else
			[ "$got" = "$phase $reason ${session:-1} stable" ] && return 0
		fi
		sleep 0.2
	done
	echo "stuck: Run $NS/$name is \"$got\" after ${CHAOS_BOUND}s, expected" \
	    "\"$phase $reason ${session:-1} stable\""
	kubectl get "$CHAOS_KINDS" -n "$NS" -l "trainyard.dev/run=$name" -o json |
	    jq -r '.items[] | "    left: \(.kind) \(.metadata.name) phase=\(.status.phase // "-")" +
		" deleting=\(.metadata.deletionTimestamp // "no")"' >&2
	kubectl get runs.trainyard.dev "$name" -n "$NS" -o jsonpath='{.status.conditions}' >&2
	return 1
}

# gone NAME: Run NAME and everything labelled with it are gone.
gone() {
	local n end=$((SECONDS + CHAOS_BOUND))
	while [ "$SECONDS" -le "$end" ]; do
		n="$(kubectl get "runs.trainyard.dev,$CHAOS_KINDS" -n "$NS" \
		    -l "trainyard.dev/run=$1" -o name 2>/dev/null | wc -l)"
		if [ "$n" = 0 ] && ! kubectl get runs.trainyard.dev "$1" -n "$NS" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	echo "stuck: Run $NS/$1 or its objects still there after ${CHAOS_BOUND}s"
	return 1
}

# pods_of NAME [SESSION]: how many pods the Run has (in SESSION).
npods() {
	kubectl get pods -n "$NS" -l "trainyard.dev/run=$1${2:+,trainyard.dev/session=$2}" \
	    -o name | wc -l
}

# until_pods NAME N: waits until the Run has at least N pods.
until_pods() {
	local end=$((SECONDS + 20))
	while [ "$SECONDS" -le "$end" ]; do
		[ "$(npods "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	echo "stuck: Run $NS/$1 has fewer than $2 pods after 20s"
	return 1
}

# rand N: a number in 0..N-1 from the suite's seeded generator.
rand() {
	echo $((RANDOM % $1))
}

# ---- scenarios ----------------------------------------------------------------
#
# sc_<name>: the workload and the fault; returns non-zero (with a line on
# stdout) when the expected outcome does not come. The invariants run
# afterwards for every scenario.

# The controller killed at its k-th write of a session start (the status
# and its Event, PodGroup, Service, NetworkPolicy, pods, the status again).
sc_kill_start() {
	ctl_crash_after "$1" || return 1
	run job 4 || return 1
	ctl_wait_crash || return 1
	expect job Running
}

# kill_after_patch K SPEC EXPECT...: a running 4-node Run, the controller
# restarted to die at its K-th write, then the Run's spec patched with SPEC
# (merge): the writes that follow are the ones killed; then EXPECT.
kill_after_patch() {
	local k="$1" patch="$2"
	shift 2
	run job 4 || return 1
	expect job Running || return 1
	ctl_crash_after "$k" || return 1
	kubectl patch runs.trainyard.dev job -n "$NS" --type merge \
	    -p "{\"spec\":$patch}" >/dev/null || return 1
	ctl_wait_crash || return 1
	expect job "$@"
}

# Killed at the k-th write of a cleanup after a suspend (the status and its
# Event, the deletes of the PodGroup, Service, NetworkPolicy and pods,
# CleanedUp).
sc_kill_suspend() {
	kill_after_patch "$1" '{"suspend":true}' Stopped Suspended
}

# Killed at the k-th write of a session bump: an end and a start at once.
sc_kill_bump() {
	kill_after_patch "$1" '{"session":2}' Running "" 2
}

# Killed at the k-th write after a node failed: the failure's end.
sc_kill_failure() {
	ctl_crash_after "$1" || return 1
	run job 3 -- run-seconds=1 \
	    exit-code=3 || return 1
	ctl_wait_crash || return 1
	expect job Failed PodFailed
}

# Killed at the k-th write of an automatic restart (OnFailure, limit 1).
sc_kill_restart() {
	ctl_crash_after "$1" || return 1
	run job 2 'restart: {policy: OnFailure, limit: 1}' -- \
	    run-seconds=0.5 \
	    exit-code=1 || return 1
	ctl_wait_crash || return 1
	expect job Failed PodFailed 2
}

# A seeded kill point anywhere in a start and a success.
sc_kill_random() {
	local k=$((1 + $(rand 14)))
	echo "kill point $k" >&2
	ctl_crash_after "$k" || return 1
	run job 3 -- run-seconds=1.5 || return 1
	ctl_wait_crash || return 1
	expect job Succeeded Succeeded
}

# The controller killed (no crash point) between the Run's deletion and
# the end of its cleanup.
sc_kill_delete() {
	run job 4 || return 1
	expect job Running || return 1
	kubectl delete runs.trainyard.dev job -n "$NS" --wait=false >/dev/null || return 1
	ctl_kill9
	ctl_start || return 1
	gone job
}

# The devcluster killed (SIGKILL) right after a Run was created, and
# started again from its data dir while the controller keeps running.
sc_dc_restart_start() {
	run job 4 || return 1
	sleep 0.$(rand 5)
	dc_restart kill || return 1
	expect job Running
}

# The devcluster restarted (SIGTERM) in the middle of a cleanup.
sc_dc_restart_cleanup() {
	run job 4 || return 1
	expect job Running || return 1
	kubectl patch runs.trainyard.dev job -n "$NS" --type merge \
	    -p '{"spec":{"suspend":true}}' >/dev/null || return 1
	dc_restart || return 1
	expect job Stopped Suspended
}

# Both at once: the devcluster and the controller die mid-start.
sc_dc_and_ctl_restart() {
	run job 3 -- run-seconds=2 || return 1
	ctl_kill9
	dc_restart kill || return 1
	ctl_start || return 1
	expect job Succeeded Succeeded
}

# 503 with Retry-After on every other write for a while.
sc_storm_503_writes() {
	fault '{"verb": "*", "resource": "*", "code": 503, "retryAfterSeconds": 1,
	    "share": 0.5, "count": 12}' || return 1
	run job 4 -- run-seconds=2 || return 1
	expect job Succeeded Succeeded
}

# 429 storms on pod creates and deletes.
sc_storm_429_pods() {
	fault '{"verb": "create", "resource": "pods", "code": 429, "retryAfterSeconds": 1,
	    "count": 6}' || return 1
	fault '{"verb": "delete", "resource": "pods", "code": 429, "retryAfterSeconds": 1,
	    "count": 6}' || return 1
	run job 4 -- run-seconds=1 || return 1
	expect job Succeeded Succeeded || return 1
	# The end's Event survives the failed deletes that followed its status.
	end_events job SessionSucceeded 1
}

# end_events RUN REASON N: the Run has N Events of REASON (their counts).
end_events() {
	local n
	n="$(kubectl get events -n "$NS" --field-selector "involvedObject.name=$1,reason=$2" \
	    -o json | jq '[.items[] | .count // 1] | add // 0')"
	[ "$n" = "$3" ] && return 0
	echo "reasons: Run $NS/$1 has $n $2 Events, not $3"
	return 1
}

# 500s on the status writes and 409s on updates of Runs.
sc_storm_status() {
	fault '{"verb": "update", "resource": "runs/status", "code": 500, "share": 0.5,
	    "count": 6}' || return 1
	fault '{"verb": "*", "resource": "runs", "code": 409, "share": 0.34, "count": 4}' ||
	    return 1
	run job 3 -- run-seconds=1 \
	    exit-code=2 || return 1
	expect job Failed PodFailed
}

# 504 on lists and gets, so informers relist with backoff.
sc_storm_reads() {
	fault '{"verb": "list", "resource": "*", "code": 504, "count": 8}' || return 1
	fault '{"verb": "get", "resource": "*", "code": 503, "retryAfterSeconds": 1,
	    "count": 8}' || return 1
	kubectl create --raw /devcluster/faults/drop-watches -f /dev/null >/dev/null || return 1
	run job 2 -- run-seconds=1 || return 1
	expect job Succeeded Succeeded
}

# Every request slow (300 ms) through a start and an end.
sc_latency() {
	fault '{"verb": "*", "resource": "*", "latencyMs": 300, "count": 60}' || return 1
	run job 3 -- run-seconds=1 || return 1
	expect job Succeeded Succeeded
}

# The API server paused for 3 s in the middle of a start.
sc_pause() {
	run job 4 || return 1
	kubectl create --raw "/devcluster/faults/pause?seconds=3" -f /dev/null >/dev/null ||
	    return 1
	expect job Running
}

# Every watch dropped, again and again, through a start and a failure.
sc_watch_drops() {
	local i
	run job 3 -- run-seconds=1.5 \
	    exit-code=1 || return 1
	for i in 1 2 3 4 5; do
		kubectl create --raw /devcluster/faults/drop-watches -f /dev/null >/dev/null ||
		    return 1
		sleep 0.4
	done
	expect job Failed PodFailed
}

# History compacted (410 Expired on re-watch) while sessions change.
sc_compaction() {
	run job 3 || return 1
	until_pods job 1 || return 1
	kubectl create --raw /devcluster/faults/compact -f /dev/null >/dev/null || return 1
	kubectl create --raw /devcluster/faults/drop-watches -f /dev/null >/dev/null || return 1
	expect job Running || return 1
	kubectl patch runs.trainyard.dev job -n "$NS" --type merge \
	    -p '{"spec":{"session":2}}' >/dev/null || return 1
	kubectl create --raw /devcluster/faults/compact -f /dev/null >/dev/null || return 1
	kubectl create --raw /devcluster/faults/drop-watches -f /dev/null >/dev/null || return 1
	expect job Running "" 2
}

# A node running one of the Run's pods is deleted: NodeLost.
sc_node_lost() {
	local node
	run job 2 || return 1
	expect job Running || return 1
	node="$(kubectl get pod job-0 -n "$NS" -o jsonpath='{.spec.nodeName}')"
	kubectl get node "$node" -o json >"$DC_DIR/node.json" || return 1
	kubectl delete node "$node" >/dev/null || return 1
	expect job Failed NodeLost || return 1
	jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp,
	    .status, .spec.podCIDR, .spec.podCIDRs)' "$DC_DIR/node.json" |
	    kubectl create -f - >/dev/null
}

# A node is drained: the eviction ends the session (Evicted).
sc_node_drain() {
	local node
	run job 2 || return 1
	expect job Running || return 1
	node="$(kubectl get pod job-1 -n "$NS" -o jsonpath='{.spec.nodeName}')"
	kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --force \
	    --pod-selector "trainyard.dev/run=job" --timeout=30s >/dev/null 2>&1 || return 1
	kubectl uncordon "$node" >/dev/null || return 1
	expect job Failed Evicted
}

# A node's kubelet stops: unreachable past the toleration, the taint
# manager evicts (Evicted). Its pod stays Terminating while the machine is
# dead, as on a real cluster, so the restart (OnPreemption) waits for the
# kubelet to come back, then starts session 2.
sc_kubelet_stopped() {
	local node end=$((SECONDS + CHAOS_BOUND))
	run job 2 'restart: {policy: OnPreemption, limit: 1}' || return 1
	expect job Running || return 1
	node="$(kubectl get pod job-0 -n "$NS" -o jsonpath='{.spec.nodeName}')"
	kubectl annotate node "$node" devcluster.trainyard.dev/kubelet=stopped >/dev/null ||
	    return 1
	until [ "$(rnf job '{.status.phase}/{.status.reason}')" = Failed/Evicted ]; do
		[ "$SECONDS" -le "$end" ] || break
		sleep 0.2
	done
	kubectl annotate node "$node" devcluster.trainyard.dev/kubelet- >/dev/null || return 1
	expect job Running "" 2
}

# Ends of every kind, each under a kill of the controller in between.
sc_end_success() {
	run job 3 -- run-seconds=1 || return 1
	expect job Succeeded Succeeded
}

sc_end_deadline() {
	run job 2 'deadlines: {activeSeconds: 2}' || return 1
	until_pods job 2 || return 1
	ctl_kill9
	sleep 1
	ctl_start || return 1
	expect job Failed DeadlineExceeded
}

sc_end_pod_deleted() {
	run job 3 || return 1
	expect job Running || return 1
	kubectl delete pod job-$(rand 3) -n "$NS" --wait=false >/dev/null || return 1
	expect job Failed PodDeleted
}

sc_end_unschedulable() {
	# 9 nodes of 8 GPUs each do not fit on 8 nodes.
	run job 9 'profile: gpu-8' 'deadlines: {schedulingSeconds: 2}' || return 1
	expect job Failed Unschedulable
}

sc_end_delete_running() {
	run job 4 || return 1
	until_pods job 2 || return 1
	kubectl delete runs.trainyard.dev job -n "$NS" --wait=false >/dev/null || return 1
	gone job
}

# Many small Runs while every third write fails.
sc_many_small() {
	local i
	fault '{"verb": "create", "resource": "*", "code": 503, "retryAfterSeconds": 1,
	    "share": 0.34, "count": 30}' || return 1
	for i in $(seq 16); do
		run "j$i" 1 -- run-seconds=1 || return 1
	done
	for i in $(seq 16); do
		expect "j$i" Succeeded Succeeded || return 1
	done
}

# Two controllers fighting over the Lease; the leader killed mid-start.
sc_lease_fight() {
	local a b
	ctl_stop || return 1
	ctl_proc_start a --leader-elect --leader-election-id chaos-lease \
	    --namespace "$NS" --exit-after-writes-for-testing 6 || return 1
	ctl_proc_wait a 'leading: starting the workers' || return 1
	ctl_proc_start b --leader-elect --leader-election-id chaos-lease \
	    --namespace "$NS" || return 1
	run job 4 -- run-seconds=3 || return 1
	for a in $(seq 200); do
		ctl_proc_alive a || break
		sleep 0.1
	done
	ctl_proc_alive a && { echo "controller a never reached its 6th write"; return 1; }
	grep -q 'killed after write' "$DC_DIR/ctl-a.log" || {
		echo "controller a died by itself"
		return 1
	}
	rm -f "$DC_DIR/ctl-a.pid"
	expect job Succeeded Succeeded
	b=$?
	ctl_proc_stop_all || b=1
	ctl_start || return 1
	return "$b"
}

# clock_short_start: the controller on the test clock, and Run "short"
# with an 8 s deadline; CLOCK_T0 is when it was made.
clock_short_start() {
	ctl_clock_start || return 1
	CLOCK_T0="$(date +%s.%N)"
	run short 2 'deadlines: {activeSeconds: 8}'
}

# clock_short_step SECONDS: once "short" runs, 2 s later, the clock steps
# by SECONDS; "short" must still end after its 8 s of real time.
clock_short_step() {
	expect short Running || return 1
	sleep 2
	clock_step "$1" || return 1
	ends_in short Failed DeadlineExceeded "$CLOCK_T0" 6.5 12
}

# The controller's wall clock an hour ahead two seconds into three
# sessions: one with an 8 s deadline ends DeadlineExceeded after 8 s of
# real time (not at once), one that cannot be scheduled ends Unschedulable
# after its 10 s (not at once), one with a 120 s deadline keeps running
# until it is suspended.
sc_clock_ahead() {
	local st=0
	clock_short_start || return 1
	run pend 9 'profile: gpu-8' 'deadlines: {schedulingSeconds: 10}' || return 1
	run long 2 'deadlines: {activeSeconds: 120}' || return 1
	clock_short_step 3600 || st=1
	ends_in pend Failed Unschedulable "$CLOCK_T0" 8.5 14 || st=1
	[ "$(rnf long '{.status.phase}')" = Running ] || {
		echo "clock: Run $NS/long is $(rnf long '{.status.phase}/{.status.reason}')" \
		    "$(echo "$(date +%s.%N) - $CLOCK_T0" | bc)s into its 120 s"
		st=1
	}
	kubectl patch runs.trainyard.dev long -n "$NS" --type merge \
	    -p '{"spec":{"suspend":true}}' >/dev/null || return 1
	expect long Stopped Suspended || st=1
	ctl_clock_stop || return 1
	return "$st"
}

# The wall clock an hour back: an 8 s deadline still ends after 8 s, not
# an hour late; a restart's backoff (1 s) is not an hour either.
sc_clock_back() {
	local st=0
	clock_short_start || return 1
	run again 2 'restart: {policy: OnFailure, limit: 1}' -- run-seconds=4 exit-code=1 ||
	    return 1
	clock_short_step -3600 || st=1
	expect again Failed PodFailed 2 || st=1
	ctl_clock_stop || return 1
	return "$st"
}

# The clock steps ahead and back while a session's pods are created and
# while they are deleted (each step taken at the controller's next reading
# of its clock): no duplicate, nothing left, the ends as asked.
sc_clock_mid_start() {
	local n
	ctl_clock_start || return 1
	n="$(grep -c 'the wall clock is now -3600 s off' "$DC_DIR/controller.log")" || true
	run job 8 'deadlines: {activeSeconds: 300}' -- run-seconds=3 || return 1
	until_pods job 1 || return 1
	clock_write 3600 >/dev/null || return 1
	sleep 0.3
	clock_write -7200 >/dev/null || return 1
	expect job Succeeded Succeeded || return 1
	clock_taken -3600 "$n" || { echo "clock: the controller never took the steps"; return 1; }
	ctl_clock_stop
}

sc_clock_mid_cleanup() {
	local n
	ctl_clock_start || return 1
	n="$(grep -c 'the wall clock is now [+]3600 s off' "$DC_DIR/controller.log")" || true
	run job 8 'deadlines: {activeSeconds: 300}' || return 1
	expect job Running || return 1
	kubectl patch runs.trainyard.dev job -n "$NS" --type merge \
	    -p '{"spec":{"suspend":true}}' >/dev/null || return 1
	clock_write -3600 >/dev/null || return 1
	sleep 0.3
	clock_write 7200 >/dev/null || return 1
	expect job Stopped Suspended || return 1
	kubectl patch runs.trainyard.dev job -n "$NS" --type merge \
	    -p '{"spec":{"suspend":false}}' >/dev/null || return 1
	expect job Running "" 2 || return 1
	clock_taken 3600 "$n" || { echo "clock: the controller never took the steps"; return 1; }
	ctl_clock_stop
}

# clock_lease_fight WHO SECONDS: a leader (a) and a standby (b), each with
# a wall clock of its own; WHO's steps by SECONDS while a Run goes from
# start to success. The leader keeps the Lease, the standby never takes
# it, nothing is made twice.
clock_lease_fight() {
	local who="$1" secs="$2" id="chaos-clock-$CHAOS_N" st=0 p
	ctl_stop || return 1
	rm -f "$DC_DIR"/clock-a "$DC_DIR"/clock-b "$DC_DIR"/ctl-ca.log "$DC_DIR"/ctl-cb.log
	ctl_proc_start ca --leader-elect --leader-election-id "$id" --namespace "$NS" \
	    --wall-clock-offset-file-for-testing "$DC_DIR/clock-a" || return 1
	ctl_proc_wait ca 'leading: starting the workers' || return 1
	ctl_proc_start cb --leader-elect --leader-election-id "$id" --namespace "$NS" \
	    --wall-clock-offset-file-for-testing "$DC_DIR/clock-b" || return 1
	run job 4 -- run-seconds=20 || return 1
	until_pods job 2 || st=1
	clock_step "$secs" "$DC_DIR/clock-$who" "$DC_DIR/ctl-c$who.log" || st=1
	# Past a whole lease duration (15 s) and the renew deadline (10 s).
	expect job Succeeded Succeeded || st=1
	grep -q 'leading: starting the workers' "$DC_DIR/ctl-cb.log" && {
		echo "clock: the standby took the Lease from a live leader"
		st=1
	}
	ctl_proc_alive ca || { echo "clock: the leader lost its Lease"; st=1; }
	for p in ca cb; do
		ctl_proc_term "$p" || st=1
		rm -f "$DC_DIR/ctl-$p.pid"
	done
	ctl_start || return 1
	return "$st"
}

# Pods created while the controller's pod watch is held back (8 s), then
# the session ends: CleanedUp may turn True only once they are gone.
sc_unseen_pods_cleanup() {
	local end=$((SECONDS + CHAOS_BOUND)) n
	fault '{"verb": "watch", "resource": "pods", "latencyMs": 8000, "count": 1}' ||
	    return 1
	kubectl create --raw /devcluster/faults/drop-watches -f /dev/null >/dev/null || return 1
	run job 3 || return 1
	until_pods job 3 || return 1
	kubectl patch runs.trainyard.dev job -n "$NS" --type merge \
	    -p '{"spec":{"suspend":true}}' >/dev/null || return 1
	until [ "$(rnf job '{.status.conditions[?(@.type=="CleanedUp")].status}')" = True ]; do
		[ "$SECONDS" -le "$end" ] || break
		sleep 0.1
	done
	n="$(npods job)"
	[ "$n" = 0 ] || {
		echo "orphans: Run $NS/job says CleanedUp with $n pods of its session left"
		return 1
	}
	expect job Stopped Suspended
}

# The standby's clock an hour ahead during a lease fight.
sc_clock_standby_ahead() {
	clock_lease_fight b 3600
}

# The leader's clock an hour back: it keeps the Lease, the session goes on.
sc_clock_leader_back() {
	clock_lease_fight a -3600
}

# The conversion webhook unreachable and then slow while a v1alpha1
# client writes: the Run still starts once it answers.
sc_webhook_down() {
	fault '{"verb": "convert", "resource": "runs.trainyard.dev", "webhook": "unreachable",
	    "count": 2}' || return 1
	fault '{"verb": "convert", "resource": "runs.trainyard.dev", "latencyMs": 1500,
	    "count": 3}' || return 1
	local i
	for i in $(seq 20); do
		kubectl apply -n "$NS" -f - >/dev/null 2>&1 <<EOF && break
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: job}
spec:
  nodes: 2
  image: busybox
  profile: cpu-small
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "1"}
EOF
		sleep 0.5
	done
	expect job Succeeded Succeeded
}

# A 512-node Run (full suite only): started, the controller killed once in
# the middle of its pods, stopped.
sc_large() {
	kubectl apply -n "$NS" -f - >/dev/null <<EOF || return 1
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: big}
spec:
  nodes: 512
  container:
    image: busybox
    resources: {requests: {cpu: 10m, memory: 16Mi}}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
EOF
	until_pods big 200 || return 1
	ctl_kill9
	ctl_start || return 1
	expect big Running || return 1
	kubectl patch runs.trainyard.dev big -n "$NS" --type merge \
	    -p '{"spec":{"suspend":true}}' >/dev/null || return 1
	until_pods big 1 || true
	ctl_kill9
	ctl_start || return 1
	expect big Stopped Suspended
}

# project_apply NS: the Project on stdin applied, then a wait (up to 10 s)
# until its namespace NS exists.
project_apply() {
	local i
	kubectl apply -f - >/dev/null || return 1
	for i in $(seq 100); do
		kubectl get ns "$1" >/dev/null 2>&1 && break
		sleep 0.1
	done
}

# A project with room for two 8-GPU Runs: three wait their turn while the
# controller is killed; the quota is never over-committed (watched).
sc_project_quota() {
	local p="cq$CHAOS_N" i
	project_apply "$p" <<EOF || return 1
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: $p}
spec:
  owners: [{kind: Group, name: $p-leads}]
  namespaces: [{name: $p}]
  quota: {hard: {requests.nvidia.com/gpu: '16', pods: '64'}, maxGPUsPerRun: 8}
EOF
	NS="$p"
	for i in 1 2 3; do
		run "r$i" 1 'profile: gpu-8' -- run-seconds=1.5 ||
		    return 1
	done
	sleep 0.5
	ctl_kill9
	ctl_start || return 1
	for i in 1 2 3; do
		expect "r$i" Succeeded Succeeded || return 1
	done
	check_quota "$DC_DIR/runs.watch" "$p" 16
}

# Members join and leave while the controller is killed in between: no
# RoleBinding is left for the ones who left.
sc_members() {
	local p="cm$CHAOS_N" i
	project_apply "$p-eval" <<EOF || return 1
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: $p}
spec:
  owners: [{kind: Group, name: $p-leads}]
  namespaces: [{name: $p}, {name: $p-eval}]
  memberPolicy: {subjectKinds: [User, Group]}
EOF
	for i in 1 2 3; do
		kubectl apply -n "$p" -f - >/dev/null <<EOF || return 1
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: m$i}
spec:
  subject: {kind: User, name: $p-user$i}
  role: researcher
EOF
	done
	for i in $(seq 100); do
		[ "$(kubectl get rolebindings -A -l trainyard.dev/member -o name |
		    grep -c "trainyard-researcher-m")" -ge 6 ] && break
		sleep 0.1
	done
	kubectl delete projectmember m1 m2 -n "$p" --wait=false >/dev/null || return 1
	ctl_kill9
	ctl_start || return 1
	for i in $(seq 100); do
		kubectl get projectmember m1 m2 -n "$p" >/dev/null 2>&1 || break
		sleep 0.2
	done
	kubectl get projectmember m1 -n "$p" >/dev/null 2>&1 &&
	    { echo "stuck: ProjectMember $p/m1 not removed"; return 1; }
	check_bindings "$p-user1" "$p-user2" || return 1
	[ "$(kubectl get rolebindings -A -o json | jq --arg u "$p-user3" \
	    '[.items[] | select(any(.subjects[]?; .name == $u))] | length')" = 2 ] || {
		echo "stuck: the remaining member is not bound in both namespaces"
		return 1
	}
}

# The checker itself: planted duplicates, orphans, a session going back
# and an over-committed quota must each be reported, then are removed.
sc_checker() {
	local out f="$DC_DIR/planted.watch" i
	run job 1 || return 1
	expect job Running || return 1
	for i in a b; do
		kubectl apply -n "$NS" -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata:
  name: planted-$i
  labels: {trainyard.dev/run: job, trainyard.dev/session: "1", trainyard.dev/node-index: "0"}
spec:
  schedulerName: chaos-nobody
  containers: [{name: main, image: busybox}]
EOF
	done
	kubectl apply -n "$NS" -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Service
metadata:
  name: ghost
  labels: {trainyard.dev/run: ghost, trainyard.dev/session: "1"}
spec:
  ports: [{port: 80}]
EOF
	out="$(check_objects "$NS")" && { echo "checker: planted objects not reported"; return 1; }
	grep -q '^duplicates: pod job/1/0 x3$' <<<"$out" ||
	    { echo "checker: no duplicate reported: $out"; return 1; }
	grep -q '^orphans: Service ghost (session 1): Run ghost is gone$' <<<"$out" ||
	    { echo "checker: no orphan reported: $out"; return 1; }
	kubectl delete pod planted-a planted-b -n "$NS" --grace-period 0 --force \
	    >/dev/null 2>&1
	kubectl delete service ghost -n "$NS" >/dev/null || return 1
	printf '%s\n' '{"k":"x/a","u":"1","s":2,"p":"p","q":8}' \
	    '{"k":"x/b","u":"2","s":1,"p":"p","q":8}' \
	    '{"k":"x/a","u":"1","s":1,"p":"p","q":8}' \
	    '{"k":"x/c","u":"3","s":1,"p":"p","q":8}' >"$f"
	out="$(check_sessions "$f")" && { echo "checker: a session going back passed"; return 1; }
	[ "$out" = "backwards: Run x/a went from session 2 to 1" ] ||
	    { echo "checker: $out"; return 1; }
	out="$(check_quota "$f" p 16)" && { echo "checker: 24 of 16 GPUs passed"; return 1; }
	[ "$out" = "overquota: project p held 24 of 16 GPUs after x/c" ] ||
	    { echo "checker: $out"; return 1; }
	check_quota "$f" p 24 || return 1
}

# ---- the table ------------------------------------------------------------------
#
# name  function [args]

SCENARIOS=(
	"checker sc_checker"
	"kill-start-1 sc_kill_start 1"
	"kill-start-2 sc_kill_start 2"
	"kill-start-3 sc_kill_start 3"
	"kill-start-4 sc_kill_start 4"
	"kill-start-5 sc_kill_start 5"
	"kill-start-6 sc_kill_start 6"
	"kill-start-8 sc_kill_start 8"
	"kill-start-10 sc_kill_start 10"
	"kill-suspend-1 sc_kill_suspend 1"
	"kill-suspend-2 sc_kill_suspend 2"
	"kill-suspend-3 sc_kill_suspend 3"
	"kill-suspend-5 sc_kill_suspend 5"
	"kill-suspend-7 sc_kill_suspend 7"
	"kill-bump-2 sc_kill_bump 2"
	"kill-bump-5 sc_kill_bump 5"
	"kill-bump-8 sc_kill_bump 8"
	"kill-failure-2 sc_kill_failure 2"
	"kill-failure-9 sc_kill_failure 9"
	"kill-restart-10 sc_kill_restart 10"
	"kill-random sc_kill_random"
	"kill-delete sc_kill_delete"
	"dc-restart-start sc_dc_restart_start"
	"dc-restart-cleanup sc_dc_restart_cleanup"
	"dc-and-ctl-restart sc_dc_and_ctl_restart"
	"storm-503-writes sc_storm_503_writes"
	"storm-429-pods sc_storm_429_pods"
	"storm-status sc_storm_status"
	"storm-reads sc_storm_reads"
	"latency sc_latency"
	"pause sc_pause"
	"watch-drops sc_watch_drops"
	"compaction sc_compaction"
	"node-lost sc_node_lost"
	"node-drain sc_node_drain"
	"kubelet-stopped sc_kubelet_stopped"
	"end-success sc_end_success"
	"end-deadline sc_end_deadline"
	"end-pod-deleted sc_end_pod_deleted"
	"end-unschedulable sc_end_unschedulable"
	"end-delete-running sc_end_delete_running"
	"many-small sc_many_small"
	"lease-fight sc_lease_fight"
	"clock-ahead sc_clock_ahead"
	"clock-back sc_clock_back"
	"clock-mid-start sc_clock_mid_start"
	"clock-mid-cleanup sc_clock_mid_cleanup"
	"clock-standby-ahead sc_clock_standby_ahead"
	"clock-leader-back sc_clock_leader_back"
	"unseen-pods-cleanup sc_unseen_pods_cleanup"
	"webhook-down sc_webhook_down"
	"project-quota sc_project_quota"
	"members sc_members"
	"large-512 sc_large"
)

# ---- the driver -------------------------------------------------------------------

CHAOS_N=0
PASSED=0
FAILED=0
DUPLICATES=0
ORPHANS=0
STUCK=0

# count_problems TEXT: adds the problem lines to the summary's counters.
count_problems() {
	local n
	n="$(grep -c '^duplicates:' <<<"$1")" || true
	DUPLICATES=$((DUPLICATES + n))
	n="$(grep -c '^orphans:' <<<"$1")" || true
	ORPHANS=$((ORPHANS + n))
	n="$(grep -c '^stuck:' <<<"$1")" || true
	STUCK=$((STUCK + n))
}

# invariants: what must hold in $NS after a scenario (and the controller
# alive, no sanitizer report anywhere).
invariants() {
	local st=0
	check_objects "$NS" || st=1
	check_reasons "$NS" || st=1
	check_sessions "$DC_DIR/runs.watch" || st=1
	if ! kill -0 "$(cat "$DC_DIR/controller.pid" 2>/dev/null)" 2>/dev/null; then
		echo "crashed: the controller is not running"
		st=1
	fi
	if [ "$(grep -c 'killed after write' "$DC_DIR/controller.log")" -ne "$CHAOS_KILLS" ]; then
		echo "crashed: $(grep -c 'killed after write' "$DC_DIR/controller.log") kills" \
		    "at a crash point, $CHAOS_KILLS asked for"
		st=1
	fi
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
	    "$DC_DIR/controller.log" "$DC_DIR/log" "$DC_DIR"/ctl-*.log 2>/dev/null; then
		echo "sanitizer: a report in a log"
		st=1
	fi
	return "$st"
}

run_scenario() {
	local name="$1" fn="$2" t0 t1 out st=0 log
	shift 2
	CHAOS_N=$((CHAOS_N + 1))
	NS="chaos-$CHAOS_N"
	export NS
	log="$DC_DIR/scenario-$name.log"
	faults_clear
	if ! kubectl create namespace "$NS" >"$DC_DIR/out" 2>&1; then
		FAILED=$((FAILED + 1))
		printf 'chaos: %-22s FAILED  (namespace %s: %s)\n' "$name" "$NS" "$(cat "$DC_DIR/out")"
		return 0
	fi
	CHAOS_NOTE=
	t0=$(date +%s.%N)
	"$fn" "$@" >"$DC_DIR/out" 2>"$log" </dev/null || st=1
	faults_clear
	invariants >>"$DC_DIR/out" 2>>"$log" || st=1
	out="$(grep -v '^$' "$DC_DIR/out")"
	[ -n "$out" ] && st=1
	t1=$(date +%s.%N)
	count_problems "$out"
	if [ "$st" -eq 0 ]; then
		PASSED=$((PASSED + 1))
		printf 'chaos: %-22s ok      %5.1fs%s\n' "$name" "$(echo "$t1 - $t0" | bc)" \
		    "${CHAOS_NOTE:+  (killed at $CHAOS_NOTE)}"
	else
		FAILED=$((FAILED + 1))
		printf 'chaos: %-22s FAILED  %5.1fs\n' "$name" "$(echo "$t1 - $t0" | bc)"
		sed 's/^/    /' <<<"$out"
		[ -s "$log" ] && sed 's/^/    | /' "$log" | tail -15
		CHAOS_FAILED_ANY=1
	fi
}

main() {
	local only=() quick=0 list=0 s name fn args st=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--quick) quick=1 ;;
		--list) list=1 ;;
		-*) echo "usage: chaos.sh [--quick] [--list] [SCENARIO...]" >&2; return 2 ;;
		*) only+=("$1") ;;
		esac
		shift
	done
	if [ "$list" = 1 ]; then
		for s in "${SCENARIOS[@]}"; do echo "${s%% *}"; done
		return 0
	fi
	[ "$quick" = 1 ] && [ ${#only[@]} -eq 0 ] && only=("${CHAOS_QUICK[@]}")
	if [ "$quick" = 1 ]; then
		CHAOS_SEED="${CHAOS_SEED:-1}"
	fi
	CHAOS_SEED="${CHAOS_SEED:-$(( $(date +%s) % 100000 ))}"
	RANDOM="$CHAOS_SEED"
	echo "chaos: seed=$CHAOS_SEED (replay: make chaos CHAOS_SEED=$CHAOS_SEED)"
	chaos_setup || { echo "chaos: setup failed"; dc_stop; return 1; }
	for s in "${SCENARIOS[@]}"; do
		read -r name fn args <<<"$s"
		if [ ${#only[@]} -gt 0 ]; then
			grep -qx -- "$name" <<<"$(printf '%s\n' "${only[@]}")" || continue
		fi
		CHAOS_KILLS=$(grep -c 'killed after write' "$DC_DIR/controller.log")
		# shellcheck disable=SC2086
		run_scenario "$name" "$fn" $args
	done
	# Everything again, across every namespace, once the suite is over.
	chaos_watch_stop "$DC_DIR/runs.watch"
	ctl_stop || { echo "chaos: the controller did not stop cleanly"; st=1; }
	echo "chaos: scenarios=$((PASSED + FAILED)) passed=$PASSED failed=$FAILED" \
	    "duplicates=$DUPLICATES orphans=$ORPHANS stuck=$STUCK"
	[ "$FAILED" -eq 0 ] || st=1
	if [ "$st" -ne 0 ]; then
		cp -r "$DC_DIR" "${DC_DIR}.kept" 2>/dev/null
		echo "chaos: files kept in ${DC_DIR}.kept"
	fi
	dc_stop >/dev/null 2>&1 || true
	return "$st"
}

main "$@"
