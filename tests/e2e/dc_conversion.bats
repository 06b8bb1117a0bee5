#!/usr/bin/env bats
#
# dc_conversion.bats: the real kubectl against a CRD whose conversion
# strategy is Webhook, on a trainyard-devcluster. The webhook
# (convwebhook.py) runs on the host and is reached as kube-apiserver with
# aggregator routing reaches it: through a selector-less Service whose
# Endpoints point at 127.0.0.1, TLS verified as conv.default.svc against
# the CRD's caBundle. It really converts (spec.color in v1, spec.colour in
# v2), so a conversion that did not happen shows as a pruned field.

load devcluster

setup_file() {
	dc_start --kubernetes-version 1.32
	export WH="$BATS_FILE_TMPDIR/wh"
	mkdir -p "$WH"
	webhook_tls "$WH" conv.default.svc
	wh_start
	kubectl apply -f - <<YAML
apiVersion: v1
kind: Service
metadata: {name: conv, namespace: default}
spec:
  ports: [{name: https, port: 443, targetPort: 9443}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: hooks.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: hooks, singular: hook, kind: Hook}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        service: {namespace: default, name: conv, path: /convert}
        caBundle: $(base64 -w0 <"$WH/ca.crt")
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {colour: {type: string}, size: {type: string}}}
YAML
	kubectl wait --for condition=established --timeout=20s crd/hooks.example.com
}

teardown_file() {
	wh_stop
	dc_stop
}

# Starts the webhook and points the Endpoints at its port.
wh_start() {
	rm -f "$WH/port"
	python3 "$BATS_TEST_DIRNAME/convwebhook.py" "$WH/tls.crt" "$WH/tls.key" "$WH/port" \
	    "$WH/mode" 3>&- &
	echo $! >"$WH/pid"
	local i
	for i in $(seq 100); do
		[ -s "$WH/port" ] && break
		sleep 0.05
	done
	[ -s "$WH/port" ]
	kubectl apply -f - <<YAML
apiVersion: v1
kind: Endpoints
metadata: {name: conv, namespace: default}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: https, port: $(cat "$WH/port")}]
YAML
}

wh_stop() {
	if [ -f "$WH/pid" ]; then
		kill "$(cat "$WH/pid")" 2>/dev/null || true
		wait "$(cat "$WH/pid")" 2>/dev/null || true
		rm -f "$WH/pid"
	fi
}

wh_mode() {
	echo "$1" >"$WH/mode"
}

# Server-side applies the Hook NAME at VERSION with SPEC (flow YAML) as
# MANAGER; more kubectl flags may follow.
hook_apply() {
	local manager="$1" version="$2" name="$3" spec="$4"

	shift 4
	kubectl apply --server-side --field-manager="$manager" "$@" -f - <<YAML
apiVersion: example.com/$version
kind: Hook
metadata: {name: $name}
spec: $spec
YAML
}

# Creates the Hook h (v1, spec.color red) a test deletes again.
hook_h() {
	kubectl apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Hook
metadata: {name: h}
spec: {color: red}
YAML
}

@test "an object stored at v1 is read at v2 through the webhook" {
	wh_mode convert
	kubectl apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Hook
metadata: {name: a, labels: {team: blue}}
spec: {color: red}
YAML
	run kubectl get hooks.v2.example.com a -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .apiVersion)" = example.com/v2 ]
	[ "$(echo "$output" | jq -r .spec.colour)" = red ]
	[ "$(echo "$output" | jq -r .spec.color)" = null ]
	[ "$(echo "$output" | jq -r .metadata.labels.team)" = blue ]
	uid="$(kubectl get hooks.v1.example.com a -o jsonpath='{.metadata.uid}')"
	[ "$(echo "$output" | jq -r .metadata.uid)" = "$uid" ]
}

@test "the webhook is called by its Service's name at the endpoint's address" {
	wh_mode convert
	hook_h
	rm -f "$WH/mode.host" "$WH/mode.sni"
	kubectl get hooks.v2.example.com h -o name
	[ "$(cat "$WH/mode.host")" = conv.default.svc:443 ]
	[ "$(cat "$WH/mode.sni")" = conv.default.svc ]
	kubectl delete hooks.v1.example.com h
}

