#!/usr/bin/env bash
# ctl-bench.sh BUILD: the controller section of `make bench`.
#
# Starts the release devcluster ($BUILD/bin/trainyard-devcluster) in
# memory on a free port with a generated cluster of BENCH_CTL_CLUSTER
# nodes (8 nvidia.com/gpu each, no taints) and --no-kubelet-events,
# installs the Trainyard CRDs, the PodGroup CRD, the example
# PriorityClasses, the project roles and the ResourceProfiles "ctl-bench"
# (1 GPU, 1 CPU, 1 GiB per node) and "ctl-quota" (8 GPUs), then runs
# one ctl-bench scenario per entry of BENCH_CTL_SCENARIOS (RUNSxNODES),
# each against a fresh release
# trainyard-controller (BENCH_CTL_WORKERS workers, a rate limit high
# enough not to matter; the previous one is stopped first): create the
# Runs, wait until every pod exists, every Run is Running and the
# controller is quiet, delete the Runs, wait until every pod is gone.
# Each scenario prints one "bench: scenario=ctl-session" line
# (tests/bench/README.md). The entry "projects" runs proj-bench instead,
# against a fresh controller: BENCH_CTL_PROJECTS Projects with
# BENCH_CTL_MEMBERS ProjectMembers each, from scratch until all are Ready
# ("ctl-projects"), then BENCH_CTL_PROJECT_RUNS Runs in each of them
# against quota.hard BENCH_CTL_PROJECT_GPUS GPUs ("ctl-quota", at most
# BENCH_CTL_QUOTA_TIMEOUT seconds until every Run has its QuotaReserved
# condition); a ctl-quota that did not complete or failed its checks is
# reported, the scenarios after it still run, and the script fails at
# the end. The entry "hostile" holds BENCH_CTL_HOSTILE_CONNS hostile
# connections (slow headers, idle, slow bodies, garbage, idle keep-alive:
# $BUILD/bin/ty-hostile) against a fresh controller's health listener for
# BENCH_CTL_HOSTILE_SECONDS while probing /healthz on a new connection
# every 100 ms, as the kubelet does: "ctl-hostile" prints the probes'
# latency and the controller's RSS before and (at most) during the attack.
# Then
# the processes' totals one "bench: scenario=ctl-server" line each (for
# the controllers: CPU summed over all of them, the largest peak RSS, the
# last one's RSS).
# Everything it starts is stopped with SIGTERM (SIGKILL if it hangs) and
# the temporary directory removed on every exit path.
#
# Environment: BENCH_CTL_SCENARIOS ("1000x8 10x512 1x4000 projects"),
# BENCH_CTL_CLUSTER (1000 nodes), BENCH_CTL_WORKERS (16),
# BENCH_CTL_QPS (100000), BENCH_CTL_BURST (100000), BENCH_CTL_CLIENTS (8,
# the load generator's threads), BENCH_CTL_TIMEOUT (300 s per phase),
# BENCH_CTL_START_DELAY (--pod-start-delay, 200ms), BENCH_CTL_GANG (yes;
# "no" leaves the PodGroup CRD out, so the controller runs without gang
# scheduling and the devcluster binds each pod as it comes), BENCH_CTL_PERF
# (a file: record the first controller with `perf record -g` into it, the
# one of scenario N > 0 into FILE.N), BENCH_CTL_PROJECTS (100),
# BENCH_CTL_MEMBERS (20), BENCH_CTL_PROJECT_GPUS (40), BENCH_CTL_PROJECT_RUNS
# (10, of 8 GPUs each), BENCH_CTL_QUOTA_TIMEOUT (60 s),
# BENCH_CTL_HOSTILE_CONNS (1000), BENCH_CTL_HOSTILE_SECONDS (20).
set -euo pipefail

build="${1:?usage: ctl-bench.sh BUILD}"
dc="${BENCH_CTL_DEVCLUSTER:-$build/bin/trainyard-devcluster}"
ctl="$build/bin/trainyard-controller"
bench="$build/bin/ctl-bench"
pbench="$build/bin/proj-bench"
scenarios="${BENCH_CTL_SCENARIOS:-1000x8 10x512 1x4000 projects hostile}"
cluster="${BENCH_CTL_CLUSTER:-1000}"
workers="${BENCH_CTL_WORKERS:-16}"
qps="${BENCH_CTL_QPS:-100000}"
burst="${BENCH_CTL_BURST:-100000}"
clients="${BENCH_CTL_CLIENTS:-8}"
timeout="${BENCH_CTL_TIMEOUT:-300}"
start_delay="${BENCH_CTL_START_DELAY:-200ms}"
perf_out="${BENCH_CTL_PERF:-}"
perf_server_out="${BENCH_CTL_PERF_SERVER:-}"
read -r -a perf_args <<<"${BENCH_CTL_PERF_ARGS:--g}"
gang="${BENCH_CTL_GANG:-yes}"
projects="${BENCH_CTL_PROJECTS:-100}"
members="${BENCH_CTL_MEMBERS:-20}"
project_gpus="${BENCH_CTL_PROJECT_GPUS:-40}"
project_runs="${BENCH_CTL_PROJECT_RUNS:-10}"
quota_timeout="${BENCH_CTL_QUOTA_TIMEOUT:-60}"
hostile="$build/bin/ty-hostile"
hostile_conns="${BENCH_CTL_HOSTILE_CONNS:-1000}"
hostile_seconds="${BENCH_CTL_HOSTILE_SECONDS:-20}"

