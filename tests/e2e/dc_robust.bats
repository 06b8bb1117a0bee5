#!/usr/bin/env bats
#
# dc_robust.bats: malformed requests get the right Status code and message
# and never crash, hang or leak (the devcluster runs under ASan/UBSan/LSan
# and dc_stop fails the suite on a sanitizer report or a non-zero exit);
# kubectl describe; impersonation.
#
# The raw requests go through curl with the CA and admin token of the
# kubeconfig, so the bodies reach the server exactly as written.

load devcluster

setup_file() {
	# A second user for the impersonation tests (kube-apiserver's
	# --token-auth-file format).
	printf 'tok-alice,alice,u-alice,"dev"\n' >"$BATS_FILE_TMPDIR/tokens"
	dc_start --kubernetes-version 1.32 --log-level debug \
	    --token-auth-file "$BATS_FILE_TMPDIR/tokens"
	kubectl config view --raw \
	    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
	    base64 -d >"$BATS_FILE_TMPDIR/ca.crt"
	kubectl config view --raw -o jsonpath='{.users[0].user.token}' \
	    >"$BATS_FILE_TMPDIR/token"
	kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}' \
	    >"$BATS_FILE_TMPDIR/server"
	kubectl create configmap rb1 --from-literal=a=b
}

teardown_file() {
	dc_stop
}

# req ARGS...: a curl request as the admin; sets $code (the HTTP status)
# and leaves the body in $BATS_TEST_TMPDIR/body.
req() {
	code="$(curl -sS --max-time 10 --cacert "$BATS_FILE_TMPDIR/ca.crt" \
	    -H "Authorization: Bearer $(cat "$BATS_FILE_TMPDIR/token")" \
	    -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' "$@")"
}

# status_is CODE REASON MESSAGE: the last reply was a Status with these.
status_is() {
	local body="$BATS_TEST_TMPDIR/body"

	if [ "$code" != "$1" ]; then
		echo "HTTP $code, expected $1:" >&2
		cat "$body" >&2
		return 1
	fi
	[ "$(jq -r .kind "$body")" = "Status" ]
	[ "$(jq -r .status "$body")" = "Failure" ]
	[ "$(jq -r .code "$body")" = "$1" ]
	[ "$(jq -r .reason "$body")" = "$2" ] || { cat "$body" >&2; return 1; }
	[ "$(jq -r .message "$body")" = "$3" ] || { cat "$body" >&2; return 1; }
}

srv() {
	cat "$BATS_FILE_TMPDIR/server"
}

cm_url() {
	echo "$(srv)/api/v1/namespaces/default/configmaps$1"
}

@test "bad bodies: invalid JSON, invalid YAML, non-object JSON, over 3 MiB" {
	req -X POST -H 'Content-Type: application/json' --data '{bad' "$(cm_url)"
	status_is 400 BadRequest "couldn't get version/kind; json parse error: JSON: quoted object property name expected at offset 1"
	req -X POST -H 'Content-Type: application/yaml' --data $'a: [\n  b: : :' "$(cm_url)"
	status_is 400 BadRequest "error converting YAML to JSON: line 2, column 6: did not find expected node content (while parsing a flow node)"
	req -X POST -H 'Content-Type: application/json' --data '[1,2]' "$(cm_url)"
	status_is 400 BadRequest "couldn't get version/kind; json parse error: the body is not a JSON object"
	req -X POST -H 'Content-Type: application/json' --data '"x"' "$(cm_url)"
	status_is 400 BadRequest "couldn't get version/kind; json parse error: the body is not a JSON object"
	head -c 3200000 /dev/zero | tr '\0' a >"$BATS_TEST_TMPDIR/big"
	req -X POST -H 'Content-Type: application/json' --data-binary "@$BATS_TEST_TMPDIR/big" \
	    "$(cm_url)"
	status_is 413 RequestEntityTooLarge "Request entity too large: limit is 3145728"
	# No Content-Type at all is JSON, as kube-apiserver reads it.
	req -X POST -H 'Content-Type:' \
	    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"no-ctype"}}' "$(cm_url)"
	[ "$code" = 201 ]
	req -X POST -H 'Content-Type: text/plain' --data hello "$(cm_url)"
	status_is 415 UnsupportedMediaType "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	req -X PUT -H 'Content-Type: application/json' \
	    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}' \
	    "$(cm_url /rb1)"
	status_is 400 BadRequest "the name of the object (other) does not match the name on the URL (rb1)"
	req -X POST -H 'Content-Type: application/json' \
	    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}' \
	    "$(cm_url)"
	status_is 400 BadRequest "the namespace of the provided object does not match the namespace sent on the request"
	run kubectl get cm x
	[ "$status" -ne 0 ]
}

