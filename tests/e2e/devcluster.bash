# devcluster.bash: start and stop a trainyard-devcluster for a bats suite.
#
#	load devcluster
#
#	setup_file()    { dc_start --kubernetes-version 1.31; }
#	teardown_file() { dc_stop; }
#
#	@test "..." { kubectl get ns; }
#
# dc_start runs the devcluster (the sanitizer build, so AddressSanitizer
# catches memory errors while kubectl drives it) on a free port with a
# temporary data dir, waits until it has written its kubeconfig and
# answers /readyz, and exports KUBECONFIG. kubectl is wrapped so that
# every call uses a fresh --cache-dir of this devcluster and gives up
# after 20 s, and runs the kubectl of the server's minor (DC_KUBECTL). dc_stop sends SIGTERM, waits for a clean exit (status 0),
# fails the suite when the log shows a sanitizer report, and removes the
# temporary files; it also kills the process if it does not stop in
# time, so a failed test never leaves a devcluster behind.
#
# Several devclusters may run at once: dc_start_extra VAR ARGS starts
# another and stores its directory in VAR (stop it with dc_stop_extra
# "$VAR"); dc_stop also stops any extra a failing test left running.
#
# DEVCLUSTER names the binary to use; without it, make brings
# $DC_BUILD/san/bin/trainyard-devcluster (DC_BUILD defaults to build) up
# to date first (dc_make).

# kubectl runs a few thousand times in "make test", each a short-lived Go
# program: one thread and a lazier garbage collector cost less CPU.
export GOMAXPROCS="${GOMAXPROCS:-1}" GOGC="${GOGC:-400}"

DC_REPO="$(cd "${BATS_TEST_DIRNAME:-.}/../.." && pwd)"
DC_BUILD="${DC_BUILD:-build}"
DC_BIN="${DEVCLUSTER:-$DC_REPO/$DC_BUILD/san/bin/trainyard-devcluster}"

# dc_make TARGET...: brings build outputs of the repository up to date,
# unless the caller did it: "make e2e" builds every program the suites run
# before it starts them and sets TRAINYARD_E2E_BUILT=1, which saves a make
# run (a third of a CPU second) per suite and helper.
dc_make() {
	[ "${TRAINYARD_E2E_BUILT:-0}" = 1 ] && return 0
	make -C "$DC_REPO" --no-print-directory BUILD="$DC_BUILD" "$@" >&2
}

dc_build() {
	if [ -z "${DEVCLUSTER:-}" ]; then
		dc_make "$DC_BUILD/san/bin/trainyard-devcluster" || return 1
	fi
	[ -x "$DC_BIN" ]
}

# _dc_launch DIR ARGS...: starts a devcluster whose files live in DIR.
_dc_launch() {
	local dir="$1"
	shift
	mkdir -p "$dir/cache"
	"$DC_BIN" --listen 127.0.0.1:0 --kubeconfig "$dir/kubeconfig" \
	    --data-dir "$dir/data" "$@" >"$dir/log" 2>&1 3>&- &
	echo $! >"$dir/pid"
	local i
	for i in $(seq 200); do
		if [ -s "$dir/kubeconfig" ]; then
			break
		fi
		if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
			echo "devcluster exited early:" >&2
			cat "$dir/log" >&2
			return 1
		fi
		sleep 0.05
	done
	if [ ! -s "$dir/kubeconfig" ]; then
		echo "devcluster did not become ready:" >&2
		cat "$dir/log" >&2
		return 1
	fi
	# /readyz needs no credentials: curl, with the kubeconfig's server
	# and CA, costs a hundredth of a kubectl start.
	jq -r '.clusters[0].cluster["certificate-authority-data"]' "$dir/kubeconfig" |
	    base64 -d >"$dir/ca.crt" &&
	curl -sSf --max-time 10 --cacert "$dir/ca.crt" \
	    "$(jq -r '.clusters[0].cluster.server' "$dir/kubeconfig")/readyz" >/dev/null
}

# _dc_halt DIR: SIGTERM, wait, check the exit and the log, clean up.
_dc_halt() {
	local dir="$1" pid status=0 i
	[ -f "$dir/pid" ] || return 0
	pid="$(cat "$dir/pid")"
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		echo "devcluster $pid did not stop on SIGTERM" >&2
		status=1
	fi
	wait "$pid" 2>/dev/null
	local rc=$?
	if [ "$status" -eq 0 ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 127 ]; then
		echo "devcluster exited with status $rc" >&2
		status=1
	fi
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$dir/log"; then
		echo "sanitizer report in the devcluster log:" >&2
		cat "$dir/log" >&2
		status=1
	fi
	rm -f "$dir/pid"
	if [ "$status" -eq 0 ]; then
		rm -rf "$dir"
	else
		echo "devcluster files kept in $dir" >&2
	fi
	return "$status"
}