if [ "$cluster" -gt 4096 ]; then
	echo "ctl-bench.sh: BENCH_CTL_CLUSTER: at most 4096 nodes" >&2
	exit 1
fi
for f in "$dc" "$ctl" "$bench" "$pbench" "$hostile"; do
	[ -x "$f" ] || { echo "ctl-bench.sh: $f is missing (make bench builds it)" >&2; exit 1; }
done
command -v kubectl >/dev/null ||
    { echo "ctl-bench.sh: kubectl is not installed" >&2; exit 1; }
cd "$(dirname "$0")/../.."
# shellcheck source=tests/bench/bench.bash
. tests/bench/bench.bash

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ctl-bench.XXXXXX")"
dcpid=""	# the devcluster
ctlpid=""	# the controller running
ctllog=""	# its log
perfpid=""	# perf record, with BENCH_CTL_PERF
perfspid=""	# perf record, with BENCH_CTL_PERF_SERVER
child=""	# the ctl-bench running

cleanup() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	bench_stop "$perfpid" perf
	bench_stop "$perfspid" perf
	bench_stop "$ctlpid" controller
	bench_stop "$dcpid" devcluster
	if [ -n "${BENCH_CTL_LOGS:-}" ]; then
		mkdir -p "$BENCH_CTL_LOGS" &&
		    cp "$tmp"/controller-*.log "$tmp"/devcluster.log "$BENCH_CTL_LOGS"/ || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The cluster: untainted nodes with 8 GPUs and room for 110 pods.
awk -v n="$cluster" 'BEGIN {
	for (i = 0; i < n; i++) {
		printf "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%d\n", i
		printf "  labels:\n    kubernetes.io/hostname: node-%d\n", i
		printf "    topology.trainyard.dev/ib-zone: ib-%d\n", i % 4
		printf "status:\n"
		for (k = 0; k < 2; k++) {
			printf "  %s:\n", k == 0 ? "capacity" : "allocatable"
			printf "    cpu: \"128\"\n    memory: 1Ti\n    pods: \"110\"\n"
			printf "    nvidia.com/gpu: \"8\"\n"
			printf "    rdma/hca_shared_devices_a: \"1k\"\n"
		}
		printf "  conditions:\n  - type: Ready\n    status: \"True\"\n"
		printf "    reason: KubeletReady\n"
	}
}' >"$tmp/nodes.yaml"

cat >"$tmp/profile.yaml" <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: ResourceProfile
metadata:
  name: ctl-bench
spec:
  resources:
    cpu: "1"
    memory: 1Gi
    nvidia.com/gpu: 1
  maxNodes: 10000
---
apiVersion: trainyard.dev/v1beta1
kind: ResourceProfile
metadata:
  name: ctl-quota
spec:
  resources:
    cpu: "1"
    memory: 1Gi
    nvidia.com/gpu: 8
  maxNodes: 10000
EOF

export KUBECONFIG="$tmp/kubeconfig"
# A /12 of pod CIDRs: one /24 for each of up to 4096 nodes (the default
# /16 has 256, and pods on a node without one never start).
bench_dc_start "$dc" "$tmp/devcluster.log" --nodes "$tmp/nodes.yaml" \
    --cluster-cidr 10.240.0.0/12 --no-kubelet-events --pod-start-delay "$start_delay" \
    --log-level warn

