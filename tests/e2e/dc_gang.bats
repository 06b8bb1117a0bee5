#!/usr/bin/env bats
#
# dc_gang.bats: gang scheduling with PodGroups (devcluster/scheduler.c and
# sched.c) on the example GPU cluster (8 nodes of 8 nvidia.com/gpu in two
# InfiniBand zones), with the real kubectl and the PodGroup CRDs applied
# from crds/third-party/. Assertions are on binding (spec.nodeName and the
# PodScheduled condition), so they hold whether or not the simulated
# kubelet has started the pods.

load devcluster

setup_file() {
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms
	kubectl apply -f "$DC_REPO/crds/third-party/"
	kubectl wait --for=condition=Established --timeout=10s \
	    crd/podgroups.scheduling.x-k8s.io crd/podgroups.scheduling.sigs.k8s.io
	kubectl apply -f - <<YAML
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: preemptible}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 10000
YAML
}

teardown_file() {
	dc_stop
}

setup() {
	NS="t$BATS_TEST_NUMBER"
	kubectl create namespace "$NS"
}

teardown() {
	kubectl delete pods --all -n "$NS" --grace-period=0 --force --wait=true \
	    >/dev/null 2>&1 || true
	kubectl uncordon gpu-a1 gpu-a2 >/dev/null 2>&1 || true
}

# pg NAME MIN [TIMEOUT] [GROUP]: a PodGroup.
pg() {
	local group="${4:-scheduling.x-k8s.io}" timeout=""
	[ -n "${3:-}" ] && timeout="scheduleTimeoutSeconds: $3"
	kubectl apply -n "$NS" -f - <<YAML
apiVersion: $group/v1alpha1
kind: PodGroup
metadata: {name: $1}
spec:
  minMember: $2
  $timeout
YAML
}

# pod NAME GPUS [key=value...]: a GPU pod; options group=PG, label=KEY
# (the group label, default scheduling.x-k8s.io/pod-group), node=NODE,
# prio=CLASS, zone=yes (required pod affinity to its group by ib-zone),
# role=ROLE.
pod() {
	pod_yaml "$@" | kubectl apply -n "$NS" -f -
}

# pod_yaml NAME GPUS [KEY=VALUE...]: the manifest pod applies.
pod_yaml() {
	local name="$1" gpus="$2" group="" label="scheduling.x-k8s.io/pod-group"
	local node="" prio="" zone="" role="work" sched="default-scheduler" kv
	shift 2
	for kv in "$@"; do
		case "$kv" in
		group=*) group="${kv#group=}"; sched="scheduler-plugins-scheduler" ;;
		label=*) label="${kv#label=}" ;;
		node=*) node="${kv#node=}" ;;
		prio=*) prio="${kv#prio=}" ;;
		zone=*) zone=yes ;;
		role=*) role="${kv#role=}" ;;
		esac
	done
	{
		cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $name
  labels:
    role: $role
YAML
		[ -n "$group" ] && echo "    $label: $group"
		cat <<YAML
spec:
  schedulerName: $sched
  terminationGracePeriodSeconds: 0
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
YAML
		[ -n "$node" ] && echo "  nodeSelector: {kubernetes.io/hostname: $node}"
		[ -n "$prio" ] && echo "  priorityClassName: $prio"
		[ -n "$zone" ] && cat <<YAML
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels: {$label: $group}
        topologyKey: topology.trainyard.dev/ib-zone
YAML
		cat <<YAML
  containers:
  - name: main
    image: busybox
    resources:
      limits: {nvidia.com/gpu: "$gpus"}
YAML
	}
}

# fill NODE...: an 8-GPU placeholder pod on each node, bound (one apply
# and one wait for them all).
fill() {
	local n
	for n in "$@"; do
		echo ---
		pod_yaml "fill-$n" 8 node="$n" role=fill "${FILL_PRIO:+prio=$FILL_PRIO}"
	done | kubectl apply -n "$NS" -f -
	kubectl wait -n "$NS" --for=condition=PodScheduled "${@/#/pod/fill-}" --timeout=10s
}

node_of() {
	kubectl get pod -n "$NS" "$1" -o jsonpath='{.spec.nodeName}'
}

cond() {
	kubectl get pod -n "$NS" "$1" -o \
	    jsonpath="{.status.conditions[?(@.type==\"PodScheduled\")].$2}"
}

