#!/usr/bin/env bats
#
# ctl_webhook.bats: trainyard-controller's conversion webhook with
# self-managed certificates, as the manifests run it: under its service
# account (manifests/rbac.yaml enforced by the devcluster), in
# trainyard-system, with the sanitizer build.
#
# - the first replica creates the Secret trainyard-webhook-certs (CA and
#   serving certificate), a second one reuses it without writing;
# - curl, verifying against the Secret's CA under the Service's DNS name,
#   gets /readyz, then converts a ConversionReview (v1 and v1beta1) and is
#   refused with 400 for a body that is not one, 404 and 405 elsewhere;
# - --metrics-secure serves /metrics over HTTPS with the same certificate
#   and answers 401 to a scrape without a token;
# - while kubectl lists Runs at the version they are not stored at without
#   pause (each read a ConversionReview through the Service), the
#   self-managed serving certificate renews and the CA rotates
#   (--webhook-cert-lifetime-for-testing=30s), then tls.crt and tls.key of
#   --webhook-cert-dir are replaced three times: not one read fails, and
#   the number of reads is printed.

load devcluster
load controller

SVC=trainyard-webhook.trainyard-system.svc

setup_file() {
	dc_start || return 1
	ctl_build || return 1
	ctl_install || return 1
	kubectl apply -f "$DC_REPO/manifests/namespace.yaml" \
	    -f "$DC_REPO/manifests/rbac.yaml" >/dev/null || return 1
	ctl_config
	ctl_sa_kubeconfig "$DC_DIR/sa.kubeconfig"
}

# A failed test leaves no reader or proxy behind.
teardown() {
	touch "$BATS_FILE_TMPDIR/stop"
	if [ -n "${PROXY_PID:-}" ]; then
		kill "$PROXY_PID" 2>/dev/null || true
	fi
}

teardown_file() {
	local status=0
	ctl_proc_stop_all || status=1
	dc_stop || status=1
	return "$status"
}

# port NAME WHAT: the port controller NAME logged for "WHAT on port N".
port_of() {
	sed -n "s/.*$2 on port \([0-9]*\).*/\1/p" "$DC_DIR/ctl-$1.log" | tail -1
}

# hook PORT ARGS...: curl to the webhook under the Service's name, with the
# Secret's CA.
hook() {
	local port="$1"
	shift
	curl -sS --cacert "$BATS_FILE_TMPDIR/ca.crt" --resolve "$SVC:$port:127.0.0.1" \
	    --max-time 10 "$@"
}

@test "the first replica creates the Secret; the webhook serves with its CA" {
	POD_NAMESPACE=trainyard-system ctl_proc_launch a --kubeconfig "$DC_DIR/sa.kubeconfig" \
	    --webhook-cert-mode=self
	ctl_proc_wait a 'msg=started'
	kubectl -n trainyard-system wait --for=create --timeout=20s \
	    secret/trainyard-webhook-certs
	kubectl -n trainyard-system get secret trainyard-webhook-certs -o json \
	    >"$BATS_FILE_TMPDIR/secret.json"
	jq -r '.data["ca.crt"]' "$BATS_FILE_TMPDIR/secret.json" | base64 -d \
	    >"$BATS_FILE_TMPDIR/ca.crt"
	jq -e '.data | keys == ["ca.crt", "ca.key", "tls.crt", "tls.key"]' \
	    "$BATS_FILE_TMPDIR/secret.json"
	jq -r '.data["tls.crt"]' "$BATS_FILE_TMPDIR/secret.json" | base64 -d |
	    openssl x509 -noout -ext subjectAltName | grep -F "DNS:$SVC, DNS:$SVC.cluster.local"
	port="$(port_of a 'conversion webhook')"
	[ -n "$port" ]
	# The certificate thread serves what it wrote a moment later.
	for i in $(seq 100); do
		hook "$port" "https://$SVC:$port/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	run hook "$port" "https://$SVC:$port/readyz"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	run hook "$port" -o /dev/null -w '%{http_code} %{http_version}' "https://$SVC:$port/healthz"
	[ "$output" = "200 1.1" ]
	# TLS 1.1 is refused.
	run hook "$port" --tls-max 1.1 "https://$SVC:$port/healthz"
	[ "$status" -ne 0 ]
}