podgroup_crd=(-f crds/third-party/scheduling.x-k8s.io_podgroups.yaml)
crd_files=(crds/*.yaml)
ncrds=$((${#crd_files[@]} + 1))
if [ "$gang" = no ]; then
	podgroup_crd=()
	ncrds=$((ncrds - 1))
fi
# The project roles, which the controller binds members and owners to.
kubectl apply -f crds/ "${podgroup_crd[@]}" -f examples/priorityclasses.yaml \
    -f manifests/project-roles.yaml >"$tmp/apply.log" 2>&1 ||
    { cat "$tmp/apply.log" >&2; exit 1; }
bench_crds_established "$ncrds"
kubectl apply -f "$tmp/profile.yaml" >>"$tmp/apply.log" 2>&1 ||
    { cat "$tmp/apply.log" >&2; exit 1; }

ctl_cpu=0	# CPU seconds of the controllers stopped so far
ctl_hwm=0	# their largest peak RSS (kB)
nctl=0		# controllers started

# The totals of a controller about to stop (or the last), into ctl_cpu and
# ctl_hwm.
ctl_account() {
	local cpu hwm
	read -r cpu hwm < <(awk -v tck="$(getconf CLK_TCK)" '
	FNR == 1 && FILENAME ~ /stat$/ {
		sub(/^.*\) /, ""); split($0, f, " ")
		cpu = (f[12] + f[13]) / tck
	}
	/^VmHWM:/ { hwm = $2 }
	END { printf "%.2f %d\n", cpu, hwm }' "/proc/$ctlpid/stat" "/proc/$ctlpid/status")
	ctl_cpu="$(awk -v a="$ctl_cpu" -v b="$cpu" 'BEGIN { printf "%.2f", a + b }')"
	[ "$hwm" -gt "$ctl_hwm" ] && ctl_hwm="$hwm"
	return 0
}

# Starts a fresh controller (logging to $tmp/controller-N.log, N from 0)
# and waits until its caches synced and its workers run ("started"); with
# BENCH_CTL_PERF, perf records it (into FILE for the first, FILE.N after).
start_controller() {
	local log="$tmp/controller-$nctl.log" out="$perf_out" i
	"$ctl" --kubeconfig "$KUBECONFIG" --workers "$workers" --kube-api-qps "$qps" \
	    --kube-api-burst "$burst" --metrics-bind-address 127.0.0.1:0 \
	    --health-probe-bind-address 127.0.0.1:0 --log-level info >"$log" 2>&1 &
	ctlpid=$!
	ctllog="$log"
	bench_wait_started "$ctlpid" "$log"
	if [ -n "$perf_out" ]; then
		[ "$nctl" -gt 0 ] && out="$perf_out.$nctl"
		perf record "${perf_args[@]}" -p "$ctlpid" -o "$out" \
		    >"$tmp/perf-$nctl.log" 2>&1 &
		perfpid=$!
	fi
	nctl=$((nctl + 1))
}

# Stops the running controller (and its perf), adding up its totals.
stop_controller() {
	ctl_account
	bench_stop "$perfpid" perf
	perfpid=""
	bench_stop "$ctlpid" controller
	ctlpid=""
}

if [ -n "$perf_server_out" ]; then
	perf record "${perf_args[@]}" -p "$dcpid" -o "$perf_server_out" >"$tmp/perf-server.log" 2>&1 &
	perfspid=$!
fi

read -r load1 _ </proc/loadavg
printf 'bench: scenario=ctl-host cpus=%s load1=%s mem_mb=%s cluster_nodes=%s workers=%s %s\n' \
    "$(nproc)" "$load1" "$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo)" \
    "$cluster" "$workers" "gang=$gang"

# The failure of scenario $1: the controller's and the devcluster's logs.
scenario_failed() {
	echo "ctl-bench.sh: scenario $1 failed; the controller's log:" >&2
	tail -n 20 "$ctllog" >&2
	echo "ctl-bench.sh: the devcluster's log:" >&2
	tail -n 20 "$tmp/devcluster.log" >&2
}

# run_child CMD...: runs CMD in the background (stopped on exit) and
# returns its status.
run_child() {
	local rc=0
	"$@" &
	child=$!
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

# The "projects" entry: ctl-projects then ctl-quota on a fresh controller.
# 1 when ctl-quota did not complete; exits when ctl-projects failed.
projects_scenario() {
	local prefix="$1" rc=0
	[ -n "$ctlpid" ] && stop_controller
	start_controller
	run_child "$pbench" projects --kubeconfig "$KUBECONFIG" --pid "$ctlpid" \
	    --server-pid "$dcpid" --projects "$projects" --members "$members" \
	    --gpus "$project_gpus" --clients "$clients" --timeout "$timeout" \
	    --prefix "$prefix" || rc=$?
	if [ "$rc" -ne 0 ]; then
		scenario_failed projects
		exit 1
	fi
	run_child "$pbench" quota --kubeconfig "$KUBECONFIG" --pid "$ctlpid" \
	    --server-pid "$dcpid" --projects "$projects" --runs "$project_runs" --nodes 1 \
	    --profile ctl-quota --clients "$clients" --timeout "$quota_timeout" \
	    --prefix "$prefix" || rc=$?
	if [ "$rc" -ne 0 ]; then
		scenario_failed quota
		return 1
	fi
	return 0
}

# The "hostile" entry: ty-hostile against a fresh controller's health
# listener; its RSS sampled every 0.2 s meanwhile.
hostile_scenario() {
	local port out="$tmp/hostile.out" rss0 rss peak=0 hpid rc=0
	[ -n "$ctlpid" ] && stop_controller
	start_controller
	port="$(sed -n 's/.*health probes on port \([0-9]*\).*/\1/p' "$ctllog" | tail -1)"
	rss0="$(awk '/^VmRSS:/ { print $2 }' "/proc/$ctlpid/status")"
	"$hostile" --target "127.0.0.1:$port" --conns "$hostile_conns" \
	    --seconds "$hostile_seconds" --probe "http://127.0.0.1:$port/healthz" \
	    >"$out" 2>&1 &
	hpid=$!
	while kill -0 "$hpid" 2>/dev/null; do
		rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$ctlpid/status")"
		[ "$rss" -gt "$peak" ] && peak="$rss"
		sleep 0.2
	done
	wait "$hpid" || rc=$?
	grep -v '^hostile: mode=' "$out" | head -5 >&2 || true
	sed -n 's/^hostile: mode=[a-z]* \(.*\)$/\1/p' "$out" | {
		read -r line || line="(no figures)"
		printf 'bench: scenario=ctl-hostile listener=health %s rss_idle_kb=%s rss_attack_peak_kb=%s\n' \
		    "$line" "$rss0" "$peak"
	}
	return "$rc"
}