@test "labels a webhook returns are validated" {
	wh_mode convert
	hook_h
	wh_mode bad-labels
	run kubectl get hooks.v2.example.com h
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook returned invalid metadata: metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters'
	wh_mode convert
	# The devcluster's fault injection breaks an answer the same way.
	kubectl create --raw /devcluster/faults -f - >/dev/null <<<'{"verb": "convert", "resource": "hooks.example.com", "webhook": "bad-labels", "count": 1}'
	run kubectl get hooks.v2.example.com h
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'returned invalid metadata: metadata.labels: Invalid value: "injected bad label": name part must consist of'
	kubectl delete --raw /devcluster/faults >/dev/null
	[ "$(kubectl get hooks.v2.example.com h -o jsonpath='{.spec.colour}')" = red ]
	kubectl delete hooks.v1.example.com h
}

@test "lists at v2 convert every item" {
	wh_mode convert
	kubectl apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Hook
metadata: {name: b}
spec: {color: green}
YAML
	run kubectl get hooks.v2.example.com -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '[.items[].spec.colour] | sort | join(",")')" = green,red ]
	[ "$(echo "$output" | jq -r '[.items[].apiVersion] | unique | join(",")')" = example.com/v2 ]
}

@test "writes at v2 are stored at v1 and answered at v2" {
	wh_mode convert
	run kubectl apply -o json -f - <<'YAML'
apiVersion: example.com/v2
kind: Hook
metadata: {name: c}
spec: {colour: blue}
YAML
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .spec.colour)" = blue ]
	[ "$(kubectl get hooks.v1.example.com c -o jsonpath='{.spec.color}')" = blue ]
	kubectl patch hooks.v2.example.com c --type merge -p '{"spec":{"colour":"teal"}}'
	[ "$(kubectl get hooks.v1.example.com c -o jsonpath='{.spec.color}')" = teal ]
	[ "$(kubectl get hooks.v2.example.com c -o jsonpath='{.spec.colour}')" = teal ]
}

@test "server-side apply at both versions" {
	wh_mode convert
	hook_apply alice v2 d '{colour: amber}'
	[ "$(kubectl get hooks.v1.example.com d -o jsonpath='{.spec.color}')" = amber ]
	hook_apply alice v1 d '{color: ochre}'
	[ "$(kubectl get hooks.v2.example.com d -o jsonpath='{.spec.colour}')" = ochre ]
}

@test "server-side apply owns fields across versions: conflicts, force, webhook down" {
	wh_mode convert
	hook_apply alice v1 s '{color: navy}'
	# bob at v2 changes what alice owns at v1: a conflict at alice's version.
	run hook_apply bob v2 s '{colour: pink}'
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'Apply failed with 1 conflict: conflict with "alice": .spec.color'
	[ "$(kubectl get hooks.v1.example.com s -o jsonpath='{.spec.color}')" = navy ]
	# Fields nobody owns are free.
	hook_apply bob v2 s '{colour: navy, size: L}'
	# The same value is no conflict; a new one is taken over with --force-conflicts.
	hook_apply bob v2 s '{colour: pink, size: L}' --force-conflicts
	[ "$(kubectl get hooks.v1.example.com s -o jsonpath='{.spec.color}')" = pink ]
	run kubectl get hooks.v2.example.com s -o json --show-managed-fields
	[ "$(echo "$output" | jq -c '[.metadata.managedFields[] | select(.manager == "alice")] | length')" = 0 ]
	[ "$(echo "$output" | jq -c '.metadata.managedFields[] | select(.manager == "bob") | [.apiVersion, (.fieldsV1["f:spec"] | keys)]')" = '["example.com/v2",["f:colour","f:size"]]' ]
	# And back: alice at v1 now conflicts with bob's v2 field.
	run hook_apply alice v1 s '{color: navy}'
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'Apply failed with 1 conflict: conflict with "bob": .spec.colour'
	# The webhook failing fails the apply with its message.
	wh_mode fail
	run hook_apply alice v1 s '{color: navy}' --force-conflicts
	wh_mode convert
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook failed: colour: not a colour'
	[ "$(kubectl get hooks.v1.example.com s -o jsonpath='{.spec.color}')" = pink ]
}

