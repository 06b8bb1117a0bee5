#!/usr/bin/env bats
#
# dc_limitrange.bats: LimitRanger admission with the real kubectl: a
# LimitRange's defaults as stored, containers' default limits and
# requests and the kubernetes.io/limit-ranger annotation, min, max and
# ratio refusals with kube-apiserver's messages, Pod-type limits, pods of
# the simulated controllers, and LimitRanger before ResourceQuota.

load devcluster

setup_file() { dc_start; }
teardown_file() { dc_stop; }

@test "a LimitRange is stored with its item defaults" {
	kubectl create namespace lr
	kubectl apply -n lr -f - <<YAML
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    max: {cpu: "1", memory: 1Gi}
    min: {cpu: 50m}
    default: {cpu: 500m}
    maxLimitRequestRatio: {cpu: "10"}
  - type: Pod
    max: {memory: 1536Mi}
YAML
	run kubectl get limitrange limits -n lr -o jsonpath='{.spec.limits[0].default}'
	[ "$output" = '{"cpu":"500m","memory":"1Gi"}' ]
	run kubectl get limitrange limits -n lr -o jsonpath='{.spec.limits[0].defaultRequest}'
	[ "$output" = '{"cpu":"500m","memory":"1Gi"}' ]
	run kubectl get limitrange limits -n lr -o jsonpath='{.spec.limits[1].default}'
	[ "$output" = '' ]
}

@test "a pod without resources gets the defaults and the annotation" {
	kubectl run p1 -n lr --image=busybox --restart=Never
	run kubectl get pod p1 -n lr -o jsonpath='{.spec.containers[0].resources}'
	[ "$output" = '{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"500m","memory":"1Gi"}}' ]
	run kubectl get pod p1 -n lr -o jsonpath='{.metadata.annotations.kubernetes\.io/limit-ranger}'
	[ "$output" = 'LimitRanger plugin set: cpu, memory request for container p1; cpu, memory limit for container p1' ]
}

@test "what a container sets is kept; init containers are defaulted too" {
	kubectl apply -n lr -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: p2}
spec:
  initContainers:
  - {name: setup, image: busybox}
  containers:
  - name: app
    image: busybox
    resources: {requests: {cpu: 200m}, limits: {cpu: 800m, memory: 512Mi}}
YAML
	run kubectl get pod p2 -n lr -o jsonpath='{.spec.containers[0].resources}'
	[ "$output" = '{"limits":{"cpu":"800m","memory":"512Mi"},"requests":{"cpu":"200m","memory":"512Mi"}}' ]
	run kubectl get pod p2 -n lr -o jsonpath='{.spec.initContainers[0].resources.limits}'
	[ "$output" = '{"cpu":"500m","memory":"1Gi"}' ]
	run kubectl get pod p2 -n lr -o jsonpath='{.metadata.annotations.kubernetes\.io/limit-ranger}'
	[ "$output" = 'LimitRanger plugin set: cpu, memory request for init container setup; cpu, memory limit for init container setup' ]
}

@test "max, min and the ratio refuse with kube-apiserver's messages" {
	run kubectl run big -n lr --image=busybox --restart=Never \
	    --overrides='{"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"cpu":"2"}}}]}}'
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' ]
	run kubectl run small -n lr --image=busybox --restart=Never \
	    --overrides='{"spec":{"containers":[{"name":"small","image":"busybox","resources":{"requests":{"cpu":"10m"},"limits":{"cpu":"20m"}}}]}}'
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): pods "small" is forbidden: minimum cpu usage per Container is 50m, but request is 10m' ]
	run kubectl run ratio -n lr --image=busybox --restart=Never \
	    --overrides='{"spec":{"containers":[{"name":"ratio","image":"busybox","resources":{"requests":{"cpu":"60m"},"limits":{"cpu":"1"}}}]}}'
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): pods "ratio" is forbidden: cpu max limit to request ratio per Container is 10, but provided ratio is 16.666667' ]
	run kubectl get pods -n lr -o name
	[ "${#lines[@]}" -eq 2 ]
}

@test "Pod-type limits apply to the sum of the containers" {
	run kubectl apply -n lr -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers:
  - {name: a, image: busybox, resources: {limits: {memory: 1Gi}}}
  - {name: b, image: busybox, resources: {limits: {memory: 1Gi}}}
YAML
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): error when creating "STDIN": pods "two" is forbidden: maximum memory usage per Pod is 1536Mi, but limit is 2Gi' ]
}

@test "pods of a Deployment get the defaults" {
	kubectl create deployment web -n lr --image=nginx --replicas=2
	kubectl wait -n lr --for=jsonpath='{.status.replicas}'=2 deployment/web --timeout=60s
	run kubectl get pods -n lr -l app=web -o jsonpath='{range .items[*]}{.spec.containers[0].resources.requests.cpu}{"\n"}{end}'
	[ "${lines[0]}" = 500m ]
	[ "${lines[1]}" = 500m ]
}

@test "LimitRanger runs before ResourceQuota" {
	kubectl create namespace lrq
	kubectl apply -n lrq -f - <<YAML
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {requests.cpu: "1", limits.cpu: "2"}
---
apiVersion: v1
kind: LimitRange
metadata: {name: d}
spec:
  limits:
  - type: Container
    default: {cpu: 400m}
    defaultRequest: {cpu: 250m}
YAML
	kubectl run q1 -n lrq --image=busybox --restart=Never
	run kubectl get quota q -n lrq -o jsonpath='{.status.used}'
	[ "$output" = '{"limits.cpu":"400m","requests.cpu":"250m"}' ]
}

@test "several violations are listed together, each once" {
	kubectl create namespace lrm
	kubectl apply -n lrm -f - <<YAML
apiVersion: v1
kind: LimitRange
metadata: {name: m}
spec:
  limits:
  - type: Container
    min: {memory: 64Mi}
    max: {cpu: 500m}
YAML
	run kubectl apply -n lrm -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - {name: a, image: busybox, resources: {limits: {cpu: "1", memory: 32Mi}}}
  - {name: b, image: busybox, resources: {limits: {cpu: "1", memory: 32Mi}}}
YAML
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): error when creating "STDIN": pods "bad" is forbidden: [minimum memory usage per Container is 64Mi, but request is 32Mi, maximum cpu usage per Container is 500m, but limit is 1]' ]
}

@test "a LimitRange whose min passes its max is refused" {
	run kubectl apply -n lrm -f - <<YAML
apiVersion: v1
kind: LimitRange
metadata: {name: inverted}
spec:
  limits:
  - type: Container
    min: {cpu: 400m}
    max: {cpu: 200m}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'The LimitRange "inverted" is invalid: '
	echo "$output" | grep -F 'spec.limits[0].min[cpu]: Invalid value: "400m": min value 400m is greater than max value 200m'
}
