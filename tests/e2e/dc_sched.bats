#!/usr/bin/env bats
# The simulated scheduler (devcluster/scheduler.c) with --nodes and the
# example GPU cluster, driven by the real kubectl.

load devcluster

setup_file() {
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml"
}

teardown_file() {
	dc_stop
}

gpu_pod() {
	local name="$1" gpus="$2"
	kubectl apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $name
spec:
  tolerations:
  - key: nvidia.com/gpu
    operator: Exists
    effect: NoSchedule
  containers:
  - name: main
    image: busybox
    resources:
      limits:
        nvidia.com/gpu: "$gpus"
YAML
}

@test "--nodes creates 8 Ready GPU nodes" {
	run kubectl get nodes --no-headers
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | wc -l)" -eq 8 ]
	[ "$(echo "$output" | awk '$2 == "Ready"' | wc -l)" -eq 8 ]
	run kubectl get node gpu-b4 -o jsonpath='{.status.allocatable.nvidia\.com/gpu}'
	[ "$output" = "8" ]
	run kubectl get nodes -l topology.trainyard.dev/ib-zone=ib-a -o name
	[ "$(echo "$output" | wc -l)" -eq 4 ]
}

@test "a 2-GPU pod tolerating the taint is bound" {
	gpu_pod small 2
	kubectl wait --for=condition=PodScheduled pod/small --timeout=10s
	run kubectl get pod small -o jsonpath='{.spec.nodeName}'
	[[ "$output" == gpu-* ]]
}

@test "a 9-GPU pod stays Pending with FailedScheduling" {
	gpu_pod huge 9
	kubectl wait --for=condition=PodScheduled=False pod/huge --timeout=10s
	msg='0/8 nodes are available: 8 Insufficient nvidia.com/gpu.'
	run kubectl get pod huge -o \
	    jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'
	[[ "$output" == "$msg"* ]]
	run kubectl get pod huge -o \
	    jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}'
	[ "$output" = "Unschedulable" ]
	run kubectl describe pod huge
	[[ "$output" == *"FailedScheduling"*"$msg"* ]]
	run kubectl get pod huge -o jsonpath='{.spec.nodeName}'
	[ -z "$output" ]
}

@test "a pod without the toleration is refused by the taint" {
	kubectl run plain --image=busybox --restart=Never
	kubectl wait --for=condition=PodScheduled=False pod/plain --timeout=10s
	run kubectl get pod plain -o \
	    jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'
	[[ "$output" == "0/8 nodes are available: 8 node(s) had untolerated taint"* ]]
}

@test "kubectl cordon excludes a node" {
	for n in gpu-a1 gpu-a2 gpu-a3 gpu-a4 gpu-b1 gpu-b2 gpu-b3; do
		kubectl cordon "$n"
	done
	kubectl get node gpu-a1 -o jsonpath='{.spec.unschedulable}' | grep -q true
	for i in 1 2 3 4; do
		gpu_pod "c$i" 2
	done
	for i in 1 2 3 4; do
		kubectl wait --for=jsonpath='{.spec.nodeName}'=gpu-b4 "pod/c$i" --timeout=10s
	done
	kubectl uncordon gpu-a1
	kubectl wait --for=condition=PodScheduled pod/huge --timeout=2s && false || true
	run kubectl get pod huge -o \
	    jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}'
	[ "$output" = "False" ]
}

binding() {
	cat <<YAML
apiVersion: v1
kind: Binding
metadata: {name: $1}
target: {kind: Node, name: $2}
YAML
}

@test "discovery lists pods/binding and bindings, create only" {
	run kubectl get --raw /api/v1
	[[ "$output" == *'{"name":"bindings","singularName":"binding","namespaced":true,"kind":"Binding","verbs":["create"]}'* ]]
	[[ "$output" == *'{"name":"pods/binding","singularName":"","namespaced":true,"kind":"Binding","verbs":["create"]}'* ]]
	run kubectl api-resources --no-headers
	[[ "$output" == *"bindings "*"v1 "*"true "*"Binding"* ]]
}

@test "a Binding binds a pod once; a second is a Conflict" {
	kubectl run manual --image=busybox --restart=Never \
	    --overrides='{"spec":{"schedulerName":"nobody"}}'
	binding manual gpu-b2 | kubectl create -f -
	kubectl wait --for=condition=PodScheduled pod/manual --timeout=10s
	[ "$(kubectl get pod manual -o jsonpath='{.spec.nodeName}')" = gpu-b2 ]
	run kubectl create -f - < <(binding manual gpu-b3)
	[ "$status" -ne 0 ]
	[[ "$output" == *'Operation cannot be fulfilled on pods/binding "manual": pod manual is already assigned to node "gpu-b2"'* ]]
	run kubectl create -f - < <(binding ghost gpu-b3)
	[[ "$output" == *'pods "ghost" not found'* ]]
}

@test "pods/binding: RBAC create, and no binding of a terminating pod" {
	run kubectl auth can-i create pods --subresource=binding --as bob
	[ "$output" = no ]
	run kubectl create --validate=false -f - --as bob < <(binding x gpu-b3)
	[[ "$output" == *'cannot create resource "bindings"'* ]]
	kubectl create role binder --verb=create --resource=pods/binding,bindings
	kubectl create rolebinding bob-binder --role=binder --user=bob
	run kubectl auth can-i create pods --subresource=binding --as bob
	[ "$output" = yes ]
	kubectl run held --image=busybox --restart=Never \
	    --overrides='{"metadata":{"finalizers":["example.com/hold"]},"spec":{"schedulerName":"nobody"}}'
	kubectl run free --image=busybox --restart=Never \
	    --overrides='{"spec":{"schedulerName":"nobody"}}'
	binding free gpu-b3 | kubectl create --validate=false --as bob -f -
	kubectl wait --for=condition=PodScheduled pod/free --timeout=10s
	kubectl delete pod held --wait=false
	run kubectl create -f - < <(binding held gpu-b3)
	[[ "$output" == *'pod held is being deleted, cannot be assigned to a host'* ]]
	kubectl patch pod held --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
}
