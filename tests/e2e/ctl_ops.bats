#!/usr/bin/env bats
#
# ctl_ops.bats: trainyard-controller as a platform team runs it,
# with the real kubectl against the devcluster and the sanitizer build:
#
# - least privilege: manifests/namespace.yaml and rbac.yaml applied, the
#   controller runs under its service account (a "kubectl create token"
#   kubeconfig, RBAC enforced) with leader election through a full session,
#   and no request of it meets a 403;
# - leader election with two, then three controllers: one leader, a
#   standby that takes over after a SIGKILL once the lease expired (not
#   before), and at once after a SIGTERM, which releases the Lease;
# - /healthz, /readyz (not ready while the caches sync, ready after, on
#   leader and standby alike), /readyz/webhook, each path on its own
#   listener only, and /metrics read with a parser of the
#   Prometheus text format, then checked against a session;
# - graceful shutdown while a session's pods are being created, and a
#   restarted controller that finishes the session without duplicates;
#   SIGTERM while the caches sync stops the start at once, exit 0;
# - JSON logs: one object per line, reconcile lines naming the Run and its
#   namespace, and no bearer token in any log line, also at debug level;
# - a bad --config file stops the start with "FILE: KEY: reason".
#
# The suite starts no controller of its own (ctl_start's): each test runs
# the named controllers it needs (controller.bash, ctl_proc_*) and stops
# them, so a leader of one test never reconciles another's Runs.

load devcluster
load controller

SA_KC=
LEASE_NS=trainyard-system

setup_file() {
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms --node-monitor-grace-period 2s \
	    --node-monitor-period 500ms || return 1
	ctl_build || return 1
	ctl_install || return 1
	kubectl apply -f "$DC_REPO/manifests/namespace.yaml" \
	    -f "$DC_REPO/manifests/rbac.yaml" >/dev/null || return 1
	ctl_config
	# Leader election quick enough for a test: client-go's rule holds
	# (1.2 * retryPeriod < renewDeadline < leaseDuration).
	cat "$DC_DIR/controller.yaml" - >"$DC_DIR/ops.yaml" <<'EOF'
leaderElection: {leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 500ms}
EOF
	ctl_sa_kubeconfig "$DC_DIR/sa.kubeconfig"
}

teardown_file() {
	local status=0
	ctl_proc_stop_all || status=1
	if [ "$status" -ne 0 ]; then
		for f in "$DC_DIR"/ctl-*.log; do
			cp "$f" "${DC_DIR}.${f##*/}" 2>/dev/null
		done
		echo "controller logs kept in ${DC_DIR}.ctl-*.log" >&2
	fi
	dc_stop || status=1
	return "$status"
}

setup() {
	touch "$BATS_TEST_TMPDIR/.start"
	SA_KC="$DC_DIR/sa.kubeconfig"
	CFG="$DC_DIR/ops.yaml"
}

# Every test stops its controllers; one a failed test left running is
# stopped here, so it cannot lead in the next test.
teardown() {
	local f
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		for f in "$DC_DIR"/ctl-*.log; do
			[ "$f" -nt "$BATS_TEST_TMPDIR/.start" ] || continue
			echo "# $f (last 30 lines):" >&2
			tail -30 "$f" >&2
		done
	fi
	kubectl delete --raw /devcluster/faults >/dev/null || true
	ctl_proc_stop_all
}

# run_of NAME NODES [RUN_SECONDS]: a Run in $NS whose pods exit 0 after
# RUN_SECONDS (default 0.5).
run_of() {
	ctl_apply <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: $1}
spec:
  nodes: $2
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "${3:-0.5}"}
EOF
}

# fault JSON: adds a devcluster fault rule.
fault() {
	kubectl create --raw /devcluster/faults -f - <<<"$1" >/dev/null
}

# http NAME metrics|health PATH [CURL ARGS...]: "CODE BODY" of a GET.
http() {
	local port
	port="$(ctl_proc_port "$1" "$2")"
	curl -sS --max-time 5 -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' \
	    "${@:4}" "http://127.0.0.1:$port$3"
	echo " $(cat "$BATS_TEST_TMPDIR/body")"
}

# now: seconds since the epoch, microseconds.
now() {
	echo "$EPOCHREALTIME"
}

# le A B: A <= B, as decimals.
le() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'
}

# absent GREP-ARGS... FILE: no line of FILE matches (shows those that do).
absent() {
	if grep -n "$@"; then
		echo "^ lines that should not be there (grep $*)"
		return 1
	fi
}

