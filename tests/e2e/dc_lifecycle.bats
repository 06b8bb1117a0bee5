#!/usr/bin/env bats
#
# dc_lifecycle.bats: object lifecycle with the real kubectl: garbage
# collection for each --cascade policy, finalizers, namespace deletion,
# and --data-dir persistence across restarts (kill -9 included).
#
# The devcluster reports Kubernetes 1.31 (JSON bodies); objects with
# ownerReferences are applied with --validate=false.

load devcluster

setup_file() {
	dc_start --kubernetes-version 1.31
}

teardown_file() {
	dc_stop
}

# owned NAME OWNER-NAME OWNER-UID [KIND] [BLOCK] [FINALIZER]: a dependent
# (a ConfigMap, or a Secret with KIND=Secret) of a ConfigMap.
owned() {
	local name="$1" owner="$2" uid="$3" kind="${4:-ConfigMap}" block="${5:-false}"
	local fin="${6:-}"
	kubectl apply --validate=false -f - <<EOF
apiVersion: v1
kind: $kind
metadata:
  name: $name
$([ -n "$fin" ] && printf '  finalizers: ["%s"]\n' "$fin")
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: $owner
    uid: "$uid"
    blockOwnerDeletion: $block
EOF
}

uid_of() {
	kubectl get "$@" -o jsonpath='{.metadata.uid}'
}

@test "background: dependents go after their owner" {
	kubectl create configmap bg-owner --from-literal=a=b
	uid="$(uid_of cm bg-owner)"
	owned bg-dep1 bg-owner "$uid"
	owned bg-dep2 bg-owner "$uid" Secret
	run kubectl delete cm bg-owner
	[ "$status" -eq 0 ]
	kubectl wait --for=delete cm/bg-dep1 secret/bg-dep2 --timeout=10s
}

@test "foreground: the owner waits with foregroundDeletion for blocking dependents" {
	kubectl create configmap fg-owner --from-literal=a=b
	uid="$(uid_of cm fg-owner)"
	owned fg-dep fg-owner "$uid" ConfigMap true example.com/hold
	owned fg-free fg-owner "$uid" Secret false
	kubectl delete cm fg-owner --cascade=foreground --wait=false
	run kubectl get cm fg-owner -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '.metadata.finalizers[0]')" = "foregroundDeletion" ]
	[ "$(echo "$output" | jq -r '.metadata.deletionTimestamp')" != "null" ]
	# The dependents are being deleted; the non-blocking one is gone already.
	kubectl wait --for=delete secret/fg-free --timeout=10s
	run kubectl get cm fg-dep -o jsonpath='{.metadata.deletionTimestamp}'
	[ -n "$output" ]
	run kubectl get cm fg-owner
	[ "$status" -eq 0 ]
	# Once the blocking dependent's own finalizer goes, both go.
	kubectl patch cm fg-dep --type=merge -p '{"metadata":{"finalizers":null}}'
	kubectl wait --for=delete cm/fg-dep cm/fg-owner --timeout=10s
}

@test "foreground: kubectl delete waits until the dependents are gone" {
	kubectl create configmap fw-owner --from-literal=a=b
	uid="$(uid_of cm fw-owner)"
	owned fw-dep fw-owner "$uid" ConfigMap true
	uid2="$(uid_of cm fw-dep)"
	kubectl apply --validate=false -f - <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: fw-grandchild
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: fw-dep, uid: "$uid2", blockOwnerDeletion: true}
EOF
	run kubectl delete cm fw-owner --cascade=foreground --timeout=15s
	[ "$status" -eq 0 ]
	[ "$output" = 'configmap "fw-owner" deleted' ]
	run kubectl get cm/fw-dep secret/fw-grandchild --ignore-not-found -o name
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "orphan: dependents stay, without the owner reference" {
	kubectl create configmap or-owner --from-literal=a=b
	uid="$(uid_of cm or-owner)"
	owned or-dep or-owner "$uid"
	run kubectl delete cm or-owner --cascade=orphan
	[ "$status" -eq 0 ]
	run kubectl get cm or-owner
	[ "$status" -ne 0 ]
	run kubectl get cm or-dep -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '.metadata.ownerReferences')" = "null" ]
	kubectl delete cm or-dep
}