@test "unknown resources and groups: 404" {
	req "$(srv)/api/v1/namespaces/default/foos"
	status_is 404 NotFound "the server could not find the requested resource"
	# kube-apiserver's plain-text page for a group/version it does not serve.
	req "$(srv)/apis/nope.example.com/v1/foos"
	[ "$code" = 404 ]
	[ "$(cat "$BATS_TEST_TMPDIR/body")" = "404 page not found" ]
	req "$(srv)/apis/apps/v9/deployments"
	[ "$code" = 404 ]
	[ "$(cat "$BATS_TEST_TMPDIR/body")" = "404 page not found" ]
}

@test "wrong methods: 405" {
	req -X PUT -H 'Content-Type: application/json' \
	    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rb1"}}' "$(cm_url)"
	status_is 405 MethodNotAllowed "the server does not allow this method on the requested resource"
	req -X PATCH -H 'Content-Type: application/merge-patch+json' --data '{}' "$(cm_url)"
	status_is 405 MethodNotAllowed "the server does not allow this method on the requested resource"
	req -X POST -H 'Content-Type: application/json' \
	    --data '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rb1"}}' \
	    "$(cm_url /rb1)"
	status_is 405 MethodNotAllowed "the server does not allow this method on the requested resource"
	req -X DELETE "$(srv)/api/v1/namespaces"
	status_is 405 MethodNotAllowed "the server does not allow this method on the requested resource"
	# None of them changed the object.
	[ "$(kubectl get cm rb1 -o jsonpath='{.data.a}')" = b ]
}

@test "bad selectors and list options: 400 and 422" {
	req "$(cm_url '?labelSelector=a%20in%20(')"
	status_is 400 BadRequest "unable to parse requirement: found '', expected: ',', ')' or identifier"
	req "$(cm_url '?fieldSelector=spec.x=1')"
	status_is 400 BadRequest "field label not supported: spec.x"
	req "$(cm_url '?watch=true&sendInitialEvents=true')"
	status_is 422 Invalid 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled]'
	req "$(cm_url '?resourceVersionMatch=Exact')"
	status_is 422 Invalid 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'
}