@test "the PodGroup CRDs apply with kubectl 1.27 and 1.33" {
	local v dir
	for v in 27 33; do
		dc_start_extra dir --kubernetes-version "1.$v"
		"/usr/lib/google-cloud-sdk/bin/kubectl.1.$v" --kubeconfig "$dir/kubeconfig" \
		    --cache-dir "$dir/cache" apply -f "$DC_REPO/crds/third-party/"
		"/usr/lib/google-cloud-sdk/bin/kubectl.1.$v" --kubeconfig "$dir/kubeconfig" \
		    --cache-dir "$dir/cache" wait --for=condition=Established --timeout=10s \
		    crd/podgroups.scheduling.x-k8s.io crd/podgroups.scheduling.sigs.k8s.io
		run "/usr/lib/google-cloud-sdk/bin/kubectl.1.$v" --kubeconfig \
		    "$dir/kubeconfig" --cache-dir "$dir/cache" api-resources \
		    --api-group=scheduling.x-k8s.io --no-headers
		[[ "$output" == *"podgroups"*"pg,pgs"*"scheduling.x-k8s.io/v1alpha1"*"true"*"PodGroup"* ]]
		dc_stop_extra "$dir"
	done
	run kubectl get crd podgroups.scheduling.x-k8s.io \
	    -o jsonpath='{.spec.versions[0].additionalPrinterColumns[*].name}'
	[ "$output" = "Phase MinMember Running Succeeded Failed Age" ]
}

@test "a gang waits for minMember pods, then binds all at once" {
	pg g 3
	pod g-0 1 group=g
	pod g-1 1 group=g
	kubectl wait -n "$NS" --for=condition=PodScheduled=False pod/g-0 pod/g-1 --timeout=10s
	run cond g-0 message
	[[ "$output" == *"cannot find enough sibling pods, current pods number: 2, minMember of group: 3"* ]]
	[ -z "$(node_of g-0)" ]
	run kubectl get podgroups.scheduling.x-k8s.io -n "$NS" g -o jsonpath='{.status.phase}'
	[ "$output" = "Pending" ]
	pod g-2 1 group=g
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/g-0 pod/g-1 pod/g-2 --timeout=10s
	[[ "$(node_of g-2)" == gpu-* ]]
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running podgroups.scheduling.x-k8s.io/g --timeout=10s ||
	    [ "$(kubectl get podgroups.scheduling.x-k8s.io -n "$NS" g -o jsonpath='{.status.phase}')" = Scheduling ]
	run kubectl get podgroups.scheduling.x-k8s.io -n "$NS" g -o jsonpath='{.status.scheduleStartTime}'
	[[ "$output" == 20*Z ]]
	run kubectl get podgroups.scheduling.x-k8s.io -n "$NS" g
	[[ "${lines[0]}" == "NAME"*"PHASE"*"MINMEMBER"*"RUNNING"*"SUCCEEDED"*"FAILED"*"AGE" ]]
}

@test "NSML: a 10-GPU gang on 8 free GPUs does not block a 4-GPU gang" {
	fill gpu-a1 gpu-a2 gpu-a3 gpu-a4 gpu-b1 gpu-b2 gpu-b3
	pg big 5
	for i in 0 1 2 3 4; do pod "big-$i" 2 group=big; done
	kubectl wait -n "$NS" --for=condition=PodScheduled=False pod/big-0 --timeout=10s
	pg small 2
	pod small-0 2 group=small
	pod small-1 2 group=small
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/small-0 pod/small-1 --timeout=10s
	[ "$(node_of small-0)" = gpu-b4 ]
	[ "$(node_of small-1)" = gpu-b4 ]
	for i in 0 1 2 3 4; do
		[ -z "$(node_of "big-$i")" ]
		[ "$(cond "big-$i" status)" = False ]
	done
	run kubectl describe pod -n "$NS" big-0
	[[ "$output" == *FailedScheduling* ]]
}

@test "a cordoned node's GPUs are not capacity" {
	fill gpu-a3 gpu-a4 gpu-b1 gpu-b2 gpu-b3 gpu-b4
	kubectl cordon gpu-a1
	pg g 4
	for i in 0 1 2 3; do pod "g-$i" 4 group=g; done
	kubectl wait -n "$NS" --for=condition=PodScheduled=False pod/g-0 pod/g-3 --timeout=10s
	run cond g-0 message
	[[ "$output" == *"0/8 nodes are available: "*"1 node(s) were unschedulable"* ]] ||
	    [[ "$output" == *"optimistic rejection in PostFilter"* ]]
	run kubectl get events -n "$NS" --field-selector reason=FailedScheduling \
	    -o jsonpath='{.items[*].message}'
	[[ "$output" == *"1 node(s) were unschedulable"*"Insufficient nvidia.com/gpu"* ]]
	for i in 0 1 2 3; do [ -z "$(node_of "g-$i")" ]; done
	kubectl uncordon gpu-a1
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/g-0 pod/g-1 pod/g-2 pod/g-3 \
	    --timeout=10s
}