@test "a dependent of an owner that never existed is collected" {
	owned ghost-dep ghost 6a0b2c4e-0000-4000-8000-000000000001
	kubectl wait --for=delete cm/ghost-dep --timeout=10s
}

@test "two controller references are refused" {
	run kubectl apply --validate=false -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: two-controllers
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: a, uid: "1", controller: true}
  - {apiVersion: v1, kind: ConfigMap, name: b, uid: "2", controller: true}
EOF
	[ "$status" -ne 0 ]
	[[ "$output" == *'Only one reference can have Controller set to true'* ]]
}

@test "finalizers hold a deletion until they are patched away" {
	kubectl apply --validate=false -f - <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: ["example.com/hold"]
EOF
	kubectl delete cm held --wait=false
	run kubectl get cm held -o jsonpath='{.metadata.deletionTimestamp}'
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	run kubectl patch cm held --type=merge -p '{"metadata":{"finalizers":["example.com/new"]}}'
	[ "$status" -ne 0 ]
	[[ "$output" == *'no new finalizers can be added if the object is being deleted'* ]]
	kubectl patch cm held --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
	kubectl wait --for=delete cm/held --timeout=10s
}

@test "namespace deletion removes everything, custom resources included" {
	kubectl create namespace doomed
	kubectl create configmap c1 -n doomed --from-literal=a=b
	kubectl create secret generic s1 -n doomed --from-literal=a=b
	kubectl apply --validate=false -n doomed -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: p1
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: ["example.com/hold"]
EOF
	crd=0
	if kubectl apply --validate=false -f - <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
	then
		kubectl wait --for condition=established crd/gadgets.example.com --timeout=10s
		kubectl apply --validate=false -n doomed -f - <<EOF
apiVersion: example.com/v1
kind: Gadget
metadata:
  name: g1
spec: {size: 1}
EOF
		crd=1
	fi
	kubectl delete namespace doomed --wait=false
	kubectl wait --for=delete -n doomed cm/c1 secret/s1 pod/p1 --timeout=10s
	if [ "$crd" -eq 1 ]; then
		kubectl wait --for=delete -n doomed gadget/g1 --timeout=10s
	fi
	run kubectl get ns doomed -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .status.phase)" = "Terminating" ]
	cond() {
		echo "$output" | jq -r --arg t "$1" '.status.conditions[] | select(.type == $t) |
		    .status + " " + .reason + " " + .message'
	}
	want="True SomeResourcesRemain Some resources are remaining:"
	[ "$(cond NamespaceContentRemaining)" = "$want configmaps. has 1 resource instances" ]
	want="True SomeFinalizerRemain Some finalizers are remaining: example.com/hold"
	[ "$(cond NamespaceFinalizersRemaining)" = "$want in 1 resource instances" ]
	want="False ResourcesDiscovered All resources successfully discovered"
	[ "$(cond NamespaceDeletionDiscoveryFailure)" = "$want" ]
	want="False ContentDeleted All content successfully deleted, may be waiting on finalization"
	[ "$(cond NamespaceDeletionContentFailure)" = "$want" ]
	run kubectl create configmap late -n doomed
	[ "$status" -ne 0 ]
	want='unable to create new content in namespace doomed because it is being terminated'
	[[ "$output" == *"$want"* ]]
	kubectl patch cm held -n doomed --type=merge -p '{"metadata":{"finalizers":null}}'
	kubectl wait --for=delete ns/doomed --timeout=15s
	if [ "$crd" -eq 1 ]; then
		kubectl delete crd gadgets.example.com --timeout=15s
	fi
}