@test "bad patches: 400, 415 and 422" {
	req -X PATCH -H 'Content-Type: application/merge-patch+json' --data '{bad' "$(cm_url /rb1)"
	status_is 400 BadRequest "JSON: quoted object property name expected at offset 1"
	req -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' --data '{bad' \
	    "$(cm_url /rb1)"
	status_is 400 BadRequest "JSON: quoted object property name expected at offset 1"
	req -X PATCH -H 'Content-Type: application/json-patch+json' \
	    --data '[{"op":"test","path":"/data/a","value":"zz"}]' "$(cm_url /rb1)"
	status_is 422 Invalid "op 0 (test) at /data/a: value differs"
	req -X PATCH -H 'Content-Type: application/json-patch+json' --data '{"op":"test"}' \
	    "$(cm_url /rb1)"
	status_is 400 BadRequest "a JSON patch must be a JSON array"
	req -X PATCH -H 'Content-Type: text/plain' --data hello "$(cm_url /rb1)"
	status_is 415 UnsupportedMediaType "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
	[ "$(kubectl get cm rb1 -o jsonpath='{.data.a}')" = b ]
}

@test "strategic merge patch on a custom resource: 415" {
	kubectl apply -f - <<-'EOF'
	apiVersion: apiextensions.k8s.io/v1
	kind: CustomResourceDefinition
	metadata: {name: widgets.rb.example.com}
	spec:
	  group: rb.example.com
	  scope: Namespaced
	  names: {plural: widgets, singular: widget, kind: Widget}
	  versions:
	  - name: v1
	    served: true
	    storage: true
	    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
	EOF
	kubectl wait --for=condition=Established crd/widgets.rb.example.com
	printf 'apiVersion: rb.example.com/v1\nkind: Widget\nmetadata: {name: w1}\n' |
	    kubectl apply -f -
	req -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
	    --data '{"spec":{"a":1}}' "$(srv)/apis/rb.example.com/v1/namespaces/default/widgets/w1"
	status_is 415 UnsupportedMediaType "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
	run kubectl patch widget w1 --type=strategic -p '{"spec":{"a":1}}'
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'error: application/strategic-merge-patch+json is not supported by rb.example.com/v1, Kind=Widget: the body of the request was in an unknown format'
	kubectl delete crd widgets.rb.example.com --wait=true
}

@test "huge query string and header: rejected, server alive" {
	local q
	q="$(head -c 100000 /dev/zero | tr '\0' a)"
	# Beyond the 32 KiB of header data the connection is dropped
	# (kube-apiserver answers 431 past 1 MiB).
	req "$(srv)/api/v1/namespaces?x=$q" || true
	[ "$code" = 000 ] || [ "$code" = 414 ] || [ "$code" = 431 ]
	req -H "X-Junk: $q" "$(srv)/api/v1/namespaces" || true
	[ "$code" = 000 ] || [ "$code" = 431 ]
	# A large header that fits is fine.
	req -H "X-Junk: ${q:0:9000}" "$(srv)/api/v1/namespaces"
	[ "$code" = 200 ]
	kubectl get ns default
}

@test "plaintext HTTP, TLS garbage and raw garbage: rejected, server alive" {
	local hp
	hp="$(srv)"
	hp="${hp#https://}"
	run curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://$hp/api/v1/namespaces"
	[ "$status" -ne 0 ]
	[ "$output" != 200 ]
	# A TLS handshake, then random bytes, then close.
	head -c 5000 /dev/urandom | timeout 10 openssl s_client -quiet -connect "$hp" \
	    -CAfile "$BATS_FILE_TMPDIR/ca.crt" >/dev/null 2>&1 || true
	# Random bytes instead of a ClientHello.
	(
		exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}"
		head -c 3000 /dev/urandom >&3 || true
		exec 3>&-
	) || true
	# A TLS connection that closes in the middle of a request (at the end
	# of its input: -quiet alone would wait for an answer that never comes).
	printf 'POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"a":' |
	    timeout 10 openssl s_client -quiet -no_ign_eof -connect "$hp" \
	    -CAfile "$BATS_FILE_TMPDIR/ca.crt" >/dev/null 2>&1 || true
	kubectl get ns default
}

@test "200 parallel requests with junk bodies: server alive" {
	local d="$BATS_TEST_TMPDIR/junk" i
	mkdir -p "$d"
	for i in $(seq 0 9); do
		head -c $((i * 997 + 1)) /dev/urandom >"$d/$i"
	done
	printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":' >"$d/10"
	printf '[{"op":"replace","path":"/data/a","value":' >"$d/11"
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [' >"$d/12"
	# Each line: method content-type body-file path.
	for i in $(seq 0 199); do
		case $((i % 5)) in
		0) echo "POST application/json $((i % 13)) configmaps" ;;
		1) echo "PATCH application/json-patch+json $((i % 13)) configmaps/rb1" ;;
		2) echo "PATCH application/merge-patch+json $((i % 13)) configmaps/rb1" ;;
		3) echo "POST application/yaml $((i % 13)) configmaps" ;;
		4) echo "PUT application/vnd.kubernetes.protobuf $((i % 13)) configmaps/rb1" ;;
		esac
	done >"$d/plan"
	export CA="$BATS_FILE_TMPDIR/ca.crt" TOKEN SRV="$(srv)" JD="$d"
	TOKEN="$(cat "$BATS_FILE_TMPDIR/token")"
	# shellcheck disable=SC2016
	xargs -P 20 -L 1 sh -c 'curl -sS --max-time 10 --cacert "$CA" \
	    -H "Authorization: Bearer $TOKEN" -H "Content-Type: $1" -X "$0" \
	    --data-binary "@$JD/$2" -o /dev/null -w "%{http_code}\n" \
	    "$SRV/api/v1/namespaces/default/$3"' <"$d/plan" >"$d/codes"
	[ "$(wc -l <"$d/codes")" -eq 200 ]
	# Every one got a 4xx; none a 5xx or no answer.
	if grep -vE '^4[0-9][0-9]$' "$d/codes"; then
		sort "$d/codes" | uniq -c >&2
		return 1
	fi
	[ "$(kubectl get cm rb1 -o jsonpath='{.data.a}')" = b ]
	kubectl get ns
}

