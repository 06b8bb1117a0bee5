#!/usr/bin/env bats
# Nodes (devcluster/nodes.c) driven by the real kubectl: the simulated
# kubelet's registration and Lease, the node lifecycle controller's
# Unknown/NotReady taints, taint eviction, cordon, pod GC of pods on a
# deleted node, and DefaultTolerationSeconds. Short grace and monitor
# periods keep it fast.

load devcluster

setup_file() {
	dc_start --nodes "$DC_REPO/tests/fixtures/devcluster/nodes-small.yaml" \
	    --node-monitor-grace-period 2s --node-monitor-period 200ms \
	    --default-unreachable-toleration-seconds 1
}

teardown_file() {
	dc_stop
}

# eventually SECONDS CMD...: retries CMD every 0.1 s until it succeeds.
eventually() {
	local secs="$1" i
	shift
	for i in $(seq $((secs * 10))); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "never true: $*" >&2
	"$@"
}

taints_of() {
	kubectl get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect}{" "}{end}'
}

no_taints() {
	[ -z "$(taints_of "$1")" ]
}

lease_renewed() {
	[ "$(kubectl get lease -n kube-node-lease "$1" -o jsonpath='{.spec.renewTime}')" != "$2" ]
}

# pod_on NAME NODE: a pod the scheduler binds to NODE.
pod_on() {
	kubectl apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  nodeSelector:
    kubernetes.io/hostname: $2
  containers:
  - name: main
    image: busybox
YAML
	kubectl wait --for=jsonpath='{.spec.nodeName}'="$2" "pod/$1" --timeout=10s
}