failed=""	# scenarios that did not complete but let the others run
k=0
for sc in $scenarios; do
	if [ "$sc" = hostile ]; then
		hostile_scenario || failed="$failed ctl-hostile"
		continue
	fi
	if [ "$sc" = projects ]; then
		projects_scenario "s$k-p" || failed="$failed ctl-quota"
		k=$((k + 1))
		continue
	fi
	runs="${sc%x*}"
	nodes="${sc#*x}"
	if [ "$((runs * nodes))" -gt "$((cluster * 8))" ]; then
		echo "ctl-bench.sh: $sc needs $((runs * nodes)) GPUs; the cluster has" \
		    "$((cluster * 8)) (BENCH_CTL_CLUSTER)" >&2
		exit 1
	fi
	# A fresh controller for each scenario: rss_per_cached_pod_b of one
	# that already ran a burst would count what that burst left behind.
	[ -n "$ctlpid" ] && stop_controller
	start_controller
	rc=0
	run_child "$bench" --kubeconfig "$KUBECONFIG" --pid "$ctlpid" --server-pid "$dcpid" \
	    --runs "$runs" --nodes "$nodes" --clients "$clients" --timeout "$timeout" \
	    --prefix "s$k-" --label "gang=$gang" || rc=$?
	if [ "$rc" -ne 0 ]; then
		scenario_failed "$sc"
		exit 1
	fi
	k=$((k + 1))
done

# The processes' totals over every scenario: the devcluster's, and the
# controllers' (CPU summed over all of them, the largest peak RSS, the
# RSS of the last one).
if [ -n "$ctlpid" ]; then
	ctl_account
	awk -v cpu="$ctl_cpu" -v hwm="$ctl_hwm" -v n="$nctl" '
	/^VmRSS:/ { rss = $2 }
	END { printf "bench: scenario=ctl-server process=controller cpu_s=%.2f " \
	    "peak_rss_kb=%d rss_kb=%d controllers=%d\n", cpu, hwm, rss, n }' \
	    "/proc/$ctlpid/status"
fi
awk -v tck="$(getconf CLK_TCK)" '
FNR == 1 && FILENAME ~ /stat$/ {
	sub(/^.*\) /, ""); split($0, f, " ")
	cpu = (f[12] + f[13]) / tck
}
/^VmHWM:/ { hwm = $2 }
/^VmRSS:/ { rss = $2 }
END { printf "bench: scenario=ctl-server process=devcluster cpu_s=%.2f peak_rss_kb=%d rss_kb=%d\n",
    cpu, hwm, rss }' "/proc/$dcpid/stat" "/proc/$dcpid/status"
if cat "$tmp"/controller-*.log | grep -qiE 'warn|error'; then
	echo "ctl-bench.sh: the controllers' warnings and errors (last 10):" >&2
	cat "$tmp"/controller-*.log | grep -iE 'warn|error' | tail -n 10 >&2
fi
if [ -n "$failed" ]; then
	echo "ctl-bench.sh: did not complete:$failed" >&2
	exit 1
fi
