#!/usr/bin/env bats
#
# dc_faults.bats: fault injection (/devcluster/faults) and request
# counters (/devcluster/stats) as reliability tests use them, with the
# real kubectl and curl: injected errors with their Status and
# Retry-After, latency, pauses, dropped watches, compaction (410 on
# resume), counting, and the admin-only check.

load devcluster

setup_file() {
	# A user outside system:masters.
	printf 'tok-bob,bob,u-bob,"dev"\n' >"$BATS_FILE_TMPDIR/tokens"
	dc_start --kubernetes-version 1.32 --token-auth-file "$BATS_FILE_TMPDIR/tokens"
	kubectl config view --raw \
	    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
	    base64 -d >"$BATS_FILE_TMPDIR/ca.crt"
	kubectl config view --raw -o jsonpath='{.users[0].user.token}' \
	    >"$BATS_FILE_TMPDIR/token"
	kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}' \
	    >"$BATS_FILE_TMPDIR/server"
}

teardown_file() {
	dc_stop
}

teardown() {
	# Every test starts without faults.
	req -X DELETE "$(server)/devcluster/faults" || true
}

server() {
	cat "$BATS_FILE_TMPDIR/server"
}

# req ARGS...: curl as the admin; $code is the HTTP status, the body is
# in $BATS_TEST_TMPDIR/body and the headers in $BATS_TEST_TMPDIR/headers.
req() {
	code="$(curl -sS --max-time 10 --cacert "$BATS_FILE_TMPDIR/ca.crt" \
	    -H "Authorization: Bearer $(cat "$BATS_FILE_TMPDIR/token")" \
	    -D "$BATS_TEST_TMPDIR/headers" -o "$BATS_TEST_TMPDIR/body" \
	    -w '%{http_code}' "$@")"
}

body() {
	cat "$BATS_TEST_TMPDIR/body"
}

# fault JSON: adds a rule, which must be accepted.
fault() {
	req -X POST -H 'Content-Type: application/json' -d "$1" "$(server)/devcluster/faults"
	[ "$code" = 201 ] || { echo "adding $1: $code $(body)" >&2; return 1; }
}

@test "the endpoints are for system:masters only" {
	run curl -sS --cacert "$BATS_FILE_TMPDIR/ca.crt" -H 'Authorization: Bearer tok-bob' \
	    -o /dev/null -w '%{http_code}' "$(server)/devcluster/faults"
	[ "$output" = 403 ]
	run curl -sS --cacert "$BATS_FILE_TMPDIR/ca.crt" -H 'Authorization: Bearer tok-bob' \
	    "$(server)/devcluster/stats"
	[[ "$output" == *'"reason":"Forbidden"'* ]]
	[[ "$output" == *'User \"bob\" cannot get path \"/devcluster/stats\"'* ]]
	run curl -sS --cacert "$BATS_FILE_TMPDIR/ca.crt" -o /dev/null -w '%{http_code}' \
	    "$(server)/devcluster/faults"
	[ "$output" = 401 ]
}

@test "bad rules are 400 with the reason" {
	req -X POST -d '{"verb":"fly","resource":"pods","code":500}' "$(server)/devcluster/faults"
	[ "$code" = 400 ]
	[[ "$(body)" == *'verb: unsupported value \"fly\"'* ]]
	req -X POST -d '{"verb":"get","resource":"pods","code":500,"share":3}' \
	    "$(server)/devcluster/faults"
	[ "$code" = 400 ]
	[[ "$(body)" == *'share: must be between 0 and 1'* ]]
	req -X POST -d 'not json' "$(server)/devcluster/faults"
	[ "$code" = 400 ]
	[[ "$(body)" == *'malformed JSON'* ]]
}

@test "503 on list pods fails kubectl get pods with the message, clearing fixes it" {
	fault '{"verb":"list","resource":"pods","code":503,"message":"etcd is on fire"}'
	run kubectl get pods
	[ "$status" -ne 0 ]
	[[ "$output" == *"Error from server (ServiceUnavailable): etcd is on fire"* ]]
	# Other verbs and resources are untouched.
	kubectl get configmaps
	req "$(server)/devcluster/faults"
	[ "$(jq '.faults[0].injected' <<<"$(body)")" -ge 1 ]
	req -X DELETE "$(server)/devcluster/faults"
	[ "$code" = 200 ]
	run kubectl get pods
	[ "$status" -eq 0 ]
}

