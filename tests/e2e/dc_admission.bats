#!/usr/bin/env bats
#
# dc_admission.bats: the real kubectl against a trainyard-devcluster with
# MutatingWebhookConfigurations and ValidatingWebhookConfigurations. The
# webhook (admwebhook.py) runs on the host and is reached through a
# selector-less Service whose Endpoints point at 127.0.0.1, TLS verified
# as adm.default.svc against the configurations' caBundle. Its webhooks
# act only in the namespace adm (labelled adm=on), each on the ConfigMaps
# its objectSelector picks, so the tests do not meet.

load devcluster

setup_file() {
	dc_start --kubernetes-version 1.32
	export WH="$BATS_FILE_TMPDIR/wh"
	mkdir -p "$WH/seen"
	webhook_tls "$WH" adm.default.svc
	rm -f "$WH/port"
	python3 "$BATS_TEST_DIRNAME/admwebhook.py" "$WH/tls.crt" "$WH/tls.key" "$WH/port" \
	    "$WH/seen" 3>&- &
	echo $! >"$WH/pid"
	local i
	for i in $(seq 100); do
		[ -s "$WH/port" ] && break
		sleep 0.05
	done
	[ -s "$WH/port" ]
	local ca
	ca="$(base64 -w0 <"$WH/ca.crt")"
	kubectl apply -f - <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: adm, labels: {adm: "on"}}
---
apiVersion: v1
kind: Service
metadata: {name: adm, namespace: default}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: adm, namespace: default}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: https, port: $(cat "$WH/port")}]
---
apiVersion: v1
kind: Service
metadata: {name: down, namespace: default}
spec:
  ports: [{name: https, port: 443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: down, namespace: default}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: https, port: 1}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: attribution}
webhooks:
- name: mutate.example.com
  clientConfig:
    service: {namespace: default, name: adm, path: /mutate}
    caBundle: $ca
  rules:
  - {operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector: {matchLabels: {adm: "on"}}
  objectSelector: {matchLabels: {test: mutate}}
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: policy}
webhooks:
- name: validate.example.com
  clientConfig:
    service: {namespace: default, name: adm, path: /validate}
    caBundle: $ca
  rules:
  - {operations: ["*"], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector: {matchLabels: {adm: "on"}}
  objectSelector: {matchLabels: {test: validate}}
  sideEffects: None
  admissionReviewVersions: [v1]
- name: slow.example.com
  clientConfig:
    service: {namespace: default, name: adm, path: /slow}
    caBundle: $ca
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  objectSelector: {matchLabels: {test: slow}}
  timeoutSeconds: 1
  sideEffects: None
  admissionReviewVersions: [v1]
- name: down-fail.example.com
  clientConfig:
    service: {namespace: default, name: down, path: /x}
    caBundle: $ca
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  objectSelector: {matchLabels: {test: down-fail}}
  sideEffects: None
  admissionReviewVersions: [v1]
- name: down-ignore.example.com
  clientConfig:
    service: {namespace: default, name: down, path: /x}
    caBundle: $ca
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  objectSelector: {matchLabels: {test: down-ignore}}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
YAML
}

teardown_file() {
	if [ -f "$WH/pid" ]; then
		kill "$(cat "$WH/pid")" 2>/dev/null || true
		wait "$(cat "$WH/pid")" 2>/dev/null || true
	fi
	dc_stop
}

@test "the configurations are served with upstream's defaults" {
	run kubectl get validatingwebhookconfiguration policy -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '.webhooks[0].failurePolicy')" = Fail ]
	[ "$(echo "$output" | jq -r '.webhooks[0].matchPolicy')" = Equivalent ]
	[ "$(echo "$output" | jq -r '.webhooks[0].timeoutSeconds')" = 10 ]
	[ "$(echo "$output" | jq -r '.webhooks[0].rules[0].scope')" = '*' ]
	run kubectl create -f - <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad.example.com
  clientConfig: {url: "https://bad.example.com/"}
  admissionReviewVersions: [v1]
  timeoutSeconds: 40
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun'
	echo "$output" | grep -F 'webhooks[0].timeoutSeconds: Invalid value: 40: the timeout value must be between 1 and 30 seconds'
}