# _dc_kubectl_for MINOR: the kubectl.MINOR the Google Cloud SDK's kubectl
# dispatcher would run for a server of that minor, when it is not the
# dispatcher's own; nothing otherwise (or without the dispatcher).
_dc_kubectl_for() {
	local self own
	self="$(readlink -f "$(command -v kubectl)")" || return 0
	[ -n "$1" ] && [ -x "${self%/*}/kubectl.$1" ] || return 0
	own="$(command kubectl version --client -o json 2>/dev/null |
	    jq -r '.clientVersion | .major + "." + (.minor | rtrimstr("+"))')"
	[ "$own" = "$1" ] || echo "${self%/*}/kubectl.$1"
}

dc_start() {
	local minor
	dc_build || return 1
	DC_DIR="$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/devcluster.XXXXXX")"
	export DC_DIR
	export KUBECONFIG="$DC_DIR/kubeconfig"
	_dc_launch "$DC_DIR" "$@" || return 1
	# For a server of another minor than its own, the dispatcher starts,
	# asks the server's version and then runs kubectl.MINOR, on every call:
	# the suite's kubectl runs that one at once, at half the cost
	# (kubectl_at keeps the dispatcher, whose choice tests check).
	minor="$(sed -n 's/.*devcluster ready.* version=v\([0-9]*\.[0-9]*\)\..*/\1/p' \
	    "$DC_DIR/log" | head -1)"
	DC_KUBECTL="$(_dc_kubectl_for "$minor")"
	export DC_KUBECTL
}

dc_stop() {
	local status=0 dir
	# Extra devclusters a failed test could not stop itself.
	if [ -n "${DC_DIR:-}" ] && [ -f "$DC_DIR.extra" ]; then
		while read -r dir; do
			[ -d "$dir" ] || continue
			_dc_halt "$dir" || status=1
		done <"$DC_DIR.extra"
		rm -f "$DC_DIR.extra"
	fi
	if [ -n "${DC_DIR:-}" ]; then
		_dc_halt "$DC_DIR" || status=1
	fi
	return "$status"
}

dc_start_extra() {
	local _dc_var="$1" _dc_new
	shift
	dc_build || return 1
	_dc_new="$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/devcluster.XXXXXX")"
	printf -v "$_dc_var" '%s' "$_dc_new"
	# dc_stop (teardown_file) stops it if the test never gets to.
	echo "$_dc_new" >>"${DC_DIR:-/tmp/devcluster}.extra"
	_dc_launch "$_dc_new" "$@"
}

dc_stop_extra() {
	_dc_halt "$1"
}

# kubectl against the current devcluster (KUBECONFIG), with its cache dir.
kubectl() {
	if [ -n "${DC_KUBECTL:-}" ]; then
		"$DC_KUBECTL" --cache-dir "${DC_DIR:-/tmp}/cache" --request-timeout=20s "$@"
	else
		command kubectl --cache-dir "${DC_DIR:-/tmp}/cache" --request-timeout=20s "$@"
	fi
}

# kubectl against an extra devcluster: kubectl_at DIR ARGS...
kubectl_at() {
	local dir="$1"
	shift
	command kubectl --kubeconfig "$dir/kubeconfig" --cache-dir "$dir/cache" \
	    --request-timeout=20s "$@"
}

# wait_for_line FILE REGEX [SECONDS]: polls FILE until a line matches.
wait_for_line() {
	local file="$1" re="$2" secs="${3:-10}" i
	for i in $(seq $((secs * 20))); do
		if grep -qE "$re" "$file" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "no line matching '$re' in $file:" >&2
	cat "$file" >&2
	return 1
}

# webhook_tls DIR NAME: a CA (DIR/ca.crt) and a serving certificate and key
# for the DNS name NAME (DIR/tls.crt, DIR/tls.key), for a webhook on the host
# reached through a Service and verified against a caBundle.
webhook_tls() {
	local dir="$1" name="$2"

	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 1 -subj "/CN=$name-ca" 2>/dev/null &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$dir/tls.key" -out "$dir/tls.csr" -subj "/CN=$name" 2>/dev/null &&
	printf 'subjectAltName=DNS:%s\n' "$name" >"$dir/ext" &&
	openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
	    -CAcreateserial -out "$dir/tls.crt" -days 1 -extfile "$dir/ext" 2>/dev/null
}