@test "server-side apply prunes at the version the manager applied at" {
	wh_mode convert
	hook_apply carol v1 p '{color: navy}'
	# carol at v2 no longer applies the colour she applied at v1: it goes (and the
	# size does not fit v1, the storage version).
	hook_apply carol v2 p '{size: M}'
	run kubectl get hooks.v2.example.com p -o json --show-managed-fields
	[ "$(echo "$output" | jq -r .spec.colour)" = null ]
	[ "$(echo "$output" | jq -c '.metadata.managedFields | length')" = 1 ]
	kubectl delete hooks.v1.example.com p
}

@test "other writes move ownership across versions; a failing webhook drops managedFields" {
	wh_mode convert
	hook_apply alice v1 u '{color: navy}'
	kubectl patch hooks.v2.example.com u --type merge -p '{"spec":{"colour":"teal"}}'
	run kubectl get hooks.v1.example.com u -o json --show-managed-fields
	[ "$(echo "$output" | jq -c '[.metadata.managedFields[].manager]')" = '["kubectl-patch"]' ]
	run hook_apply alice v1 u '{color: navy}'
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conflict with "kubectl-patch" using example.com/v2: .spec.colour'
	# A write at the storage version while the webhook fails: kube-apiserver's
	# UpdateNoErrors keeps the write and drops the entries it cannot compute.
	wh_mode fail
	kubectl label hooks.v1.example.com u tier=gold
	wh_mode convert
	run kubectl get hooks.v1.example.com u -o json --show-managed-fields
	[ "$(echo "$output" | jq -r .metadata.labels.tier)" = gold ]
	[ "$(echo "$output" | jq -c '.metadata.managedFields // [] | length')" = 0 ]
	kubectl delete hooks.v1.example.com u
}

@test "get -w at v2 converts every event" {
	wh_mode convert
	kubectl get hooks.v2.example.com -w -o json >"$WH/watch.out" 2>&1 &
	watcher=$!
	kubectl apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Hook
metadata: {name: w}
spec: {color: violet}
YAML
	for i in $(seq 100); do
		grep -q '"colour": "violet"' "$WH/watch.out" && break
		sleep 0.1
	done
	kill "$watcher"
	wait "$watcher" || true
	grep -q '"colour": "violet"' "$WH/watch.out"
	grep -q '"colour": "red"' "$WH/watch.out"
	# The raw stream: every event in v2.
	run timeout 3 kubectl get --raw '/apis/example.com/v2/namespaces/default/hooks?watch=true&resourceVersion=0'
	echo "$output" | grep -F '"apiVersion":"example.com/v2","kind":"Hook","metadata":{"annotations"' | grep -F '"spec":{"colour":"violet"}'
	! echo "$output" | grep -F '"spec":{"color"'
}

@test "a watch whose conversion fails gets an ERROR and ends" {
	wh_mode convert
	kubectl get hooks.v2.example.com -w --output-watch-events >"$WH/watch2.out" 2>&1 &
	watcher=$!
	wh_mode fail
	kubectl apply -f - <<'YAML'
apiVersion: example.com/v1
kind: Hook
metadata: {name: x}
spec: {color: black}
YAML
	# kubectl's watch ends on the ERROR (it may retry once with a new watch).
	for i in $(seq 100); do
		grep -q 'colour: not a colour' "$WH/watch2.out" && break
		sleep 0.1
	done
	kill "$watcher" 2>/dev/null || true
	wait "$watcher" || true
	wh_mode convert
	grep -q 'conversion webhook for example.com/v1, Kind=Hook failed: colour: not a colour' \
	    "$WH/watch2.out"
}

@test "a wrong answer is a 500 with kube-apiserver's message" {
	wh_mode bad-uid
	run kubectl get hooks.v2.example.com a
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook failed: expected response.uid='
	wh_mode rename
	run kubectl get hooks.v2.example.com a
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook returned invalid object: must have the same name: a != other'
	wh_mode drop
	run kubectl get hooks.v2.example.com a
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook returned 0 objects, expected 1'
	wh_mode fail
	run kubectl get hooks.v2.example.com a
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook failed: colour: not a colour'
	# A write that cannot be converted stores nothing.
	run kubectl create -f - <<'YAML'
apiVersion: example.com/v2
kind: Hook
metadata: {name: e}
spec: {colour: grey}
YAML
	[ "$status" -ne 0 ]
	wh_mode convert
	run kubectl get hooks.v1.example.com e
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'not found'
	[ "$(kubectl get hooks.v2.example.com a -o jsonpath='{.spec.colour}')" = red ]
}

