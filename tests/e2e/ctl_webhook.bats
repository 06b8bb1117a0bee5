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
#   and answers 401 to a scrape without a token.

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
