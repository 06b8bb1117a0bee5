#!/usr/bin/env bats
#
# dc_podsecurity.bats: PodSecurity admission with the real kubectl: the
# namespace labels' validation, the dry-run warnings when enforce gets
# stricter, refused pods with kube-apiserver's messages, warned pods
# (kubectl's "Warning:" lines), updates that are not re-evaluated, and
# workloads: warned about, their pods refused.

load devcluster

setup_file() { dc_start; }
teardown_file() { dc_stop; }

# A pod that breaks most of baseline: privileged, host network, hostPath /.
priv_pod() {
	kubectl apply -n "$1" -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  hostNetwork: true
  containers:
  - name: main
    image: busybox
    securityContext: {privileged: true}
    volumeMounts: [{name: root, mountPath: /host}]
  volumes:
  - {name: root, hostPath: {path: /}}
YAML
}

# A pod restricted admits; $3: one more line of its pod securityContext.
tidy_pod() {
	kubectl apply -n "$1" -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  securityContext:
    runAsNonRoot: true
    seccompProfile: {type: RuntimeDefault}
    ${3:-}
  containers:
  - name: app
    image: busybox
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
YAML
}

RESTRICTED_BAD='allowPrivilegeEscalation != false (container "plain" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "plain" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "plain" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "plain" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'

@test "bad labels are refused with upstream's message" {
	kubectl create namespace psa
	run kubectl label ns psa pod-security.kubernetes.io/enforce=strict
	[ "$status" -ne 0 ]
	[[ "$output" == *'Namespace "psa" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted'* ]]
	run kubectl label ns psa pod-security.kubernetes.io/warn-version=v2.0
	[ "$status" -ne 0 ]
	[[ "$output" == *'metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "v2.0": must be "latest" or "v1.x"'* ]]
	run kubectl create -f - <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: psa-bad
  labels: {pod-security.kubernetes.io/audit: everything}
YAML
	[ "$status" -ne 0 ]
	[[ "$output" == *'Namespace "psa-bad" is invalid: metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "everything"'* ]]
	run kubectl get ns psa -o jsonpath='{.metadata.labels}'
	[[ "$output" != *pod-security* ]]
}

@test "labelling enforce warns about the pods already there" {
	priv_pod psa priv
	kubectl run plain -n psa --image=busybox --restart=Never
	kubectl run plain2 -n psa --image=busybox --restart=Never
	run kubectl label ns psa pod-security.kubernetes.io/enforce=restricted
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 'Warning: existing pods in namespace "psa" violate the new PodSecurity enforce level "restricted:latest"' ]
	[ "${lines[1]}" = 'Warning: plain (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile' ]
	[ "${lines[2]}" = 'Warning: priv: host namespaces, privileged, allowPrivilegeEscalation != false, unrestricted capabilities, restricted volume types, runAsNonRoot != true, seccompProfile' ]
	[ "${lines[3]}" = 'namespace/psa labeled' ]
	# relaxing it, or keeping it, evaluates nothing
	run kubectl label ns psa --overwrite pod-security.kubernetes.io/enforce=baseline
	[ "$status" -eq 0 ]
	[ "$output" = 'namespace/psa labeled' ]
}

@test "a pod the enforce level forbids is refused with kube-apiserver's message" {
	run priv_pod psa priv2
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): error when creating "STDIN": pods "priv2" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork), hostPath volumes (volume "root"), privileged (container "main" must not set securityContext.privileged=true)' ]
	run kubectl get pod priv2 -n psa
	[ "$status" -ne 0 ]
	# server-side dry run is refused the same
	run kubectl run priv3 -n psa --image=busybox --restart=Never --dry-run=server \
	    --overrides='{"spec":{"containers":[{"name":"priv3","image":"busybox","securityContext":{"privileged":true}}]}}'
	[ "$status" -ne 0 ]
	[[ "$output" == *'pods "priv3" is forbidden: violates PodSecurity "baseline:latest": privileged (container "priv3" must not set securityContext.privileged=true)'* ]]
}

@test "warn prints kubectl's Warning line and admits the pod" {
	kubectl label ns psa pod-security.kubernetes.io/warn=restricted
	run kubectl run plain3 -n psa --image=busybox --restart=Never
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "Warning: would violate PodSecurity \"restricted:latest\": ${RESTRICTED_BAD//plain/plain3}" ]
	[ "${lines[1]}" = 'pod/plain3 created' ]
	# a restricted pod: no warning
	run tidy_pod psa tidy
	[ "$status" -eq 0 ]
	[ "$output" = 'pod/tidy created' ]
}

@test "updates that change no image are not evaluated again" {
	# priv was admitted before enforce was set; labels and annotations still change
	run kubectl label pod priv -n psa team=ml
	[ "$status" -eq 0 ]
	[ "$output" = 'pod/priv labeled' ]
	run kubectl annotate pod priv -n psa note=kept
	[ "$status" -eq 0 ]
	# a new image is evaluated: refused
	run kubectl set image pod/priv -n psa main=busybox:1.36
	[ "$status" -ne 0 ]
	[[ "$output" == *'pods "priv" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork), hostPath volumes (volume "root"), privileged (container "main" must not set securityContext.privileged=true)'* ]]
}

@test "a version label pins the checks" {
	kubectl create namespace psa-pin
	kubectl label ns psa-pin pod-security.kubernetes.io/enforce=restricted \
	    pod-security.kubernetes.io/enforce-version=v1.22
	# runAsUser=0 is checked from v1.23 only
	run tidy_pod psa-pin root 'runAsUser: 0'
	[ "$status" -eq 0 ]
	run kubectl label ns psa-pin --overwrite pod-security.kubernetes.io/enforce-version=latest
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = 'Warning: root: runAsUser=0' ]
}

@test "a Deployment is warned about and its pods are refused" {
	kubectl create namespace psa-apps
	kubectl label ns psa-apps pod-security.kubernetes.io/enforce=baseline
	run kubectl apply -n psa-apps -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: main
        image: busybox
        securityContext: {privileged: true}
YAML
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 'Warning: would violate PodSecurity "baseline:latest": privileged (container "main" must not set securityContext.privileged=true)' ]
	[ "${lines[1]}" = 'deployment.apps/web created' ]
	kubectl wait -n psa-apps --for=jsonpath='{.status.observedGeneration}'=1 rs -l app=web --timeout=20s
	run kubectl get pods -n psa-apps -o name
	[ "$output" = '' ]
	run kubectl get events -n psa-apps --field-selector reason=FailedCreate \
	    -o jsonpath='{.items[0].message}'
	[[ "$output" == 'Error creating: pods "web-'*'" is forbidden: violates PodSecurity "baseline:latest": privileged (container "main" must not set securityContext.privileged=true)' ]]
	run kubectl get rs -n psa-apps -l app=web \
	    -o jsonpath='{.items[0].status.conditions[?(@.type=="ReplicaFailure")].reason}'
	[ "$output" = 'FailedCreate' ]
	# allowed now: the ReplicaSet tries again and the condition goes
	kubectl label ns psa-apps --overwrite pod-security.kubernetes.io/enforce=privileged
	kubectl wait -n psa-apps --for=jsonpath='{.status.replicas}'=2 deployment/web --timeout=20s
	run kubectl get rs -n psa-apps -l app=web -o jsonpath='{.items[0].status.conditions}'
	[ "$output" = '' ]
}