@test "default, kube-system and kube-public may not be deleted" {
	for ns in default kube-system kube-public; do
		run kubectl delete ns "$ns"
		[ "$status" -ne 0 ]
		want="namespaces \"$ns\" is forbidden: this namespace may not be deleted"
		[[ "$output" == *"$want"* ]]
	done
}

# restart DIR SIGNAL: stops the extra devcluster in DIR with SIGNAL and
# starts it again on the same data dir.
restart() {
	local dir="$1" sig="$2" pid i
	pid="$(cat "$dir/pid")"
	kill "-$sig" "$pid"
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$dir/log"; then
		cat "$dir/log" >&2
		return 1
	fi
	rm -f "$dir/kubeconfig"
	_dc_launch "$dir" --kubernetes-version 1.31
}

@test "--data-dir: objects and resourceVersions survive a restart and kill -9" {
	dc_start_extra P --kubernetes-version 1.31
	kubectl_at "$P" create namespace keep
	kubectl_at "$P" create configmap a -n keep --from-literal=k=v
	kubectl_at "$P" create secret generic s -n keep --from-literal=p=w
	rv_a="$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.metadata.resourceVersion}')"
	rv_s="$(kubectl_at "$P" get secret s -n keep -o jsonpath='{.metadata.resourceVersion}')"
	uid_a="$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.metadata.uid}')"
	kubectl_at "$P" create configmap gone -n keep
	kubectl_at "$P" delete configmap gone -n keep
	last="$(kubectl_at "$P" get --raw /api/v1/namespaces/keep/configmaps |
	    jq -r .metadata.resourceVersion)"

	restart "$P" TERM
	rv="$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.metadata.resourceVersion}')"
	[ "$rv" = "$rv_a" ]
	[ "$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.metadata.uid}')" = "$uid_a" ]
	[ "$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.data.k}')" = "v" ]
	rv="$(kubectl_at "$P" get secret s -n keep -o jsonpath='{.metadata.resourceVersion}')"
	[ "$rv" = "$rv_s" ]
	run kubectl_at "$P" get cm gone -n keep
	[ "$status" -ne 0 ]
	# A new write continues the counter.
	kubectl_at "$P" label cm a -n keep x=1
	rv_new="$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.metadata.resourceVersion}')"
	[ "$last" -gt "$rv_s" ]
	[ "$rv_new" -gt "$last" ]
	# Watch history is not kept: a watch from before the restart is told to relist.
	run kubectl_at "$P" get --raw \
	    "/api/v1/namespaces/keep/configmaps?watch=1&resourceVersion=$rv_a&timeoutSeconds=1"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | head -n1 | jq -r .type)" = "ERROR" ]
	[ "$(echo "$output" | head -n1 | jq -r .object.code)" = "410" ]

	# Acknowledged means durable: kill -9 right after the reply.
	kubectl_at "$P" create configmap fresh -n keep --from-literal=k=after
	restart "$P" KILL
	[ "$(kubectl_at "$P" get cm fresh -n keep -o jsonpath='{.data.k}')" = "after" ]
	[ "$(kubectl_at "$P" get cm a -n keep -o jsonpath='{.metadata.labels.x}')" = "1" ]
	dc_stop_extra "$P"
}

@test "--data-dir: a corrupt database stops the start" {
	dir="$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/devcluster.XXXXXX")"
	mkdir -p "$dir/data"
	head -c 8192 /dev/urandom >"$dir/data/state.db"
	run "$DC_BIN" --listen 127.0.0.1:0 --data-dir "$dir/data" --kubeconfig "$dir/kubeconfig"
	[ "$status" -ne 0 ]
	[[ "$output" == *"state.db"* ]]
	[[ "$output" == *"not a database"* ]]
	[ ! -e "$dir/kubeconfig" ]
	rm -rf "$dir"
}