@test "a slow webhook holds only the requests that need it" {
	wh_mode slow
	kubectl get hooks.v2.example.com a -o name >"$WH/slow.out" 2>&1 &
	slow=$!
	# Meanwhile the devcluster answers everyone else: the slow get is still waiting.
	kubectl get ns default -o name
	kubectl get hooks.v1.example.com a -o name
	kill -0 "$slow"
	[ ! -s "$WH/slow.out" ]
	wait "$slow"
	grep -x hook.example.com/a "$WH/slow.out"
	wh_mode convert
}

@test "the webhook killed: exact errors, then recovery with nothing lost" {
	wh_mode convert
	wh_stop
	run kubectl get hooks.v2.example.com a
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'conversion webhook for example.com/v1, Kind=Hook failed: Post "https://conv.default.svc:443/convert?timeout=30s": '
	# At the stored version nothing needs the webhook.
	[ "$(kubectl get hooks.v1.example.com a -o jsonpath='{.spec.color}')" = red ]
	kubectl delete endpoints conv
	run kubectl get hooks.v2.example.com a
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'failed: Post "https://conv.default.svc:443/convert?timeout=30s": endpoints "conv" not found'
	wh_start
	[ "$(kubectl get hooks.v2.example.com a -o jsonpath='{.spec.colour}')" = red ]
	[ "$(kubectl get hooks.v2.example.com c -o jsonpath='{.spec.colour}')" = teal ]
}

@test "storedVersions: a stored version cannot leave spec.versions until trimmed" {
	run kubectl get crd hooks.example.com -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1"]' ]
	run kubectl patch crd hooks.example.com --type json \
	    -p '[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]'
	[ "$status" -eq 0 ]
	run kubectl get crd hooks.example.com -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1","v2"]' ]
	run kubectl patch crd hooks.example.com --type json -p '[{"op":"remove","path":"/spec/versions/0"}]'
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions'
}

@test "server-side apply with a managedFields entry of a removed version fails as upstream" {
	# Strategy None: no webhook, both versions alike.
	schema='{openAPIV3Schema: {type: object, properties: {spec: {type: object,
	    properties: {color: {type: string}}}}}}'
	kubectl apply -f - <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: olds.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: olds, singular: old, kind: Old}
  versions:
  - {name: v1, served: true, storage: true, schema: $schema}
  - {name: v2, served: true, storage: false, schema: $schema}
YAML
	kubectl wait --for condition=established --timeout=20s crd/olds.example.com
	kubectl apply --server-side --field-manager=alice -f - <<'YAML'
apiVersion: example.com/v1
kind: Old
metadata: {name: o}
spec: {color: navy}
YAML
	# v2 becomes the storage version, the object is rewritten, v1 leaves.
	kubectl patch crd olds.example.com --type json -p '[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]'
	kubectl get olds.v2.example.com o -o json | kubectl replace -f -
	kubectl patch crd olds.example.com --subresource status --type merge -p '{"status":{"storedVersions":["v2"]}}'
	kubectl patch crd olds.example.com --type json -p '[{"op":"remove","path":"/spec/versions/0"}]'
	run kubectl apply --server-side --field-manager=bob -f - <<'YAML'
apiVersion: example.com/v2
kind: Old
metadata: {name: o}
spec: {color: red}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'request to convert CR to an invalid group/version: example.com/v1'
	# Stripping the entries of the removed version (what trainyard-controller migrate does) mends it.
	mf="$(kubectl get olds.v2.example.com o -o json --show-managed-fields |
	    jq -c '[.metadata.managedFields[] | select(.apiVersion != "example.com/v1")]')"
	kubectl patch olds.v2.example.com o --type json \
	    -p "[{\"op\":\"replace\",\"path\":\"/metadata/managedFields\",\"value\":$mf}]"
	kubectl apply --server-side --field-manager=bob --force-conflicts -f - <<'YAML'
apiVersion: example.com/v2
kind: Old
metadata: {name: o}
spec: {color: red}
YAML
	[ "$(kubectl get olds.v2.example.com o -o jsonpath='{.spec.color}')" = red ]
}