# The devcluster's request counters, read as the admin.
stats() {
	kubectl get --raw /devcluster/stats
}

# token_of KUBECONFIG: the bearer token of its current user.
token_of() {
	command kubectl --kubeconfig "$1" config view --raw --minify \
	    -o jsonpath='{.users[0].user.token}'
}

# prom_parse FILE: parses FILE as the Prometheus text exposition format
# 0.0.4 and prints it as JSON {"FAMILY": {"type", "help", "samples":
# [{"name", "labels", "value"}]}}, or fails with the line and the reason.
# It checks what a Prometheus server's parser does: HELP and TYPE at most
# once per family and before its samples, a family's samples together,
# metric and label names, label value escapes, values and timestamps, no
# duplicate series; for histograms: every series has buckets with a
# numeric "le" in increasing order and non-decreasing counts, a "+Inf"
# bucket equal to _count, and a _sum; counters are never negative. And
# the naming conventions: every family typed and documented, counters
# end in _total and nothing else does, no time unit but seconds.
prom_parse() {
	python3 - "$1" <<'PY'
import json, math, re, sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LNAME = r'[a-zA-Z_][a-zA-Z0-9_]*'
FLOAT = r'[+-]?(?:Inf|inf|NaN|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)'
TYPES = ('counter', 'gauge', 'histogram', 'summary', 'untyped')

text = open(sys.argv[1], encoding='utf-8').read()
fams = {}           # name -> {"type", "help", "samples"}
order = []          # families in the order their samples appeared
series = set()
lineno = 0

def fail(why):
    sys.exit('line %d: %s' % (lineno, why))

def family_of(name):
    for suffix, kinds in (('_bucket', ('histogram',)),
            ('_sum', ('histogram', 'summary')), ('_count', ('histogram', 'summary'))):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and base in fams and fams[base]['type'] in kinds:
            return base
    return name

def fam(name):
    return fams.setdefault(name, {'type': None, 'help': None, 'samples': []})

def unescape(s, quotes):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == '\\':
            if i + 1 == len(s):
                fail('a lone backslash')
            n = s[i + 1]
            if n == '\\':
                out.append('\\')
            elif n == 'n':
                out.append('\n')
            elif n == '"' and quotes:
                out.append('"')
            else:
                fail('bad escape \\%s' % n)
            i += 2
            continue
        if c == '\n':
            fail('a raw newline')
        out.append(c)
        i += 1
    return ''.join(out)

def number(s):
    if not re.fullmatch(FLOAT, s):
        fail('not a number: %r' % s)
    return float(s)

if not text.endswith('\n'):
    sys.exit('the last line has no newline')
for line in text.split('\n')[:-1]:
    lineno += 1
    if line.strip() == '':
        continue
    if line.startswith('#'):
        m = re.fullmatch(r'#\s+(HELP|TYPE)\s+(' + NAME + r')(?:\s(.*))?', line)
        if not m:
            continue                    # a comment
        kind, name, rest = m.group(1), m.group(2), m.group(3) or ''
        f = fam(name)
        if f['samples']:
            fail('%s of %s after its samples' % (kind, name))
        if kind == 'HELP':
            if f['help'] is not None:
                fail('a second HELP for ' + name)
            f['help'] = unescape(rest, False)
        else:
            if f['type'] is not None:
                fail('a second TYPE for ' + name)
            if rest.strip() not in TYPES:
                fail('unknown type %r' % rest)
            f['type'] = rest.strip()
        continue
    m = re.match(r'(' + NAME + r')', line)
    if not m:
        fail('not a sample: %r' % line)
    name, pos, labels = m.group(1), m.end(), {}
    if pos < len(line) and line[pos] == '{':
        pos += 1
        label = re.compile(r'\s*(' + LNAME + r')\s*=\s*"((?:[^"\\]|\\.)*)"\s*')
        while True:
            close = re.compile(r'\s*\}').match(line, pos)
            if close:
                pos = close.end()
                break
            lm = label.match(line, pos)
            if not lm:
                fail('bad labels: %r' % line[pos:])
            ln = lm.group(1)
            if ln.startswith('__'):
                fail('reserved label name ' + ln)
            if ln in labels:
                fail('label %s twice' % ln)
            labels[ln] = unescape(lm.group(2), True)
            pos = lm.end()
            if line[pos:pos + 1] == ',':
                pos += 1
            elif line[pos:pos + 1] != '}':
                fail('bad labels: %r' % line[pos:])
    parts = line[pos:].split()
    if not line[pos:pos + 1].isspace() or len(parts) not in (1, 2):
        fail('want "NAME{LABELS} VALUE [TIMESTAMP]": %r' % line)
    value = number(parts[0])
    if len(parts) == 2 and not re.fullmatch(r'-?[0-9]+', parts[1]):
        fail('bad timestamp %r' % parts[1])
    base = family_of(name)
    f = fam(base)
    if order and order[-1] != base:
        if base in order:
            fail('samples of %s are not together' % base)
    if not order or order[-1] != base:
        order.append(base)
    key = (name, tuple(sorted(labels.items())))
    if key in series:
        fail('duplicate series %s%s' % key)
    series.add(key)
    if f['type'] == 'histogram' and name == base:
        fail('a histogram sample without _bucket/_sum/_count: ' + name)
    if f['type'] == 'counter' and (math.isnan(value) or value < 0):
        fail('counter %s is %r' % (name, value))
    if math.isfinite(value) and value == int(value) and abs(value) < 2 ** 53:
        value = int(value)
    f['samples'].append({'name': name, 'labels': labels,
        'value': value if math.isfinite(value) else parts[0]})

lineno = 0
for name, f in fams.items():
    where = 'family ' + name + ': '
    if f['type'] is None or f['help'] is None or f['help'] == '':
        sys.exit(where + 'no TYPE or no HELP')
    if not f['samples']:
        sys.exit(where + 'no samples')
    if (f['type'] == 'counter') != name.endswith('_total'):
        sys.exit(where + 'counters, and only they, end in _total')
    if re.search(r'_(milli|micro|nano)?seconds?_|_(ms|us|ns|minutes|hours)(_|$)',
            name + '_') and not re.search(r'_seconds(_total)?$', name):
        sys.exit(where + 'a time in a unit other than seconds')
    if f['type'] != 'histogram':
        continue
    groups = {}
    for s in f['samples']:
        rest = tuple(sorted((k, v) for k, v in s['labels'].items() if k != 'le'))
        g = groups.setdefault(rest, {'buckets': [], 'sum': None, 'count': None})
        if s['name'] == name + '_bucket':
            if 'le' not in s['labels']:
                sys.exit(where + 'a bucket without le')
            g['buckets'].append((float(s['labels']['le']), s['value']))
        elif s['name'] == name + '_sum':
            g['sum'] = s['value']
        elif s['name'] == name + '_count':
            g['count'] = s['value']
    for rest, g in groups.items():
        w = where + str(dict(rest)) + ': '
        b = g['buckets']
        if not b or b[-1][0] != math.inf:
            sys.exit(w + 'no +Inf bucket last')
        for (l1, c1), (l2, c2) in zip(b, b[1:]):
            if not l1 < l2:
                sys.exit(w + 'le %g then %g' % (l1, l2))
            if not c1 <= c2:
                sys.exit(w + 'bucket counts go down (%g, %g)' % (c1, c2))
        if any(c != int(c) or c < 0 for _, c in b):
            sys.exit(w + 'a bucket count that is not a count')
        if g['count'] is None or g['sum'] is None:
            sys.exit(w + 'no _count or no _sum')
        if g['count'] != b[-1][1]:
            sys.exit(w + '_count %g, +Inf bucket %g' % (g['count'], b[-1][1]))
json.dump(fams, sys.stdout)
PY
}

