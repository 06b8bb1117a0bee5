#!/usr/bin/env bats
#
# ctl_names.bats: the names a Run takes (its name for the Service,
# NetworkPolicy and PodGroup, <run>-<i> for pods) with the real kubectl.
# Someone else's object of such a name fails the session at once with
# reason NameConflict, a message naming the object and its owner and a
# Warning Event, and is left untouched; an earlier Run's of the same name,
# still being deleted, is waited for.

load devcluster
load controller

setup_file() {
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

# run_web [NAME]: a Run of two nodes that runs for a while.
run_web() {
	ctl_apply <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: ${1:-web}}
spec:
  nodes: 2
  profile: gpu-2
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "30"}
EOF
}

# fingerprint KIND/NAME: uid, resourceVersion, deletionTimestamp and owners.
fingerprint() {
	kubectl get "$1" -n "$NS" -o json |
	    jq -c '[.metadata.uid, .metadata.resourceVersion,
	        .metadata.deletionTimestamp, .metadata.ownerReferences]'
}

# conflicted NAME MESSAGE: the session failed with NameConflict and MESSAGE.
conflicted() {
	wait_phase "$1" Failed
	[ "$(rn "$1" '{.status.reason}')" = NameConflict ]
	[ "$(rn "$1" '{.status.message}')" = "$2" ]
	[ "$(rn "$1" '{.status.conditions[?(@.type=="Finished")].reason}')" = NameConflict ]
	run kubectl get events -n "$NS" -o json \
	    --field-selector "involvedObject.kind=Run,involvedObject.name=$1,reason=NameConflict"
	[ "$(jq -r '.items[0].type' <<<"$output")" = Warning ]
	[ "$(jq -r '.items[0].message' <<<"$output")" = "session 1 failed: $2" ]
	wait_cleaned "$1"
	[ "$(owned "$1")" = 0 ]
}

@test "a Service of the name owned by a Deployment: NameConflict, the Service untouched" {
	kubectl create deployment web -n "$NS" --image=busybox --replicas=0 >/dev/null
	uid="$(kubectl get deployment web -n "$NS" -o jsonpath='{.metadata.uid}')"
	kubectl apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: web
  ownerReferences:
  - {apiVersion: apps/v1, kind: Deployment, name: web, uid: "$uid", controller: true}
spec:
  ports: [{port: 80}]
EOF
	before="$(fingerprint service/web)"
	run_web
	conflicted web "service $NS/web exists and is not owned by this Run (owner: Deployment web)"
	[ "$(fingerprint service/web)" = "$before" ]
	grep -F "service $NS/web exists and is not owned by this Run" "$DC_DIR/controller.log"
}

@test "a NetworkPolicy of the name without an owner: NameConflict, the policy untouched" {
	kubectl apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec:
  podSelector: {}
EOF
	before="$(fingerprint networkpolicy/web)"
	run_web
	conflicted web "networkpolicy $NS/web exists and is not owned by this Run"
	[ "$(fingerprint networkpolicy/web)" = "$before" ]
}

@test "someone else's pod at index 1: NameConflict, that pod untouched, ours deleted" {
	kubectl run web-1 -n "$NS" --image=busybox --restart=Never >/dev/null
	before="$(fingerprint pod/web-1)"
	run_web
	conflicted web "pod $NS/web-1 exists and is not owned by this Run"
	[ "$(fingerprint pod/web-1)" = "$before" ]
	run kubectl get pod web-0 -n "$NS"
	[ "$status" -ne 0 ]
	# Failed for good: no restart, no new session meets it again.
	[ "$(rn web '{.status.session}')" = 1 ]
}

@test "a Run deleted and created again at once waits for the old one's objects, then starts" {
	run_web
	wait_phase web Running
	old="$(rn web '{.metadata.uid}')"
	# Keep the old session's Service terminating for a while.
	kubectl patch service web -n "$NS" --type=merge \
	    -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
	kubectl delete rn web -n "$NS" --wait=false >/dev/null
	kubectl wait -n "$NS" --for=delete rn/web --timeout="$CTL_WAIT" >/dev/null
	run_web
	[ "$(rn web '{.metadata.uid}')" != "$old" ]
	wait_rn web '{.status.reason}' WaitingForName
	[ "$(rn web '{.status.phase}')" = Pending ]
	[ "$(rn web '{.status.conditions[?(@.type=="Scheduled")].reason}')" = WaitingForName ]
	rn web '{.status.conditions[?(@.type=="Scheduled")].message}' |
	    grep -F "service $NS/web" | grep -F "of an earlier Run named web to be deleted"
	[ -z "$(rn web '{.status.session}')" ]
	kubectl patch service web -n "$NS" --type=merge -p '{"metadata":{"finalizers":null}}' \
	    >/dev/null
	wait_phase web Running
	[ "$(rn web '{.status.session}')" = 1 ]
	[ -z "$(events web NameConflict)" ]
	# The new Service is the new Run's.
	[ "$(kubectl get service web -n "$NS" -o jsonpath='{.metadata.ownerReferences[0].uid}')" = \
	    "$(rn web '{.metadata.uid}')" ]
}

@test "a session a conflict ends before the cache shows its Service is still cleaned up" {
	kubectl apply -n "$NS" -f - >/dev/null <<'EOF2'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web}
spec:
  podSelector: {}
EOF2
	# The controller's Service watch starts again a minute late: the Service
	# it creates is deleted before its cache could show it.
	kubectl create --raw /devcluster/faults -f - >/dev/null \
	    <<<'{"verb":"watch","resource":"services","latencyMs":60000,"count":1}'
	kubectl create --raw /devcluster/faults/drop-watches -f - <<<'{}' >/dev/null
	run_web
	conflicted web "networkpolicy $NS/web exists and is not owned by this Run"
	run kubectl get service web -n "$NS"
	[ "$status" -ne 0 ]
	kubectl delete --raw /devcluster/faults >/dev/null
	# A controller that watches Services from the start, for any test after this.
	ctl_stop
	ctl_restart
}
