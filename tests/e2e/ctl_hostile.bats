#!/usr/bin/env bats
#
# ctl_hostile.bats: hostile clients against every listener of
# trainyard-controller (health probes, metrics, the HTTPS webhook), as a
# pod inside the cluster could be: 1,000 connections on each at once,
# sending half a request line and one header byte a second, nothing at
# all, a body one byte a second, garbage, or a keep-alive request and
# then nothing (tests/bench/hostile.c, ty-hostile). Throughout, a prober
# on each listener opens a new connection every 100 ms, as the kubelet
# does: every probe is answered within a second, every scrape and review
# is answered (within 5 s: a flood of TLS handshakes at once costs the
# webhook's thread a moment); a Run applied during
# the attack reaches Running about as fast as one without it; the
# listeners count what they dropped and why on /metrics.
#
# The controller is the release build here (TRAINYARD_CONTROLLER may say
# otherwise): under AddressSanitizer each TLS handshake costs the webhook
# several milliseconds in the allocator's bookkeeping, so a thousand of
# them measure the sanitizer, not the server. The guard itself runs under
# the sanitizers in its unit tests and in every other suite.

load devcluster
: "${TRAINYARD_CONTROLLER:=$DC_REPO/${DC_BUILD:-build}/bin/trainyard-controller}"
load controller

HOSTILE="${TY_HOSTILE:-$DC_REPO/$DC_BUILD/bin/ty-hostile}"

setup_file() {
	dc_make "$DC_BUILD/bin/ty-hostile" "$DC_BUILD/bin/trainyard-controller" || return 1
	ctl_setup_file
}

teardown_file() {
	ctl_teardown_file
}

setup() {
	ctl_ns
}

teardown() {
	ctl_check
}

# port metrics|health|webhook: the port the controller logged.
port() {
	local log="$DC_DIR/controller.log"
	case "$1" in
	metrics) sed -n 's/.*metrics on port \([0-9]*\),.*/\1/p' "$log" | tail -1 ;;
	health) sed -n 's/.*health probes on port \([0-9]*\).*/\1/p' "$log" | tail -1 ;;
	webhook) sed -n 's/.*conversion webhook on port \([0-9]*\).*/\1/p' "$log" | tail -1 ;;
	esac
}

# a_run NAME: a 2-node Run that runs for a minute.
a_run() {
	ctl_apply <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: $1}
spec:
  nodes: 2
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "60"}
EOF
}

# time_to_running NAME: milliseconds from apply to phase Running.
time_to_running() {
	local t0 t1
	t0="$(date +%s%N)"
	a_run "$1"
	wait_phase "$1" Running 60s
	t1="$(date +%s%N)"
	echo $(((t1 - t0) / 1000000))
}

# dropped LISTENER REASON: trainyard_http_connections_dropped_total.
dropped() {
	curl -sS --max-time 5 "http://127.0.0.1:$(port metrics)/metrics" |
	    sed -n "s/^trainyard_http_connections_dropped_total{listener=\"$1\",reason=\"$2\"} //p"
}

@test "the probes have a listener of their own" {
	local h m
	h="$(port health)"
	m="$(port metrics)"
	[ "$h" != "$m" ]
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$h/healthz")" = 200 ]
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$h/readyz")" = 200 ]
	[ "$(curl -sS "http://127.0.0.1:$h/readyz/webhook")" = ok ]
	# Scrapers go to the metrics listener, probes to the health one.
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$h/metrics")" = 404 ]
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$m/healthz")" = 404 ]
	curl -sS "http://127.0.0.1:$m/metrics" >"$BATS_TEST_TMPDIR/m"
	grep -qx 'trainyard_http_connections_dropped_total{listener="health",reason="timeout_headers"} 0' \
	    "$BATS_TEST_TMPDIR/m"
	grep -qE '^trainyard_http_connections\{listener="webhook"\} [0-9]+$' "$BATS_TEST_TMPDIR/m"
	grep -qE '^trainyard_http_connections_accepted_total\{listener="metrics"\} [1-9]' \
	    "$BATS_TEST_TMPDIR/m"
}

@test "1,000 hostile connections on each listener: probes answer within a second, Runs start" {
	local base hot h m w pids=() i rc=0
	h="$(port health)"
	m="$(port metrics)"
	w="$(port webhook)"
	base="$(time_to_running calm)"

	"$HOSTILE" --target "127.0.0.1:$h" --conns 1000 --seconds 9 \
	    --probe "http://127.0.0.1:$h/healthz" >"$BATS_TEST_TMPDIR/health" 2>&1 &
	pids+=($!)
	# Scrapes and reviews: every one answered, within 5 s (a flood of
	# 1,000 TLS handshakes at once takes the webhook a moment).
	"$HOSTILE" --target "127.0.0.1:$m" --conns 1000 --seconds 9 --probe-max-ms 5000 \
	    --probe "http://127.0.0.1:$m/metrics" >"$BATS_TEST_TMPDIR/metrics" 2>&1 &
	pids+=($!)
	"$HOSTILE" --target "127.0.0.1:$w" --tls --conns 1000 --seconds 9 --probe-max-ms 5000 \
	    --probe "https://127.0.0.1:$w/readyz" >"$BATS_TEST_TMPDIR/webhook" 2>&1 &
	pids+=($!)
	sleep 3			# the connections are held
	hot="$(time_to_running attacked)"
	for i in "${pids[@]}"; do
		wait "$i" || rc=1
	done
	cat "$BATS_TEST_TMPDIR"/{health,metrics,webhook} >&3
	echo "# Run to Running: ${base} ms calm, ${hot} ms under attack" >&3
	[ "$rc" -eq 0 ]
	# Each held most of its connections open at once (the listener
	# closes garbage at once and slow ones at their deadlines; they come
	# back about a second later).
	for i in health metrics webhook; do
		held="$(sed -n 's/.* held=\([0-9]*\) .*/\1/p' "$BATS_TEST_TMPDIR/$i")"
		[ "$held" -ge 600 ]
	done
	# As fast as without the attack, give or take the machine's noise.
	[ "$hot" -le $((base * 3 + 2000)) ]
	curl -sS --max-time 5 "http://127.0.0.1:$(port metrics)/metrics" |
	    grep '^trainyard_http_connections' >&3
	# The guard dropped slow headers, idle keep-alives and garbage, and says
	# so (the body deadline, 10 s on the webhook, is the unit tests').
	[ "$(dropped health timeout_headers)" -gt 0 ]
	[ "$(dropped health timeout_idle)" -gt 0 ]
	[ "$(dropped health malformed)" -gt 0 ]
	[ "$(dropped webhook timeout_headers)" -gt 0 ]
	ctl_check
}