@test "kubectl describe: pod, namespace, configmap, with their events" {
	kubectl run rb-pod --image=busybox
	kubectl create configmap rb-cm --from-literal=k=v
	local uid
	uid="$(kubectl get cm rb-cm -o jsonpath='{.metadata.uid}')"
	kubectl create -f - <<-EOF
	apiVersion: v1
	kind: Event
	metadata: {name: rb-cm.ev1, namespace: default}
	involvedObject: {apiVersion: v1, kind: ConfigMap, name: rb-cm, namespace: default, uid: "$uid"}
	reason: Tested
	message: hello from dc_robust
	type: Normal
	source: {component: rb-test}
	count: 1
	---
	apiVersion: v1
	kind: Event
	metadata: {name: rb-other.ev1, namespace: default}
	involvedObject: {apiVersion: v1, kind: ConfigMap, name: rb-other, namespace: default}
	reason: Wrong
	message: not for rb-cm
	type: Warning
	source: {component: rb-test}
	EOF
	run kubectl describe pod rb-pod
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^Name: +rb-pod$'
	echo "$output" | grep -E '^Namespace: +default$'
	echo "$output" | grep -E '^Labels: +run=rb-pod$'
	echo "$output" | grep -E '^Events:'
	run kubectl describe namespace default
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^Name: +default$'
	echo "$output" | grep -E '^Labels: +kubernetes.io/metadata.name=default$'
	echo "$output" | grep -E '^Status: +Active$'
	run kubectl describe configmap rb-cm
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^Name: +rb-cm$'
	echo "$output" | grep -E '^Namespace: +default$'
	echo "$output" | grep -E '^Labels: +<none>$'
	echo "$output" | grep -E '^Events:'
	# describe found the event by its involvedObject field selector,
	# and only that one.
	echo "$output" | grep -E 'Normal +Tested +.* rb-test +hello from dc_robust'
	! echo "$output" | grep -F 'not for rb-cm' || false
	# The field selectors describe uses.
	run kubectl get events -o name --field-selector \
	    "involvedObject.name=rb-cm,involvedObject.namespace=default,involvedObject.kind=ConfigMap,involvedObject.uid=$uid"
	[ "$output" = "event/rb-cm.ev1" ]
	run kubectl get events -o name --field-selector type=Warning,reason=Wrong,source=rb-test
	[ "$output" = "event/rb-other.ev1" ]
	run kubectl get events --field-selector involvedObject.bogus=1
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'field label not supported: involvedObject.bogus'
}

@test "impersonation: --as and --as-group as the admin" {
	# RBAC applies to the impersonated users: let them read namespaces.
	kubectl create clusterrole robust-ns-reader --verb=get --resource=namespaces
	kubectl create clusterrolebinding robust-ns-reader --clusterrole=robust-ns-reader \
	    --user=alice --group=dev
	kubectl --as=alice get ns default
	wait_for_line "$DC_DIR/log" 'GET /api/v1/namespaces/default -> 200 \(alice\)'
	kubectl --as=carol --as-group=dev --as-group=ops get ns kube-public
	wait_for_line "$DC_DIR/log" 'GET /api/v1/namespaces/kube-public -> 200 \(carol\)'
	# Groups or a uid without a user: kube-apiserver's 500.
	req -H 'Impersonate-Group: dev' "$(srv)/api/v1/namespaces"
	status_is 500 InternalError "Internal error occurred: requested [{Group  dev    }] without impersonating a user"
	# kubectl auth whoami posts a SelfSubjectReview.
	run kubectl --as=alice auth whoami
	[ "$status" -eq 0 ]
	echo "$output" | grep -E 'Username +alice'
}

@test "impersonation by a user without the impersonate permission: 403" {
	run kubectl --token=tok-alice --as=bob get ns default
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope'
}

@test "the sanitizer check of the helper fails on a report" {
	local extra
	dc_start_extra extra --kubernetes-version 1.32
	kubectl_at "$extra" get ns default
	# The devcluster writes its log at its own offset (no O_APPEND): the
	# filler keeps its shutdown lines from overwriting the planted report.
	{
		printf '%0400d\n' 0 1 2 3 4 5 6 7 8 9
		echo '==1==ERROR: AddressSanitizer: heap-use-after-free (planted)'
	} >>"$extra/log"
	# Not under run: the devcluster must be a child of this shell.
	local st=0
	dc_stop_extra "$extra" 2>"$BATS_TEST_TMPDIR/stop.err" || st=$?
	cat "$BATS_TEST_TMPDIR/stop.err" >&2
	[ "$st" -eq 1 ]
	grep -F 'sanitizer report in the devcluster log' "$BATS_TEST_TMPDIR/stop.err"
	! grep -F 'exited with status' "$BATS_TEST_TMPDIR/stop.err" || false
	[ ! -f "$extra/pid" ]
	rm -rf "$extra"
}