@test "429 carries Retry-After and a TooManyRequests Status; count stops it" {
	fault '{"verb":"get","resource":"configmaps","code":429,"retryAfterSeconds":2,"count":1}'
	req "$(server)/api/v1/namespaces/default/configmaps/nothing"
	[ "$code" = 429 ]
	grep -qi '^retry-after: 2' "$BATS_TEST_TMPDIR/headers"
	[ "$(jq -r .reason <<<"$(body)")" = TooManyRequests ]
	req "$(server)/api/v1/namespaces/default/configmaps/nothing"
	[ "$code" = 404 ]
}

@test "a share of 0.5 fails every second matching request" {
	fault '{"verb":"get","resource":"namespaces","code":500,"share":0.5}'
	local codes="" i
	for i in 1 2 3 4; do
		req "$(server)/api/v1/namespaces/default"
		codes="$codes$code "
	done
	[ "$codes" = "200 500 200 500 " ]
}

@test "injected latency delays the reply" {
	fault '{"verb":"list","resource":"namespaces","latencyMs":800}'
	local t
	t="$(curl -sS --cacert "$BATS_FILE_TMPDIR/ca.crt" -o /dev/null -w '%{time_total}' \
	    -H "Authorization: Bearer $(cat "$BATS_FILE_TMPDIR/token")" \
	    "$(server)/api/v1/namespaces")"
	awk -v t="$t" 'BEGIN { exit !(t >= 0.75 && t < 5) }'
	# The loop is not blocked meanwhile: kubectl still works.
	kubectl get namespace default
}

@test "drop-watches ends a running kubectl get -w, which exits 0" {
	kubectl create configmap watched
	kubectl get configmaps -w >"$BATS_TEST_TMPDIR/watch" 2>&1 &
	local pid=$! i
	wait_for_line "$BATS_TEST_TMPDIR/watch" '^watched '
	req -X POST "$(server)/devcluster/faults/drop-watches"
	[ "$code" = 200 ]
	[[ "$(body)" == *"watches dropped"* ]]
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		echo "kubectl get -w still running" >&2
		return 1
	fi
	wait "$pid"
}

@test "compact makes a watch from an older resourceVersion get 410" {
	local rv
	rv="$(kubectl create configmap old1 -o jsonpath='{.metadata.resourceVersion}')"
	kubectl create configmap old2
	req -X POST "$(server)/devcluster/faults/compact"
	[ "$code" = 200 ]
	req "$(server)/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$rv"
	[ "$code" = 200 ]
	[ "$(jq -r .type <<<"$(body)")" = ERROR ]
	[ "$(jq -r .object.code <<<"$(body)")" = 410 ]
	[ "$(jq -r .object.reason <<<"$(body)")" = Expired ]
	# The objects are still there.
	kubectl get configmap old1 old2
}

@test "pause holds requests for N seconds, then they are answered" {
	req -X POST "$(server)/devcluster/faults/pause?seconds=2"
	[ "$code" = 200 ]
	local start end
	start="$(date +%s%N)"
	kubectl get namespace default
	end="$(date +%s%N)"
	[ $(((end - start) / 1000000)) -ge 1500 ]
	# Over: answered at once.
	start="$(date +%s%N)"
	kubectl get --raw /readyz
	end="$(date +%s%N)"
	[ $(((end - start) / 1000000)) -lt 1500 ]
}

@test "stats count a known number of creates" {
	req -X DELETE "$(server)/devcluster/stats"
	[ "$code" = 200 ]
	kubectl create configmap s1
	kubectl create configmap s2
	kubectl create configmap s3
	run kubectl create configmap s1
	[ "$status" -ne 0 ]
	req "$(server)/devcluster/stats"
	[ "$code" = 200 ]
	[ "$(jq '[.requests[] | select(.verb == "create" and .resource == "configmaps" and
	    .code == 201) | .count] | add' <<<"$(body)")" = 3 ]
	[ "$(jq '.byVerb.create' <<<"$(body)")" = 4 ]
	[ "$(jq '.byCode["409"]' <<<"$(body)")" = 1 ]
	[ "$(jq '.total' <<<"$(body)")" -ge 4 ]
}