@test "a second replica reuses the Secret without writing it" {
	local rv
	rv="$(kubectl -n trainyard-system get secret trainyard-webhook-certs \
	    -o jsonpath='{.metadata.resourceVersion}')"
	POD_NAMESPACE=trainyard-system ctl_proc_launch b --kubeconfig "$DC_DIR/sa.kubeconfig" \
	    --webhook-cert-mode=self
	ctl_proc_wait b 'msg=started'
	port="$(port_of b 'conversion webhook')"
	for i in $(seq 100); do
		hook "$port" "https://$SVC:$port/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	run hook "$port" "https://$SVC:$port/readyz"
	[ "$output" = ok ]
	[ "$(kubectl -n trainyard-system get secret trainyard-webhook-certs \
	    -o jsonpath='{.metadata.resourceVersion}')" = "$rv" ]
	ctl_proc_term b
}

@test "ConversionReviews: converted in order, answered in their version; 400, 404, 405" {
	port="$(port_of a 'conversion webhook')"
	run hook "$port" -H 'Content-Type: application/json' \
	    --data-binary "@$DC_REPO/tests/fixtures/review/v1-to-beta.request.json" \
	    "https://$SVC:$port/convert?timeout=30s"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.apiVersion == "apiextensions.k8s.io/v1"
	    and .kind == "ConversionReview"
	    and .response.uid == "705ab4f5-6393-11e8-b7cc-42010a800002"
	    and .response.result.status == "Success"
	    and ([.response.convertedObjects[].metadata.name] == ["r1", "r2", "r3"])
	    and all(.response.convertedObjects[]; .apiVersion == "trainyard.dev/v1beta1")'
	run hook "$port" -H 'Content-Type: application/json' \
	    --data-binary "@$DC_REPO/tests/fixtures/review/v1beta1-to-alpha.request.json" \
	    "https://$SVC:$port/convert"
	echo "$output" | jq -e '.apiVersion == "apiextensions.k8s.io/v1beta1"
	    and .response.convertedObjects[0].apiVersion == "trainyard.dev/v1alpha1"'
	run hook "$port" -o /dev/null -w '%{http_code}' -d '{"kind":"AdmissionReview"}' \
	    "https://$SVC:$port/convert"
	[ "$output" = 400 ]
	run hook "$port" -o /dev/null -w '%{http_code}' "https://$SVC:$port/convert"
	[ "$output" = 405 ]
	run hook "$port" -o /dev/null -w '%{http_code}' "https://$SVC:$port/nothing"
	[ "$output" = 404 ]
	# The metrics counted them.
	grep -q 'msg=started' "$DC_DIR/ctl-a.log"
}

@test "--metrics-secure: HTTPS with the webhook's certificate, 401 without a token" {
	POD_NAMESPACE=trainyard-system ctl_proc_launch s --kubeconfig "$DC_DIR/sa.kubeconfig" \
	    --webhook-cert-mode=self --metrics-secure
	ctl_proc_wait s 'msg=started'
	mport="$(port_of s 'secure metrics')"
	[ -n "$mport" ]
	for i in $(seq 100); do
		hook "$mport" -o /dev/null "https://$SVC:$mport/metrics" 2>/dev/null && break
		sleep 0.1
	done
	run hook "$mport" -o /dev/null -w '%{http_code}' "https://$SVC:$mport/metrics"
	[ "$status" -eq 0 ]
	[ "$output" = 401 ]
	# Plain HTTP is not served there.
	run curl -sS --max-time 5 "http://127.0.0.1:$mport/metrics"
	[ "$status" -ne 0 ] || [[ "$output" != *trainyard_* ]]
	ctl_proc_term s
}

# ---- certificates replaced while the API server calls the webhook ---------
#
# The CRDs of crds/: v1beta1 stored,
# v1alpha1 served, conversion through the Service trainyard-webhook, whose
# Endpoints point at the controller on 127.0.0.1 (as ctl_runbook.bats does).
# A reader lists Runs at v1alpha1 without pause, so every read converts
# every Run through the webhook, while the certificates change under it.

UPGRADE_CRDS="$DC_REPO/crds"
RNS=rotation

# endpoints NAME: the Service's Endpoints to controller NAME's webhook.
endpoints() {
	local port
	port="$(port_of "$1" 'conversion webhook')"
	[ -n "$port" ] || return 1
	printf '%s\n' 'apiVersion: v1' 'kind: Endpoints' \
	    'metadata: {name: trainyard-webhook, namespace: trainyard-system}' \
	    'subsets:' '- addresses: [{ip: 127.0.0.1}]' \
	    "  ports: [{name: webhook, port: $port}]" | kubectl apply -f - >/dev/null
}

# The reads go through "kubectl proxy" (the kubeconfig's credentials, one
# kubectl for all of them): the API server and the webhook see what they
# see from kubectl get, without a kubectl start per read.