# mval JSON FAMILY [JQ-FILTER-ON-A-SAMPLE]: the sum of the matching samples.
mval() {
	jq -r --arg f "$2" "[.[\$f].samples[] | select(${3:-true}) | .value] | add // \"none\"" <<<"$1"
}

@test "least privilege: a full session under the service account and its role, no 403" {
	run kubectl --kubeconfig "$SA_KC" auth whoami -o jsonpath='{.status.userInfo.username}'
	[ "$output" = system:serviceaccount:trainyard-system:trainyard-controller ]
	# RBAC applies to it (checked with reviews, which are never 403).
	run kubectl --kubeconfig "$SA_KC" auth can-i list secrets --all-namespaces
	[ "$output" = no ]
	run kubectl --kubeconfig "$SA_KC" auth can-i create pods --all-namespaces
	[ "$output" = yes ]
	ctl_ns

	kubectl delete --raw /devcluster/stats >/dev/null
	ctl_proc_start sa --kubeconfig "$SA_KC" --config "$CFG" --leader-elect \
	    --leader-election-namespace "$LEASE_NS"
	ctl_proc_wait sa 'workers started'
	[ "$(lease_holder "$LEASE_NS" trainyard-controller)" = "$(ctl_proc_identity sa)" ]
	run_of ok 3
	wait_phase ok Succeeded
	wait_cleaned ok
	[ "$(rn ok '{.status.reason}')" = Succeeded ]
	[ "$(owned ok)" = 0 ]
	[ "$(events ok SessionStarted)" = "session 1 started with 3 nodes" ]
	ctl_proc_term sa
	[ "$(lease_holder "$LEASE_NS" trainyard-controller)" = "" ]

	stats="$(stats)"
	echo "$stats" | jq -c '.byCode, (.requests[] | select(.code >= 400))'
	# Every kind of call the controller makes happened in this window:
	# informers, status, the session's objects, Events, the Lease.
	for want in 'list runs.trainyard.dev 200' 'watch runs.trainyard.dev 200' \
	    'list resourceprofiles.trainyard.dev 200' 'list pods 200' \
	    'list podgroups.scheduling.x-k8s.io 200' \
	    'update runs.trainyard.dev/status 200' 'create pods 201' \
	    'create services 201' 'create networkpolicies.networking.k8s.io 201' \
	    'create podgroups.scheduling.x-k8s.io 201' 'delete pods 200' \
	    'delete services 200' 'create events 201' \
	    'create leases.coordination.k8s.io 201' 'update leases.coordination.k8s.io 200'; do
		set -- $want
		n="$(jq --arg v "$1" --arg r "$2" --argjson c "$3" '[.requests[] |
		    select(.verb == $v and .resource == $r and .code == $c) | .count] |
		    add // 0' <<<"$stats")"
		[ "$n" -ge 1 ] || { echo "no $want"; false; }
	done
	# Not one 403, for any request (the admin's kubectl never gets one).
	[ "$(jq '.byCode["403"] // 0' <<<"$stats")" = 0 ]
	run grep -ci forbidden "$DC_DIR/ctl-sa.log"
	[ "$output" = 0 ]
}

