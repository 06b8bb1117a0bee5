#!/usr/bin/env bash
# conv-bench.sh BUILD: the conversion section of `make bench`.
#
# Starts the release devcluster ($BUILD/bin/trainyard-devcluster) in memory
# on a free port with the CRDs of crds/ (Runs served at v1alpha1 and
# v1beta1, converted by the webhook), makes a CA and a serving
# certificate for 127.0.0.1 with the openssl CLI, starts the release
# trainyard-controller with its conversion webhook on 127.0.0.1 (a free
# port) and that certificate (--webhook-cert-dir), waits until it logs
# "started", then runs one conv-bench scenario per entry of
# BENCH_CONV_SCENARIOS (PER_REVIEW:DIRECTION, named conv-PER_REVIEW): each
# converts BENCH_CONV_OBJECTS Runs in reviews of PER_REVIEW objects from
# BENCH_CONV_CLIENTS keep-alive HTTPS clients and prints one
# "bench: scenario=conv-..." line (tests/bench/README.md), then the
# controller's totals ("bench: scenario=conv-server"). Everything it
# starts is stopped with SIGTERM (SIGKILL if it hangs) and the temporary
# directory removed on every exit path.
#
# Environment: BENCH_CONV_SCENARIOS ("1:up 100:mixed"), BENCH_CONV_OBJECTS
# (20000), BENCH_CONV_CLIENTS (4), BENCH_CONV_LOGS (a directory: keep the
# logs there).
set -euo pipefail

build="${1:?usage: conv-bench.sh BUILD}"
dc="$build/bin/trainyard-devcluster"
ctl="$build/bin/trainyard-controller"
bench="$build/bin/conv-bench"
scenarios="${BENCH_CONV_SCENARIOS:-1:up 100:mixed}"
objects="${BENCH_CONV_OBJECTS:-20000}"
clients="${BENCH_CONV_CLIENTS:-4}"

for f in "$dc" "$ctl" "$bench"; do
	[ -x "$f" ] || { echo "conv-bench.sh: $f is missing (make bench builds it)" >&2; exit 1; }
done
for c in kubectl openssl; do
	command -v "$c" >/dev/null ||
	    { echo "conv-bench.sh: $c is not installed" >&2; exit 1; }
done
cd "$(dirname "$0")/../.."
# shellcheck source=tests/bench/bench.bash
. tests/bench/bench.bash

tmp="$(mktemp -d "${TMPDIR:-/tmp}/conv-bench.XXXXXX")"
dcpid=""	# the devcluster
ctlpid=""	# the controller
child=""	# the conv-bench running

cleanup() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	bench_stop "$ctlpid" controller
	bench_stop "$dcpid" devcluster
	if [ -n "${BENCH_CONV_LOGS:-}" ]; then
		mkdir -p "$BENCH_CONV_LOGS" &&
		    cp "$tmp"/*.log "$BENCH_CONV_LOGS"/ || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A CA and a serving certificate for 127.0.0.1 signed by it (EC P-256,
# as the controller's self-managed ones), in $tmp/certs as
# --webhook-cert-dir wants them.
mkdir -p "$tmp/certs"
{
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$tmp/ca.key" -out "$tmp/ca.crt" -days 1 -subj "/CN=conv-bench CA" \
	    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	    -keyout "$tmp/certs/tls.key" -out "$tmp/tls.csr" -subj "/CN=127.0.0.1"
	printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n%s\n%s\n' \
	    'keyUsage=critical,digitalSignature' 'extendedKeyUsage=serverAuth' >"$tmp/ext.cnf"
	openssl x509 -req -in "$tmp/tls.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" \
	    -CAcreateserial -days 1 -extfile "$tmp/ext.cnf" -out "$tmp/certs/tls.crt"
} >"$tmp/openssl.log" 2>&1 || { cat "$tmp/openssl.log" >&2; exit 1; }

export KUBECONFIG="$tmp/kubeconfig"
bench_dc_start "$dc" "$tmp/devcluster.log" --log-level warn
kubectl apply -f crds/ >"$tmp/apply.log" 2>&1 || { cat "$tmp/apply.log" >&2; exit 1; }
bench_crds_established 2

"$ctl" --kubeconfig "$KUBECONFIG" --metrics-bind-address 127.0.0.1:0 \
    --health-probe-bind-address 127.0.0.1:0 --webhook-bind-address 127.0.0.1:0 \
    --webhook-cert-dir "$tmp/certs" --log-level info >"$tmp/controller.log" 2>&1 &
ctlpid=$!
bench_wait_started "$ctlpid" "$tmp/controller.log"
port="$(sed -n 's/.*conversion webhook on port \([0-9]*\).*/\1/p' "$tmp/controller.log" |
    tail -n 1)"
[ -n "$port" ] || { echo "conv-bench.sh: no webhook port in the controller's log" >&2; exit 1; }

read -r load1 _ </proc/loadavg
printf 'bench: scenario=conv-host cpus=%s load1=%s mem_mb=%s\n' "$(nproc)" "$load1" \
    "$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo)"

for sc in $scenarios; do
	per="${sc%%:*}"
	dir="${sc#*:}"
	rc=0
	"$bench" "$per" --url "https://127.0.0.1:$port" --ca "$tmp/ca.crt" \
	    --per-review "$per" --direction "$dir" --objects "$objects" \
	    --clients "$clients" --pid "$ctlpid" &
	child=$!
	wait "$child" || rc=$?
	child=""
	if [ "$rc" -ne 0 ]; then
		echo "conv-bench.sh: scenario $sc failed; the controller's log:" >&2
		tail -n 20 "$tmp/controller.log" >&2
		exit 1
	fi
done

awk -v tck="$(getconf CLK_TCK)" '
FNR == 1 && FILENAME ~ /stat$/ {
	sub(/^.*\) /, ""); split($0, f, " ")
	cpu = (f[12] + f[13]) / tck
}
/^VmHWM:/ { hwm = $2 }
/^VmRSS:/ { rss = $2 }
END { printf "bench: scenario=conv-server process=controller cpu_s=%.2f peak_rss_kb=%d " \
    "rss_kb=%d\n", cpu, hwm, rss }' "/proc/$ctlpid/stat" "/proc/$ctlpid/status"
if grep -qiE 'level=(warn|error)|"level":"(warn|error)"' "$tmp/controller.log"; then
	echo "conv-bench.sh: the controller's warnings and errors (last 10):" >&2
	grep -iE 'level=(warn|error)|"level":"(warn|error)"' "$tmp/controller.log" |
	    tail -n 10 >&2
fi