# read_once: one list of the Runs at v1alpha1: both there, in v1alpha1's
# shape (spec.image only exists there).
read_once() {
	curl -sSf --max-time 20 "$PROXY/apis/trainyard.dev/v1alpha1/namespaces/$RNS/runs" |
	    jq -e '[.items[].spec.image] == ["busybox", "busybox"]' >/dev/null
}

# reader: read_once five times a second until $BATS_FILE_TMPDIR/stop
# exists, a line "ok" or "FAIL" for each read in $BATS_FILE_TMPDIR/reads,
# and the errors in reads.err.
reader() {
	local out="$BATS_FILE_TMPDIR/reads"
	: >"$out"
	while [ ! -e "$BATS_FILE_TMPDIR/stop" ]; do
		if read_once 2>>"$out.err"; then
			echo ok
		else
			echo FAIL
		fi
		sleep 0.2
	done >>"$out"
}

# start_reader: kubectl proxy, then, once a read succeeds (the webhook and
# caBundle in place), the reader in the background.
start_reader() {
	local i port=
	kubectl proxy --port=0 >"$BATS_FILE_TMPDIR/proxy.log" 2>&1 3>&- &
	PROXY_PID=$!
	for i in $(seq 200); do
		port="$(sed -n 's/^Starting to serve on 127\.0\.0\.1:\([0-9]*\)$/\1/p' \
		    "$BATS_FILE_TMPDIR/proxy.log")"
		[ -n "$port" ] && break
		sleep 0.05
	done
	if [ -z "$port" ]; then
		cat "$BATS_FILE_TMPDIR/proxy.log" >&2
		return 1
	fi
	PROXY="http://127.0.0.1:$port"
	for i in $(seq 300); do
		read_once 2>/dev/null && break
		sleep 0.1
	done
	if ! read_once; then
		curl -sS "$PROXY/apis/trainyard.dev/v1alpha1/namespaces/$RNS/runs" >&2
		return 1
	fi
	rm -f "$BATS_FILE_TMPDIR/stop" "$BATS_FILE_TMPDIR/reads.err"
	reader 3>&- &
	READER=$!
}

# stop_reader WHAT MIN: stops it; every read succeeded, at least MIN ran;
# reports how many.
stop_reader() {
	local n fails
	touch "$BATS_FILE_TMPDIR/stop"
	wait "$READER"
	kill "$PROXY_PID" 2>/dev/null || true
	wait "$PROXY_PID" 2>/dev/null || true
	n="$(wc -l <"$BATS_FILE_TMPDIR/reads")"
	fails="$(grep -c FAIL "$BATS_FILE_TMPDIR/reads")" || true
	echo "# $1: $n reads, $fails failed" >&3
	if [ "$fails" -ne 0 ]; then
		head -20 "$BATS_FILE_TMPDIR/reads.err" >&2
		return 1
	fi
	[ "$n" -ge "$2" ]
}