@test "leader election: one leader; SIGKILL: takeover once the lease expired; SIGTERM: at once" {
	local args=(--kubeconfig "$SA_KC" --config "$CFG" --leader-elect
	    --leader-election-namespace "$LEASE_NS" --leader-election-id ops-ha)
	ctl_proc_launch a "${args[@]}"
	ctl_proc_launch b "${args[@]}"
	ctl_proc_wait a '(msg=started|"msg":"started")'
	ctl_proc_wait b '(msg=started|"msg":"started")'
	ida="$(ctl_proc_identity a)"
	idb="$(ctl_proc_identity b)"
	[ -n "$ida" ] && [ -n "$idb" ] && [ "$ida" != "$idb" ]
	for i in $(seq 100); do
		holder="$(lease_holder "$LEASE_NS" ops-ha)" || true
		[ -n "$holder" ] && break
		sleep 0.1
	done
	if [ "$holder" = "$ida" ]; then
		leader=a standby=b
	else
		[ "$holder" = "$idb" ]
		leader=b standby=a
	fi
	ctl_proc_wait "$leader" 'workers started'
	ctl_ns
	run_of one 2
	wait_phase one Succeeded
	# The standby never started its workers; both are live and ready.
	run grep -c 'workers started' "$DC_DIR/ctl-$standby.log"
	[ "$output" = 0 ]
	for p in a b; do
		[ "$(http "$p" health /healthz)" = "200 ok" ]
		[ "$(http "$p" health /readyz)" = "200 ok" ]
	done
	[ "$(http "$leader" metrics /metrics | grep -E '^trainyard_leader ')" = "trainyard_leader 1" ]
	[ "$(http "$standby" metrics /metrics | grep -E '^trainyard_leader ')" = "trainyard_leader 0" ]
	[ "$(lease_holder "$LEASE_NS" ops-ha)" = "$holder" ]

	# SIGKILL: nothing released. The standby waits until the record went
	# unchanged for a whole lease duration (4 s; the last renewal was at
	# most a retry period, 0.5 s, before the kill), then takes over at its
	# next attempt (retry period with jitter: up to 1.1 s). Not at once:
	# that would be two leaders.
	t0="$(now)"
	ctl_proc_kill9 "$leader"
	ctl_proc_wait "$standby" 'workers started' 15
	dt="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')"
	echo "takeover after SIGKILL: $dt s"
	le 2.5 "$dt"
	le "$dt" 7
	leader="$standby"
	[ "$(lease_holder "$LEASE_NS" ops-ha)" = "$(ctl_proc_identity "$leader")" ]
	run_of two 2
	wait_phase two Succeeded
	wait_cleaned two

	# A new standby; then SIGTERM the leader: it drains, releases the
	# Lease and exits 0, and the standby takes over at its next attempt,
	# well before the lease could have expired (3.5 s at the earliest).
	ctl_proc_start c "${args[@]}"
	ctl_proc_wait c 'the leader is'
	t0="$(now)"
	ctl_proc_term "$leader" 10
	ctl_proc_wait c 'workers started' 10
	dt="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')"
	echo "takeover after SIGTERM: $dt s"
	le "$dt" 2.5
	grep -E 'shutting down' "$DC_DIR/ctl-$leader.log"
	[ "$(lease_holder "$LEASE_NS" ops-ha)" = "$(ctl_proc_identity c)" ]
	run_of three 1
	wait_phase three Succeeded
	# Two takeovers since the Lease was created.
	[ "$(kubectl get lease ops-ha -n "$LEASE_NS" -o jsonpath='{.spec.leaseTransitions}')" = 2 ]

	# The last one leaves an empty holder behind.
	ctl_proc_term c
	[ "$(lease_holder "$LEASE_NS" ops-ha)" = "" ]
	[ "$(kubectl get lease ops-ha -n "$LEASE_NS" -o jsonpath='{.spec.leaseDurationSeconds}')" = 1 ]
}