@test "nodes register Ready with addresses, pod CIDRs and a Lease" {
	kubectl wait --for=condition=Ready node --all --timeout=10s
	run kubectl get node small-1 -o json
	[ "$status" -eq 0 ]
	[[ "$(echo "$output" | jq -r '.status.addresses[] | select(.type == "InternalIP")
	    | .address')" == 10.0.0.* ]]
	[ "$(echo "$output" | jq -r '.status.addresses[] | select(.type == "Hostname")
	    | .address')" = "small-1" ]
	[[ "$(echo "$output" | jq -r .spec.podCIDR)" =~ ^10\.244\.[0-9]+\.0/24$ ]]
	[ "$(echo "$output" | jq -r '.spec.podCIDRs[0]')" = \
	    "$(echo "$output" | jq -r .spec.podCIDR)" ]
	[[ "$(echo "$output" | jq -r .status.nodeInfo.kubeletVersion)" == v1.* ]]
	[[ "$(echo "$output" | jq -r .status.nodeInfo.containerRuntimeVersion)" == \
	    containerd://* ]]
	[ "$(echo "$output" | jq -r '.status.conditions[] | select(.type == "Ready")
	    | .reason')" = "KubeletReady" ]
	[ "$(echo "$output" | jq -r '.status.allocatable.pods')" = "20" ]
	[ "$(echo "$output" | jq -r '.metadata.labels["kubernetes.io/os"]')" = "linux" ]
	# Distinct pod CIDRs.
	run kubectl get nodes -o jsonpath='{range .items[*]}{.spec.podCIDR}{"\n"}{end}'
	[ "$(echo "$output" | sort -u | wc -l)" -eq 3 ]
	run kubectl get lease -n kube-node-lease
	[ "$status" -eq 0 ]
	[[ "$output" == *"small-1   small-1"* ]]
	[ "$(kubectl get lease -n kube-node-lease small-2 \
	    -o jsonpath='{.spec.leaseDurationSeconds}')" = "40" ]
	[ "$(kubectl get lease -n kube-node-lease small-2 \
	    -o jsonpath='{.metadata.ownerReferences[0].kind}')" = "Node" ]
	renew="$(kubectl get lease -n kube-node-lease small-2 -o jsonpath='{.spec.renewTime}')"
	eventually 5 lease_renewed small-2 "$renew"
	run kubectl describe node small-3
	[[ "$output" == *"HolderIdentity:  small-3"* ]]
}

@test "a new pod gets the DefaultTolerationSeconds tolerations" {
	kubectl run tol --image=busybox --restart=Never --dry-run=server -o json >"$BATS_TEST_TMPDIR/p"
	run jq -r '.spec.tolerations[] | select(.key == "node.kubernetes.io/not-ready")
	    | "\(.operator) \(.effect) \(.tolerationSeconds)"' "$BATS_TEST_TMPDIR/p"
	[ "$output" = "Exists NoExecute 300" ]
	run jq -r '.spec.tolerations[] | select(.key == "node.kubernetes.io/unreachable")
	    | "\(.operator) \(.effect) \(.tolerationSeconds)"' "$BATS_TEST_TMPDIR/p"
	[ "$output" = "Exists NoExecute 1" ]
}

@test "a stopped kubelet: Unknown, unreachable taints, its pods evicted" {
	pod_on victim small-1
	kubectl get pod victim -w --output-watch-events -o json \
	    >"$BATS_TEST_TMPDIR/watch" 2>&1 &
	watcher=$!
	kubectl annotate node small-1 devcluster.trainyard.dev/kubelet=stopped
	kubectl wait --for=condition=Ready=Unknown node/small-1 --timeout=10s
	run kubectl get node small-1 -o json
	[ "$(echo "$output" | jq -r '.status.conditions[] | select(.type == "Ready")
	    | .reason')" = "NodeStatusUnknown" ]
	[ "$(echo "$output" | jq -r '.status.conditions[] | select(.type == "Ready")
	    | .message')" = "Kubelet stopped posting node status." ]
	eventually 5 bash -c "[[ \"\$(kubectl get node small-1 -o jsonpath='{.spec.taints}')\" \
	    == *NoExecute* ]]"
	run taints_of small-1
	[[ "$output" == *"node.kubernetes.io/unreachable:NoSchedule"* ]]
	[[ "$output" == *"node.kubernetes.io/unreachable:NoExecute"* ]]
	run kubectl get nodes small-1 --no-headers
	[[ "$output" == *NotReady* ]]
	# tolerationSeconds 1: evicted a second later, DisruptionTarget first.
	wait_for_line "$BATS_TEST_TMPDIR/watch" '"reason":"DeletionByTaintManager"' 10
	grep -q '"message":"Taint manager: deleting due to NoExecute taint"' \
	    "$BATS_TEST_TMPDIR/watch"
	wait_for_line "$BATS_TEST_TMPDIR/watch" '"deletionTimestamp":' 10
	kill "$watcher" 2>/dev/null || true
	run kubectl get events --field-selector reason=TaintManagerEviction -o name
	[ -n "$output" ]
	# The kubelet comes back: Ready, no taints.
	kubectl annotate node small-1 devcluster.trainyard.dev/kubelet-
	kubectl wait --for=condition=Ready node/small-1 --timeout=10s
	eventually 5 no_taints small-1
	# A dead kubelet never finishes a graceful deletion; force it if it stays.
	kubectl delete pod victim --force --grace-period=0 --ignore-not-found >/dev/null 2>&1
}

@test "patching Ready=False gives the not-ready taints" {
	kubectl patch node small-2 --subresource=status --type=strategic \
	    -p '{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Test"}]}}'
	kubectl wait --for=condition=Ready=False node/small-2 --timeout=5s
	eventually 5 bash -c "[[ \"\$(kubectl get node small-2 -o jsonpath='{.spec.taints}')\" \
	    == *not-ready*NoExecute* ]]"
	run taints_of small-2
	[[ "$output" == *"node.kubernetes.io/not-ready:NoSchedule"* ]]
	[[ "$output" == *"node.kubernetes.io/not-ready:NoExecute"* ]]
	kubectl patch node small-2 --subresource=status --type=strategic \
	    -p '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}'
	kubectl wait --for=condition=Ready node/small-2 --timeout=5s
	eventually 5 no_taints small-2
}

@test "cordon adds the unschedulable taint, uncordon removes it" {
	kubectl cordon small-2
	eventually 5 bash -c "[[ \"\$(kubectl get node small-2 -o jsonpath='{.spec.taints}')\" \
	    == *unschedulable* ]]"
	run taints_of small-2
	[ "$output" = "node.kubernetes.io/unschedulable:NoSchedule " ]
	run kubectl get node small-2 --no-headers
	[[ "$output" == *"Ready,SchedulingDisabled"* ]]
	kubectl uncordon small-2
	eventually 5 no_taints small-2
}

@test "deleting a node fails its pods and pod GC removes them" {
	pod_on orphan small-3
	kubectl get pod orphan -w --output-watch-events -o json \
	    >"$BATS_TEST_TMPDIR/watch" 2>&1 &
	watcher=$!
	kubectl delete node small-3
	kubectl wait --for=delete pod/orphan --timeout=10s
	kill "$watcher" 2>/dev/null || true
	grep -q '"reason":"DeletionByPodGC"' "$BATS_TEST_TMPDIR/watch"
	grep -q '"message":"PodGC: node no longer exists"' "$BATS_TEST_TMPDIR/watch"
	grep -q '"phase":"Failed"' "$BATS_TEST_TMPDIR/watch"
	# Its Lease goes with it (ownerReference, garbage collector).
	kubectl wait --for=delete lease/small-3 -n kube-node-lease --timeout=10s
}