# wait_reads N: until the reader made N reads (60 s at most).
wait_reads() {
	local i
	for i in $(seq 600); do
		[ "$(wc -l <"$BATS_FILE_TMPDIR/reads")" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "the reader made $(wc -l <"$BATS_FILE_TMPDIR/reads") reads, not $1" >&2
	return 1
}

# count NAME ERE: lines of controller NAME's log matching ERE.
count() {
	grep -cE "$2" "$DC_DIR/ctl-$1.log" || true
}

# wait_count NAME ERE N [SECONDS]: until count NAME ERE >= N.
wait_count() {
	local i
	for i in $(seq $((${4:-120} * 10))); do
		[ "$(count "$1" "$2")" -ge "$3" ] && return 0
		ctl_proc_alive "$1" || break
		sleep 0.1
	done
	echo "controller $1 logged /$2/ $(count "$1" "$2") times, not $3:" >&2
	tail -30 "$DC_DIR/ctl-$1.log" >&2
	return 1
}

# ca_certs: how many CAs the Secret's ca.crt (the caBundle) holds.
ca_certs() {
	kubectl -n trainyard-system get secret trainyard-webhook-certs \
	    -o jsonpath='{.data.ca\.crt}' | base64 -d | grep -c 'BEGIN CERTIFICATE'
}

# rotation_setup: the CRDs of UPGRADE_CRDS, the Service, two Runs stored
# at v1beta1 in $RNS; no other controller writing the caBundle.
rotation_setup() {
	local r
	if ctl_proc_alive a; then
		ctl_proc_term a || return 1
	fi
	kubectl apply -f "$DC_REPO/manifests/service.yaml" >/dev/null &&
	kubectl apply -k "$UPGRADE_CRDS" >/dev/null &&
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev >/dev/null &&
	kubectl create namespace "$RNS" --dry-run=client -o yaml |
	    kubectl apply -f - >/dev/null || return 1
	for r in r1 r2; do
		printf '%s\n' 'apiVersion: trainyard.dev/v1beta1' 'kind: Run' \
		    "metadata: {name: $r}" \
		    'spec: {nodes: 1, profile: cpu-small, container: {image: busybox}}' |
		    kubectl apply -n "$RNS" -f - >/dev/null || return 1
	done
}

@test "self-managed certificates: the leaf renews and the CA rotates, not one read fails" {
	rotation_setup
	# A CA of its own, made with the short lifetime.
	kubectl -n trainyard-system delete secret trainyard-webhook-certs --ignore-not-found \
	    >/dev/null
	# The CA lives 30 s, the serving certificate 15 s: the leaf renews
	# about every 10 s, the CA after about 20 s, the old one stays in the
	# bundle until it expires at 30 s.
	POD_NAMESPACE=trainyard-system ctl_proc_launch r --kubeconfig "$DC_DIR/sa.kubeconfig" \
	    --webhook-cert-mode=self --webhook-cert-lifetime-for-testing=30s
	ctl_proc_wait r 'conversion webhook on port'
	endpoints r
	ctl_proc_wait r 'msg=started'
	grep -q 'for tests only' "$DC_DIR/ctl-r.log"
	kubectl wait --for=jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}' \
	    --timeout=30s crd/runs.trainyard.dev >/dev/null
	start_reader
	# A leaf renewed from the first CA, then the CA rotated: both CAs in
	# the bundle, and the leaf signed by the old one still served.
	wait_count r 'new serving certificate' 2
	wait_count r ': new CA' 2
	[ "$(ca_certs)" -eq 2 ]
	# The next leaf comes from the new CA; the old CA expires and leaves.
	wait_count r 'new serving certificate' 4
	for i in $(seq 300); do
		[ "$(ca_certs)" -eq 1 ] && break
		sleep 0.1
	done
	[ "$(ca_certs)" -eq 1 ]
	stop_reader "self-managed certificates" 24
	[ "$(count r 'caBundle updated')" -ge 3 ]
	ctl_proc_term r
}

@test "certificates from files: tls.crt and tls.key replaced, not one read fails" {
	local dir="$BATS_FILE_TMPDIR/certs" i serial
	rotation_setup
	mkdir -p "$dir/serving"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	    -subj /CN=files-ca -addext basicConstraints=critical,CA:TRUE \
	    -addext keyUsage=critical,keyCertSign -keyout "$dir/ca.key" -out "$dir/ca.crt" \
	    2>/dev/null
	# leaf N: a serving certificate with a key of its own, in $dir/N.{crt,key}.
	leaf() {
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		    -subj "/CN=$SVC" -addext "subjectAltName=DNS:$SVC" \
		    -keyout "$dir/$1.key" -out "$dir/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
		    -CAcreateserial -days 1 -copy_extensions copy -out "$dir/$1.crt" 2>/dev/null
	}
	leaf 0
	cp "$dir/0.crt" "$dir/serving/tls.crt"
	cp "$dir/0.key" "$dir/serving/tls.key"
	kubectl patch crd runs.trainyard.dev --type=merge -p "{\"spec\":{\"conversion\":
	    {\"webhook\":{\"clientConfig\":{\"caBundle\":\"$(base64 -w0 "$dir/ca.crt")\"}}}}}" \
	    >/dev/null
	ctl_proc_launch fl --webhook-cert-mode=files --webhook-cert-dir "$dir/serving"
	ctl_proc_wait fl 'conversion webhook on port'
	endpoints fl
	ctl_proc_wait fl 'msg=started'
	start_reader
	for i in 1 2 3; do
		leaf "$i"
		# Each file replaced whole (a rename), the key first: a reload
		# between the two keeps the certificate in use.
		cp "$dir/$i.key" "$dir/serving/.tls.key" && mv "$dir/serving/.tls.key" "$dir/serving/tls.key"
		cp "$dir/$i.crt" "$dir/serving/.tls.crt" && mv "$dir/serving/.tls.crt" "$dir/serving/tls.crt"
		wait_count fl 'serving the certificate of tls.crt' $((i + 1)) 20
		# Reads go on with the new certificate before the next one.
		wait_reads $((4 * i))
	done
	# The webhook serves the last one.
	serial="$(openssl x509 -noout -serial -in "$dir/3.crt")"
	[ "$(openssl s_client -connect "127.0.0.1:$(port_of fl 'conversion webhook')" \
	    -servername "$SVC" </dev/null 2>/dev/null | openssl x509 -noout -serial)" = "$serial" ]
	stop_reader "certificates from files" 12
	ctl_proc_term fl
}