@test "health and metrics: /healthz, /readyz once synced, /metrics parsed after a session" {
	ctl_ns
	# Hold every API request for 3 s: the controller's caches cannot sync.
	kubectl create --raw '/devcluster/faults/pause?seconds=3' -f - <<<'{}' >/dev/null
	ctl_proc_launch m --config "$CFG" --namespace "$NS" --leader-elect \
	    --leader-election-namespace "$LEASE_NS" --leader-election-id ops-metrics
	ctl_proc_wait m 'metrics on port'
	# Live at once, not ready until the caches synced.
	[ "$(http m health /healthz)" = "200 ok" ]
	run http m health /readyz
	[ "$output" = "500 not ready: caches syncing" ]
	run grep -cE 'caches synced' "$DC_DIR/ctl-m.log"
	[ "$output" = 0 ]
	ctl_proc_wait m '(msg=started|"msg":"started")'
	[ "$(http m health /readyz)" = "200 ok" ]
	# The probes' paths on the health listener, /metrics on the metrics
	# one, nothing else on either; GET and HEAD only.
	[ "$(http m metrics /healthz | cut -c1-3)" = 404 ]
	[ "$(http m health /metrics | cut -c1-3)" = 404 ]
	[ "$(http m metrics /metrics | head -c 6)" = "200 # " ]
	# The webhook serves without a certificate here: not ready, and why.
	[ "$(http m health /readyz/webhook)" = "500 not ready: no serving certificate loaded yet" ]
	[ "$(http m health /nothing-here | cut -c1-3)" = 404 ]
	[ "$(http m health /healthz -X POST | cut -c1-3)" = 405 ]
	ctl_proc_wait m 'workers started'

	run_of sess 3
	wait_phase sess Succeeded
	wait_cleaned sess
	port="$(ctl_proc_port m metrics)"
	curl -sS --max-time 5 -D "$BATS_TEST_TMPDIR/headers" -o "$BATS_TEST_TMPDIR/metrics" \
	    "http://127.0.0.1:$port/metrics"
	grep -i '^content-type: text/plain; version=0.0.4' "$BATS_TEST_TMPDIR/headers"
	run prom_parse "$BATS_TEST_TMPDIR/metrics"
	[ "$status" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/metrics"; false; }
	m="$output"

	# Types, and the families the issue names.
	types="$(jq -c 'with_entries(.value |= .type)' <<<"$m")"
	for want in trainyard_reconcile_total:counter \
	    trainyard_reconcile_duration_seconds:histogram \
	    trainyard_workqueue_depth:gauge trainyard_workqueue_adds_total:counter \
	    trainyard_workqueue_retries_total:counter \
	    trainyard_workqueue_queue_duration_seconds:histogram \
	    trainyard_workqueue_work_duration_seconds:histogram \
	    trainyard_api_requests_total:counter \
	    trainyard_api_request_duration_seconds:histogram \
	    trainyard_watch_restarts_total:counter trainyard_relists_total:counter \
	    trainyard_runs:gauge trainyard_sessions_ended_total:counter \
	    trainyard_session_duration_seconds:histogram \
	    trainyard_time_to_all_running_seconds:histogram \
	    trainyard_pods_created_total:counter trainyard_pods_deleted_total:counter \
	    trainyard_leader:gauge trainyard_build_info:gauge; do
		[ "$(jq -r --arg f "${want%%:*}" '.[$f]' <<<"$types")" = "${want##*:}" ] ||
		    { echo "family $want: $(jq -r --arg f "${want%%:*}" '.[$f]' <<<"$types")"; false; }
	done
	# Every family is the controller's or the process's.
	[ "$(jq -r 'keys[] | select(test("^(trainyard|process)_") | not)' <<<"$m")" = "" ]

	# Reconciles: counted by result, and the histogram saw each one.
	[ "$(mval "$m" trainyard_reconcile_total '.labels.result == "success"')" -ge 1 ]
	for res in $(jq -r '.trainyard_reconcile_total.samples[].labels.result' <<<"$m"); do
		[ "$(mval "$m" trainyard_reconcile_duration_seconds \
		    "(.name | endswith(\"_count\")) and .labels.result == \"$res\"")" = \
		    "$(mval "$m" trainyard_reconcile_total ".labels.result == \"$res\"")" ]
	done
	[ "$(jq -c '[.trainyard_reconcile_total.samples[].labels | keys] | unique' <<<"$m")" = '[["result"]]' ]
	# The queue is empty again; it saw adds.
	[ "$(mval "$m" trainyard_workqueue_depth)" = 0 ]
	[ "$(mval "$m" trainyard_workqueue_adds_total)" -ge 1 ]
	# API requests by verb, resource and code, with their latency.
	[ "$(jq -c '[.trainyard_api_requests_total.samples[].labels | keys] | unique' <<<"$m")" = '[["code","resource","verb"]]' ]
	[ "$(mval "$m" trainyard_api_requests_total '.labels == {"verb":"create","resource":"pods","code":"201"}')" = 3 ]
	[ "$(mval "$m" trainyard_api_requests_total '.labels == {"verb":"list","resource":"runs","code":"200"}')" -ge 1 ]
	[ "$(mval "$m" trainyard_api_requests_total '.labels.verb == "update" and .labels.resource == "runs" and .labels.code == "200"')" -ge 1 ]
	[ "$(mval "$m" trainyard_api_request_duration_seconds '.name == "trainyard_api_request_duration_seconds_count" and .labels == {"verb":"create","resource":"pods"}')" = 3 ]
	# The session: one Run, Succeeded; one session ended; three pods each way.
	[ "$(mval "$m" trainyard_runs '.labels.phase == "Succeeded"')" = 1 ]
	[ "$(mval "$m" trainyard_runs '.labels.phase != "Succeeded"')" = 0 ]
	[ "$(mval "$m" trainyard_sessions_ended_total '.labels.reason == "Succeeded"')" = 1 ]
	[ "$(mval "$m" trainyard_sessions_ended_total)" = 1 ]
	[ "$(mval "$m" trainyard_session_duration_seconds '.name | endswith("_count")')" = 1 ]
	[ "$(mval "$m" trainyard_time_to_all_running_seconds '.name | endswith("_count")')" = 1 ]
	[ "$(mval "$m" trainyard_pods_created_total)" = 3 ]
	[ "$(mval "$m" trainyard_pods_deleted_total)" = 3 ]
	# Watches were not restarted; the leader says so; the build.
	[ "$(mval "$m" trainyard_relists_total)" = 0 ]
	[ "$(mval "$m" trainyard_leader)" = 1 ]
	version="$("$CTL_BIN" --version)"
	[ "$(jq -c '.trainyard_build_info.samples' <<<"$m")" = "[{\"name\":\"trainyard_build_info\",\"labels\":{\"version\":\"${version##* }\"},\"value\":1}]" ]
	ctl_proc_term m
}

@test "SIGTERM while a session's pods are created: exit 0, then a restart finishes it once" {
	ctl_ns
	ctl_proc_start g --config "$CFG" --namespace "$NS"
	kubectl delete --raw /devcluster/stats >/dev/null
	# Each pod create takes 300 ms: eight of them take a while.
	fault "{\"verb\":\"create\",\"resource\":\"pods\",\"namespace\":\"$NS\",\"latencyMs\":300}"
	run_of slow 8 1
	for i in $(seq 200); do
		n="$(kubectl get pods -n "$NS" -o name | wc -l)"
		[ "$n" -ge 1 ] && break
		sleep 0.05
	done
	echo "pods when SIGTERM came: $n"
	[ "$n" -ge 1 ] && [ "$n" -lt 8 ]
	t0="$(now)"
	ctl_proc_term g 10
	dt="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')"
	echo "exited after $dt s"
	le "$dt" 6
	grep -E 'shutting down' "$DC_DIR/ctl-g.log"
	grep -E 'msg=stopped' "$DC_DIR/ctl-g.log"
	kubectl delete --raw /devcluster/faults >/dev/null

	ctl_proc_start g2 --config "$CFG" --namespace "$NS"
	wait_phase slow Succeeded
	wait_cleaned slow
	ctl_proc_term g2
	# One session, eight pods created once each, no create repeated.
	[ "$(rn slow '{.status.session} {.status.restarts} {.status.reason}')" = "1 0 Succeeded" ]
	[ "$(rn slow '{.status.history[*].session}')" = 1 ]
	[ "$(events slow SessionStarted)" = "session 1 started with 8 nodes" ]
	[ "$(kubectl get events -n "$NS" --field-selector involvedObject.name=slow,reason=SessionStarted -o jsonpath='{.items[*].count}')" = 1 ]
	stats="$(stats)"
	[ "$(jq -c '[.requests[] | select(.verb == "create" and .resource == "pods") |
	    [.code, .count]]' <<<"$stats")" = '[[201,8]]' ]
	for kind in services networkpolicies.networking.k8s.io podgroups.scheduling.x-k8s.io; do
		[ "$(jq -c --arg r "$kind" '[.requests[] | select(.verb == "create" and
		    .resource == $r) | [.code, .count]]' <<<"$stats")" = '[[201,1]]' ]
	done
}

@test "SIGTERM while the caches sync (API server paused): exit 0 at once" {
	# Every request is held for 8 s: the caches cannot sync meanwhile.
	kubectl create --raw '/devcluster/faults/pause?seconds=8' -f - <<<'{}' >/dev/null
	ctl_proc_launch s --config "$CFG"
	ctl_proc_wait s 'metrics on port'
	[ "$(http s health /readyz | cut -c1-3)" = 500 ]
	t0="$(now)"
	ctl_proc_term s 10
	dt="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')"
	echo "exited after $dt s"
	kubectl delete --raw /devcluster/faults >/dev/null
	le "$dt" 2
	run grep -c 'caches synced' "$DC_DIR/ctl-s.log"
	[ "$output" = 0 ]
}

@test "logs: --log-format json is one object per line, reconciles name the Run, no token ever" {
	ctl_ns
	local args=(--config "$CFG" --namespace "$NS" --log-format json --log-level debug
	    --leader-elect --leader-election-namespace "$LEASE_NS"
	    --leader-election-id ops-logs)
	# The leader with the service account's token, a standby with the admin's.
	ctl_proc_start ja --kubeconfig "$SA_KC" "${args[@]}"
	ctl_proc_wait ja 'workers started'
	ctl_proc_start jb --kubeconfig "$DC_DIR/kubeconfig" "${args[@]}"
	ctl_proc_wait jb 'the leader is'
	# One refused pod create: the reconcile logs an error, then retries.
	fault "{\"verb\":\"create\",\"resource\":\"pods\",\"namespace\":\"$NS\",\"code\":400,\"count\":1,\"message\":\"injected: no pod today\"}"
	run_of logs 2
	wait_phase logs Succeeded
	wait_cleaned logs
	ctl_proc_term ja
	# The standby takes the Lease over as the leader leaves: SIGTERM then
	# stops it without the workers' drain (20 s) it never needed.
	ctl_proc_term jb 10

	for p in ja jb; do
		f="$DC_DIR/ctl-$p.log"
		[ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" = '\n' ]
		# Every line, parsed alone, is an object with ts, level, msg.
		run jq -R -s 'split("\n")[:-1] | map(fromjson | type == "object" and
		    (.ts | type) == "string" and (.level | test("^(debug|info|warn|error)$")) and
		    (.msg | type) == "string") | [length, all]' "$f"
		[ "$status" -eq 0 ] || { cat "$f"; false; }
		[ "$(jq -c . <<<"$output")" = "[$(wc -l <"$f"),true]" ]
		[ "$(wc -l <"$f")" -ge 5 ]
	done
	# A reconcile's lines carry the Run, its kind and its namespace.
	run jq -R -c 'fromjson | select(.action == "reconcile")' "$DC_DIR/ctl-ja.log"
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	echo "$output"
	[ "$(jq -s -c --arg ns "$NS" 'map(.kind == "Run" and .ns == $ns and .name == "logs") |
	    unique' <<<"$output")" = '[true]' ]
	[ "$(jq -s -r 'map(select(.level == "error" and
	    (.msg | test("^create Pod logs-[01]: .*injected: no pod today")))) | length' \
	    <<<"$output")" = 1 ]

	# No bearer token in any log line of this suite: the service
	# account's, the admin's, or a piece of either.
	sa="$(token_of "$SA_KC")"
	admin="$(token_of "$DC_DIR/kubeconfig")"
	[ "${#sa}" -gt 100 ] && [ "${#admin}" -ge 16 ]
	for f in "$DC_DIR"/ctl-*.log; do
		echo "checking $f"
		absent -F "$sa" "$f"
		absent -F "${sa##*.}" "$f"
		absent -F "${sa:0:40}" "$f"
		absent -F "$admin" "$f"
		absent -F "${admin:0:12}" "$f"
		absent -iE 'bearer [a-z0-9]' "$f"
	done
}

@test "a bad --config file stops the start with FILE: KEY: reason, before any request" {
	kubectl delete --raw /devcluster/stats >/dev/null
	f="$BATS_TEST_TMPDIR/bad config.yaml"
	while IFS='|' read -r body want; do
		printf 'apiVersion: trainyard.dev/v1alpha1\nkind: ControllerConfig\n%s\n' \
		    "$body" >"$f"
		run timeout 10 "$CTL_BIN" --config "$f" --kubeconfig "$DC_DIR/kubeconfig" \
		    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0
		echo "$body -> $status: $output"
		[ "$status" -eq 2 ]
		[ "$output" = "trainyard-controller: $f: $want" ]
	done <<'EOF'
workerz: 4|workerz: unknown key
leaderElection: {enabled: true, leaseDurationz: 4s}|leaderElection.leaseDurationz: unknown key
networkPolicyPeers: [{bogus: {}}]|networkPolicyPeers[0].bogus: unknown key
workers: 0|workers: 0 is out of range 1..1024
workers: many|workers: must be an integer, not a string
kubeAPIQPS: -1|kubeAPIQPS: -1 is out of range (0, 100000]
logFormat: xml|logFormat: "xml" is not one of text, json
leaderElection: {leaseDuration: soon}|leaderElection.leaseDuration: "soon" is not a duration (examples: "500ms", "15s", "1m30s")
leaderElection: {leaseDuration: 4s, renewDeadline: 4s}|leaderElection.renewDeadline: must be less than leaderElection.leaseDuration (4s)
restartBackoff: {base: 10s, max: 1s}|restartBackoff.base: must not be more than restartBackoff.max (1s)
metricsBindAddress: nohost|metricsBindAddress: "nohost": must be HOST:PORT (":8080", "127.0.0.1:8080", "[::1]:8080") or "0" to turn it off
EOF
	# A wrong kind, and a file that is not there.
	printf 'apiVersion: trainyard.dev/v1alpha1\nkind: Run\n' >"$f"
	run "$CTL_BIN" --config "$f"
	[ "$status" -eq 2 ]
	[ "$output" = "trainyard-controller: $f: kind: must be ControllerConfig" ]
	run "$CTL_BIN" --config "$BATS_TEST_TMPDIR/none.yaml"
	[ "$status" -eq 2 ]
	[[ "$output" == "trainyard-controller: $BATS_TEST_TMPDIR/none.yaml: "* ]]
	# A flag's bad value names the flag.
	run "$CTL_BIN" --config "$CFG" --workers 0
	[ "$status" -eq 2 ]
	[ "$output" = "trainyard-controller: --workers: workers: 0 is out of range 1..1024" ]
	# Not one request reached the API server (the devcluster counts the
	# read of its counters itself).
	[ "$(stats | jq -c '[.resourceRequests, .total <= 1]')" = '[0,true]' ]
}