@test "required pod affinity by ib-zone keeps a gang in one zone" {
	fill gpu-a1
	pg z 4
	for i in 0 1 2 3; do pod "z-$i" 8 group=z zone=yes; done
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/z-0 pod/z-1 pod/z-2 pod/z-3 \
	    --timeout=10s
	for i in 0 1 2 3; do [[ "$(node_of "z-$i")" == gpu-b* ]]; done
}

@test "a high-priority gang preempts preemptible pods" {
	FILL_PRIO=preemptible fill gpu-a1 gpu-a2 gpu-a3 gpu-a4 gpu-b1 gpu-b2 gpu-b3 gpu-b4
	timeout 20 kubectl get pods -n "$NS" -l role=fill -w -o json \
	    >"$BATS_TEST_TMPDIR/watch" 2>/dev/null &
	local watcher=$!
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/fill-gpu-a1 --timeout=5s
	pg hi 2
	pod hi-0 8 group=hi prio=training
	pod hi-1 8 group=hi prio=training
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/hi-0 pod/hi-1 --timeout=20s
	run kubectl get pods -n "$NS" -l role=fill --no-headers
	[ "$(echo "$output" | grep -c .)" -eq 6 ]
	kill "$watcher" 2>/dev/null || true
	wait "$watcher" 2>/dev/null || true
	grep -q '"reason": "PreemptionByScheduler"' "$BATS_TEST_TMPDIR/watch"
	grep -q 'preempting to accommodate a higher priority pod' "$BATS_TEST_TMPDIR/watch"
	run kubectl get events -n "$NS" --field-selector reason=Preempted \
	    -o jsonpath='{.items[*].message}'
	[[ "$output" == *"Preempted by pod "*" on node gpu-"* ]]
}

@test "no preemption when the gang would not fit even after evicting everything lower" {
	FILL_PRIO=preemptible fill gpu-a1 gpu-a2 gpu-a3 gpu-a4 gpu-b1 gpu-b2 gpu-b3 gpu-b4
	pg huge 9
	for i in 0 1 2 3 4 5 6 7 8; do pod "huge-$i" 8 group=huge prio=training; done
	kubectl wait -n "$NS" --for=condition=PodScheduled=False pod/huge-0 pod/huge-8 \
	    --timeout=10s
	run kubectl get pods -n "$NS" -l role=fill \
	    -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{end}'
	[ "$output" = "||||||||" ]
	run kubectl get events -n "$NS" --field-selector reason=Preempted -o name
	[ -z "$output" ]
	[ -z "$(kubectl get pod -n "$NS" huge-0 -o jsonpath='{.status.nominatedNodeName}')" ]
}

@test "scheduleTimeoutSeconds: a gang not bound in time is rejected as upstream's Permit" {
	pg slow 2 2
	pod slow-0 16 group=slow
	pod slow-1 16 group=slow
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Scheduling podgroups.scheduling.x-k8s.io/slow --timeout=10s
	run kubectl get podgroups.scheduling.x-k8s.io -n "$NS" slow -o jsonpath='{.status.scheduleStartTime}'
	[[ "$output" == 20*Z ]]
	run timeout 20 bash -c "kubectl get events -n $NS -w --field-selector \
	    reason=FailedScheduling -o jsonpath='{.message}{\"\\n\"}' |
	    grep -m1 'rejected due to timeout after waiting 2s at plugin Coscheduling'"
	[ "$status" -eq 0 ]
	run kubectl get events -n "$NS" --field-selector reason=FailedScheduling \
	    -o jsonpath='{range .items[*]}{.involvedObject.name}={.message}{"\n"}{end}'
	[[ "$output" == *"slow-0=rejected due to timeout after waiting 2s at plugin Coscheduling"* ]]
	[[ "$output" == *"slow-1=rejection in Unreserve"* ]]
	[ -z "$(node_of slow-0)" ]
	run kubectl get podgroups.scheduling.x-k8s.io -n "$NS" slow -o jsonpath='{.status.phase}'
	[ "$output" = "Scheduling" ]
}

@test "the older scheduling.sigs.k8s.io group and label" {
	pg old 2 "" scheduling.sigs.k8s.io
	pod old-0 1 group=old label=pod-group.scheduling.sigs.k8s.io
	kubectl wait -n "$NS" --for=condition=PodScheduled=False pod/old-0 --timeout=10s
	pod old-1 1 group=old label=pod-group.scheduling.sigs.k8s.io
	kubectl wait -n "$NS" --for=condition=PodScheduled pod/old-0 pod/old-1 --timeout=10s
	run kubectl get podgroups.scheduling.sigs.k8s.io -n "$NS" old \
	    -o jsonpath='{.status.phase} {.status.scheduled}'
	[[ "$output" == "Scheduled 2" || "$output" == "Running 2" ]]
	# The new group's label does not join an old-group gang.
	run kubectl get podgroups.scheduling.x-k8s.io -n "$NS" -o name
	[ -z "$output" ]
}
