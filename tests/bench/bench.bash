# bench.bash: what the scripts of the bench sections that start a
# devcluster and a controller share (sourced by ctl-bench.sh and
# conv-bench.sh). Messages start with the script's name.

# bench_stop PID NAME: SIGTERM, then SIGKILL after 10 s; waits for it.
bench_stop() {
	local p="$1" i
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || true
	for i in $(seq 200); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$p" 2>/dev/null; then
		echo "${0##*/}: $2 $p ignored SIGTERM; killing it" >&2
		kill -KILL "$p" 2>/dev/null || true
	fi
	wait "$p" 2>/dev/null || true
}

# bench_dc_start DEVCLUSTER LOG ARGS...: starts the devcluster on a free
# port of 127.0.0.1 with its kubeconfig at $KUBECONFIG, its output in LOG,
# into dcpid, and waits until the kubeconfig is written (exits on failure).
bench_dc_start() {
	local bin="$1" log="$2" i
	shift 2
	"$bin" --listen 127.0.0.1:0 --kubeconfig "$KUBECONFIG" "$@" >"$log" 2>&1 &
	dcpid=$!
	for i in $(seq 600); do
		[ -s "$KUBECONFIG" ] && return 0
		if ! kill -0 "$dcpid" 2>/dev/null || [ "$i" -eq 600 ]; then
			echo "${0##*/}: the devcluster did not start; its log:" >&2
			cat "$log" >&2
			exit 1
		fi
		sleep 0.05
	done
}

# bench_crds_established N: waits until N CRDs are Established (exits
# after 30 s). Polled, not `kubectl wait`: a watch the client closes
# leaves the devcluster's loop spinning on the dead connection (CPU the
# scenarios would be short of on a small machine).
bench_crds_established() {
	local n="$1" i est
	for i in $(seq 300); do
		est="$(kubectl get crd -o \
		    jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Established")].status}{" "}{end}')"
		[ "$(grep -o True <<<"$est" | wc -l)" -eq "$n" ] && return 0
		sleep 0.1
	done
	echo "${0##*/}: the CRDs were not established: $est" >&2
	exit 1
}

# bench_wait_started PID LOG: waits until the controller PID logs
# "started" in LOG (exits with its log when it dies or after 30 s).
bench_wait_started() {
	local p="$1" log="$2" i
	for i in $(seq 600); do
		grep -q '"started"\|started$' "$log" && return 0
		if ! kill -0 "$p" 2>/dev/null || [ "$i" -eq 600 ]; then
			echo "${0##*/}: the controller did not start; its log:" >&2
			cat "$log" >&2
			exit 1
		fi
		sleep 0.05
	done
}
