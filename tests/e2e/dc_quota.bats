#!/usr/bin/env bats
# ResourceQuota admission and status.used with the real kubectl.

load devcluster

setup_file() { dc_start; }
teardown_file() { dc_stop; }

gpu_pod() {
	kubectl apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests: {nvidia.com/gpu: "$2", memory: 256Mi}
      limits: {nvidia.com/gpu: "$2"}
YAML
}

@test "a quota gets status.hard and a zero status.used" {
	kubectl apply -f - <<YAML
apiVersion: v1
kind: ResourceQuota
metadata: {name: q1}
spec:
  hard: {requests.nvidia.com/gpu: "8", pods: "3", memory: 1024Mi}
YAML
	run kubectl get quota q1 -o jsonpath='{.status.hard}'
	[ "$status" -eq 0 ]
	[ "$output" = '{"memory":"1Gi","pods":"3","requests.nvidia.com/gpu":"8"}' ]
	run kubectl get quota q1 -o jsonpath='{.status.used}'
	[ "$output" = '{"memory":"0","pods":"0","requests.nvidia.com/gpu":"0"}' ]
}

@test "pods within the quota are charged, one beyond it is Forbidden" {
	run gpu_pod p1 6
	[ "$status" -eq 0 ]
	run kubectl get quota q1 -o jsonpath='{.status.used}'
	[ "$output" = '{"memory":"256Mi","pods":"1","requests.nvidia.com/gpu":"6"}' ]
	run gpu_pod p2 4
	[ "$status" -ne 0 ]
	[[ "$output" == *'Error from server (Forbidden): error when creating "STDIN": pods "p2" is forbidden: exceeded quota: q1, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=6, limited: requests.nvidia.com/gpu=8'* ]]
	run kubectl get pod p2
	[ "$status" -ne 0 ]
}

@test "a pod without the memory request a quota needs must specify it" {
	run kubectl run p3 --image=busybox
	[ "$status" -ne 0 ]
	[[ "$output" == *'pods "p3" is forbidden: failed quota: q1: must specify memory for: p3'* ]]
}

@test "a dry run is checked but not charged" {
	run kubectl apply --dry-run=server -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: p4}
spec:
  containers:
  - {name: c, image: busybox, resources: {requests: {nvidia.com/gpu: "2", memory: 1Mi}}}
YAML
	[ "$status" -eq 0 ]
	run kubectl get quota q1 -o jsonpath='{.status.used.requests\.nvidia\.com/gpu}'
	[ "$output" = "6" ]
}

@test "describe quota shows the usage, and deleting the pod releases it" {
	run kubectl describe quota q1
	[ "$status" -eq 0 ]
	[[ "$output" =~ requests\.nvidia\.com/gpu\ +6\ +8 ]]
	kubectl delete pod p1 --wait=true
	run kubectl get quota q1 -o jsonpath='{.status.used}'
	[ "$output" = '{"memory":"0","pods":"0","requests.nvidia.com/gpu":"0"}' ]
	run gpu_pod p2 4
	[ "$status" -eq 0 ]
	kubectl delete pod p2 --wait=true
}

@test "count/configmaps limits configmaps" {
	kubectl create namespace cm-ns
	kubectl apply -n cm-ns -f - <<YAML
apiVersion: v1
kind: ResourceQuota
metadata: {name: objects}
spec:
  hard: {count/configmaps: "1"}
YAML
	kubectl create configmap a -n cm-ns
	run kubectl create configmap b -n cm-ns
	[ "$status" -ne 0 ]
	[[ "$output" == *'configmaps "b" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1'* ]]
	run kubectl get quota objects -n cm-ns -o jsonpath='{.status.used}'
	[ "$output" = '{"count/configmaps":"1"}' ]
}

# kubectl 1.32 and later send ResourceQuota as protobuf, which protobuf.c
# does not decode yet: kubectl 1.31 sends JSON.
@test "kubectl create quota (kubectl 1.31) works" {
	kubectl create namespace cq
	run command /usr/lib/google-cloud-sdk/bin/kubectl.1.31 --cache-dir "$DC_DIR/cache" \
	    create quota q2 -n cq --hard=requests.nvidia.com/gpu=8,pods=3
	[ "$status" -eq 0 ]
	run kubectl get quota q2 -n cq -o jsonpath='{.status.hard.pods}'
	[ "$output" = "3" ]
}
