#!/usr/bin/env bash
# dc-bench.sh BUILD: the devcluster section of `make bench`.
#
# Runs the release devcluster ($BUILD/bin/trainyard-devcluster) twice on a
# free port, first in memory (no --data-dir), then with --data-dir, and
# each time runs the dc-bench scenarios against it (tests/bench/README.md):
# create, get, list (unpaged and paged), watch fan-out, then the server's
# peak RSS and CPU time, and its stop time. Every figure is one line
# starting with "bench: ". The devcluster is stopped with SIGTERM (SIGKILL
# if it hangs) and the temporary directory removed on every exit path.
#
# Sizes come from the environment: BENCH_OBJECTS (20000), BENCH_CLIENTS
# (16), BENCH_REQUESTS (40000), BENCH_WATCHERS (100), BENCH_WRITES (400),
# BENCH_STORES ("memory data-dir").
set -euo pipefail

build="${1:?usage: dc-bench.sh BUILD}"
dc="$build/bin/trainyard-devcluster"
bench="$build/bin/dc-bench"
objects="${BENCH_OBJECTS:-20000}"
clients="${BENCH_CLIENTS:-16}"
requests="${BENCH_REQUESTS:-40000}"
watchers="${BENCH_WATCHERS:-100}"
writes="${BENCH_WRITES:-400}"
stores="${BENCH_STORES:-memory data-dir}"

for f in "$dc" "$bench"; do
	[ -x "$f" ] || { echo "dc-bench.sh: $f is missing (make bench builds it)" >&2; exit 1; }
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/dc-bench.XXXXXX")"
pid=""		# the devcluster
child=""	# the dc-bench running

# Stops the devcluster, if one runs: SIGTERM, then SIGKILL after 10 s.
# Its exit status goes to halt_rc.
halt_rc=0
halt() {
	local i
	halt_rc=0
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "dc-bench.sh: devcluster $pid ignored SIGTERM; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || halt_rc=$?
	pid=""
}

cleanup() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	halt
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start DIR ARGS...: a devcluster whose kubeconfig and log live in DIR.
start() {
	local dir="$1" i
	shift
	mkdir -p "$dir"
	"$dc" --listen 127.0.0.1:0 --kubeconfig "$dir/kubeconfig" "$@" >"$dir/log" 2>&1 &
	pid=$!
	for i in $(seq 400); do
		[ -s "$dir/kubeconfig" ] && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "dc-bench.sh: the devcluster exited early:" >&2
			cat "$dir/log" >&2
			pid=""
			return 1
		fi
		sleep 0.05
	done
	echo "dc-bench.sh: the devcluster did not become ready:" >&2
	cat "$dir/log" >&2
	return 1
}

# run DIR SCENARIO ARGS...: one dc-bench scenario; its log on failure.
# It runs in the background so that a signal interrupts the wait at once.
run() {
	local dir="$1" rc=0
	shift
	"$bench" "$@" --pid "$pid" &
	child=$!
	wait "$child" || rc=$?
	child=""
	if [ "$rc" -ne 0 ]; then
		echo "dc-bench.sh: dc-bench $* failed; devcluster log:" >&2
		tail -n 20 "$dir/log" >&2
		return 1
	fi
}

# The machine: figures from a busy one (load1 near or above cpus) are
# wall-clock noise; the *_cpu_s fields hold up better.
read -r load1 _ </proc/loadavg
printf 'bench: scenario=dc-host cpus=%s load1=%s mem_mb=%s\n' "$(nproc)" "$load1" \
    "$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo)"

for store in $stores; do
	dir="$tmp/$store"
	case "$store" in
	memory)		start "$dir" ;;
	data-dir)	start "$dir" --data-dir "$dir/data" ;;
	*)		echo "dc-bench.sh: unknown store $store" >&2; exit 1 ;;
	esac
	kc=(--kubeconfig "$dir/kubeconfig" --label "store=$store")
	run "$dir" create "${kc[@]}" --clients "$clients" --objects "$objects"
	run "$dir" get "${kc[@]}" --clients "$clients" --objects "$objects" \
	    --requests "$requests"
	run "$dir" list "${kc[@]}" --reps 5
	run "$dir" list "${kc[@]}" --reps 5 --limit 500
	run "$dir" watch "${kc[@]}" --watchers "$watchers" --writes "$writes"
	run "$dir" server --label "store=$store"

	# Shutdown time: with a data dir, the final flush is in it.
	t0="$EPOCHREALTIME"
	halt
	t1="$EPOCHREALTIME"
	data_kb=0
	if [ -d "$dir/data" ]; then
		data_kb="$(du -sk "$dir/data" | cut -f1)"
	fi
	awk -v s="$store" -v a="$t0" -v b="$t1" -v d="$data_kb" -v rc="$halt_rc" \
	    'BEGIN { printf "bench: scenario=dc-stop store=%s seconds=%.3f data_kb=%s exit=%s\n",
	    s, b - a, d, rc }'
	if [ "$halt_rc" -ne 0 ]; then
		echo "dc-bench.sh: the devcluster exited with status $halt_rc; its log:" >&2
		tail -n 20 "$dir/log" >&2
		exit 1
	fi
done