@test "after all of that the server still answers" {
	kubectl get ns
	kubectl get cm rb1
}

# cpu_ticks PID: the process's user + system CPU time, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# close_wait PORT: the server's connections on PORT the peer has closed.
close_wait() {
	ss -tanH state close-wait "( sport = :$1 )"
}

@test "watch clients that went away: connections closed, no busy loop" {
	local pid port i a b hz
	pid="$(cat "$DC_DIR/pid")"
	port="$(srv)"
	port="${port##*:}"
	hz="$(getconf CLK_TCK)"
	# kubectl get -w is killed mid-watch; kubectl wait gives up on its watch.
	run timeout 2 kubectl get pods -w -A
	[ "$status" -eq 124 ]
	run kubectl wait --for=jsonpath='{.data.a}'=never cm/rb1 --timeout=1s
	[ "$status" -ne 0 ]
	[[ "$output" == *"timed out"* ]]
	# libwebsockets 4.1 never read the peer's FIN of a connection that
	# was still answering: CLOSE-WAIT and poll() spinning on its POLLIN.
	for i in $(seq 60); do
		[ -z "$(close_wait "$port")" ] && break
		sleep 0.05
	done
	close_wait "$port" >&2
	[ -z "$(close_wait "$port")" ]
	a="$(cpu_ticks "$pid")"
	sleep 2
	b="$(cpu_ticks "$pid")"
	echo "devcluster CPU over 2 s: $((b - a)) ticks of 1/$hz s" >&2
	# Idle: well under a tenth of a core (the spin took 40-100 %).
	[ $(((b - a) * 10)) -lt $((hz * 2)) ]
}

@test "SIGTERM under watch and write load: exits within a few seconds" {
	local extra pids=() i t0 t1 st=0 ok=0
	dc_start_extra extra --kubernetes-version 1.32
	# Background clients close fd 3, so bats does not wait for them.
	for i in 1 2 3; do
		kubectl_at "$extra" get cm -w -A >/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	for i in 1 2; do
		(
			for n in $(seq 1000); do
				kubectl_at "$extra" create cm "load-$i-$n" \
				    --from-literal=a=b >/dev/null 2>&1 || true
			done
		) 3>&- &
		pids+=($!)
	done
	for i in $(seq 200); do
		if kubectl_at "$extra" get cm load-1-3 load-2-3 >/dev/null 2>&1; then
			ok=1
			break
		fi
	done
	t0="$(date +%s%N)"
	dc_stop_extra "$extra" || st=$?
	t1="$(date +%s%N)"
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	rm -rf "$extra"
	echo "load seen: $ok; stopped in $(((t1 - t0) / 1000000)) ms, status $st" >&2
	[ "$ok" -eq 1 ]
	[ "$st" -eq 0 ]
	[ $(((t1 - t0) / 1000000)) -lt 4000 ]
}

@test "200 slow, idle and garbage clients: the API keeps answering" {
	local hp hostile="$DC_REPO/$DC_BUILD/bin/ty-hostile"
	dc_make "$DC_BUILD/bin/ty-hostile"
	hp="$(srv)"
	hp="${hp#https://}"
	# /readyz needs no credentials; every answer within 5 s, none lost.
	# (200: each TLS handshake costs the sanitizer build a few ms.)
	run "$hostile" --target "$hp" --tls --conns 200 --seconds 12 \
	    --probe "https://$hp/readyz" --probe-max-ms 5000
	echo "$output" >&3
	[ "$status" -eq 0 ]
	# The slow headers were cut at the devcluster's 10 s deadline, and
	# /devcluster/stats says so.
	[[ "$output" =~ closed_by_server=([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -ge 40 ]
	kubectl get --raw /devcluster/stats >"$BATS_TEST_TMPDIR/stats"
	jq -e '.connections.dropped.timeout_headers >= 40 and .connections.accepted >= 200
	    and .connections.dropped.evicted == 0 and .connections.open >= 1' \
	    "$BATS_TEST_TMPDIR/stats"
	kubectl get ns default
}