@test "a mutating webhook records the impersonated user and its warning reaches kubectl" {
	run kubectl --as bob --as-group system:masters -n adm create -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: m1, labels: {test: mutate}, annotations: {example.com/by: forged}}
data: {k: v}
YAML
	[ "$status" -eq 0 ]
	echo "$output" | grep -F 'Warning: mutated by the test webhook'
	[ "$(kubectl -n adm get cm m1 -o jsonpath='{.metadata.annotations.example\.com/by}')" = bob ]
	[ "$(jq -r .request.userInfo.username "$WH/seen/mutate.json")" = bob ]
	jq -e '.request.userInfo.groups | index("system:masters")' "$WH/seen/mutate.json"
	[ "$(jq -r .request.operation "$WH/seen/mutate.json")" = CREATE ]
	[ "$(jq -r .request.namespace "$WH/seen/mutate.json")" = adm ]
	[ "$(jq -r .request.resource.resource "$WH/seen/mutate.json")" = configmaps ]
	# kubectl apply and patch are updates, mutated the same way.
	kubectl --as carol --as-group system:masters -n adm patch cm m1 --type merge \
	    -p '{"data":{"k":"w"}}'
	[ "$(kubectl -n adm get cm m1 -o jsonpath='{.metadata.annotations.example\.com/by}')" = carol ]
	[ "$(jq -r .request.operation "$WH/seen/mutate.json")" = UPDATE ]
	[ "$(jq -r .request.oldObject.data.k "$WH/seen/mutate.json")" = v ]
}

@test "a validating webhook denies with its message, on create, apply and delete" {
	run kubectl -n adm create -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: v1, labels: {test: validate}}
data: {deny: "1"}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'admission webhook "validate.example.com" denied the request: deny is not allowed'
	run kubectl -n adm get cm v1
	[ "$status" -ne 0 ]
	kubectl -n adm apply -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: v2, labels: {test: validate}}
data: {keep: "1"}
YAML
	run kubectl -n adm apply --server-side -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: v2, labels: {test: validate}}
data: {keep: "1", deny: "1"}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'denied the request: deny is not allowed'
	run kubectl -n adm delete cm v2
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'admission webhook "validate.example.com" denied the request without explanation'
	[ "$(jq -r .request.operation "$WH/seen/validate.json")" = DELETE ]
	[ "$(jq -r .request.object "$WH/seen/validate.json")" = null ]
	# Outside the selected namespace the webhook is not called.
	kubectl -n default create configmap v3 --from-literal=deny=1
	kubectl -n default label configmap v3 test=validate
}

@test "a webhook slower than its timeoutSeconds fails the request" {
	run kubectl -n adm create -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: s1, labels: {test: slow}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "https://adm.default.svc:443/slow?timeout=1s": context deadline exceeded'
	# Other requests were served meanwhile: the devcluster answers at once.
	kubectl get --raw /readyz
}

@test "an unreachable webhook fails closed with Fail and is skipped with Ignore" {
	run kubectl -n adm create -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: d1, labels: {test: down-fail}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'Internal error occurred: failed calling webhook "down-fail.example.com": failed to call webhook: Post "https://down.default.svc:443/x?timeout=10s": '
	kubectl -n adm create -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: d2, labels: {test: down-ignore}}
YAML
	kubectl -n adm get cm d2
}

@test "a dry run reaches the webhooks as one" {
	run kubectl -n adm create --dry-run=server -f - <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: dry, labels: {test: validate}}
data: {deny: "1"}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'deny is not allowed'
	[ "$(jq -r .request.dryRun "$WH/seen/validate.json")" = true ]
	[ "$(jq -r '.request.options.dryRun[0]' "$WH/seen/validate.json")" = All ]
}
