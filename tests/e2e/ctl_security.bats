#!/usr/bin/env bats
#
# ctl_security.bats: a Run is no way around Pod Security. With the real
# kubectl, the controller under its manifests' service account serving its
# admission webhooks, and a researcher by impersonation (--as):
#
# - a Project's namespaces carry the pod-security.kubernetes.io labels of
#   its spec.podSecurity (baseline enforced, restricted warned and audited
#   by default); an edited label comes back, a changed spec moves them;
# - a Run whose pods ask outside its profile's security envelope
#   (privileged, hostPath /, hostNetwork, a capability the profile does not
#   allow) is refused at apply time with every violation; the controller
#   refuses it too where no webhook looks (InvalidSpec, no pod created);
# - a Run inside its envelope runs: an RDMA profile allowing IPC_LOCK and
#   /dev/infiniband read-only, in a project that enforces privileged.

load projects

setup_file() {
	projects_setup_file || return 1
	kubectl apply -f - >/dev/null <<EOF || return 1
apiVersion: trainyard.dev/v1beta1
kind: ResourceProfile
metadata: {name: rdma}
spec:
  resources: {cpu: "1", nvidia.com/gpu: 1, rdma/hca_shared_devices_a: 1}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  security:
    allowedCapabilities: [IPC_LOCK]
    allowedHostPaths: [{pathPrefix: /dev/infiniband, readOnly: true}]
EOF
	kubectl apply -f "$DC_REPO/manifests/webhooks.yaml" >/dev/null || return 1
	kubectl wait --for=jsonpath='{.webhooks[0].clientConfig.caBundle}' --timeout=$W \
	    validatingwebhookconfiguration/trainyard-projects >/dev/null
}

teardown_file() {
	projects_teardown_file
}

teardown() {
	projects_teardown
}

# labels NS: the namespace's Pod Security labels, "enforce/version warn/version audit/version".
labels() {
	kubectl get ns "$1" -o json | jq -r '.metadata.labels as $l |
	    ["enforce", "warn", "audit"] | map(($l["pod-security.kubernetes.io/" + .] // "") +
	    "/" + ($l["pod-security.kubernetes.io/" + . + "-version"] // "")) | join(" ")'
}

# wait_labels NS WANT
wait_labels() {
	local i
	for i in $(seq 100); do
		[ "$(labels "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	echo "namespace $1: $(labels "$1"), want $2" >&2
	return 1
}

# srun NS NAME PROFILE CONTAINER-EXTRA TEMPLATE-SPEC [KUBECTL ARGS]: applies
# a 1-node Run whose container has CONTAINER-EXTRA (members of a YAML flow
# mapping) and whose template.spec is TEMPLATE-SPEC.
srun() {
	local ns="$1" name="$2" profile="$3" extra="$4" tspec="$5"
	shift 5
	kubectl apply -n "$ns" "$@" -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: $name}
spec:
  nodes: 1
${profile:+  profile: $profile}
  container: {image: busybox${extra:+, $extra}}
  template:
    metadata: {annotations: {devcluster.trainyard.dev/run-seconds: "600"}}
    spec: {${tspec}}
EOF
}

@test "project namespaces carry the Pod Security labels of spec.podSecurity" {
	project sec
	kubectl wait --for=condition=Ready project/sec --timeout=$W
	for ns in sec sec-eval; do
		wait_labels "$ns" "baseline/latest restricted/latest restricted/latest"
	done
	# Edited by someone: it comes back.
	kubectl label ns sec-eval pod-security.kubernetes.io/enforce=privileged --overwrite
	wait_labels sec-eval "baseline/latest restricted/latest restricted/latest"
	# The spec changes them.
	project sec "podSecurity: {enforce: restricted, warn: restricted, audit: baseline}"
	wait_labels sec "restricted/latest restricted/latest baseline/latest"
	wait_labels sec-eval "restricted/latest restricted/latest baseline/latest"
	# privileged only where the Project lists its profiles.
	project sec "podSecurity: {enforce: privileged}"
	kubectl wait --for=jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'=InvalidSpec \
	    project/sec --timeout=$W
	[[ "$(kubectl get project sec -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')" == \
	    *"spec.podSecurity.enforce: privileged needs spec.resourceProfiles.allowed"* ]]
	[ "$(labels sec)" = "restricted/latest restricted/latest baseline/latest" ]
	project sec
	wait_labels sec "baseline/latest restricted/latest restricted/latest"
}

@test "a researcher's Run outside its profile's envelope is refused at apply time" {
	project sec
	member sec alice alice researcher "$(date -u -d '+30 days' +%Y-%m-%dT%H:%M:%SZ)"
	kubectl wait -n sec --for=condition=Ready projectmember/alice --timeout=$W
	run srun sec priv "" "securityContext: {privileged: true}" "" --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'denied the request: spec: outside the default security envelope (no ResourceProfile): privileged (container "main" must not set securityContext.privileged=true)'* ]]
	run srun sec root rdma "" "volumes: [{name: root, hostPath: {path: /}}]" --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'outside the security envelope of ResourceProfile "rdma": hostPath volumes (volume "root")'* ]]
	run srun sec net rdma "" "hostNetwork: true" --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'host namespaces (hostNetwork)'* ]]
	run srun sec cap rdma "securityContext: {capabilities: {add: [IPC_LOCK, SYS_ADMIN]}}" "" \
	    --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'non-default capabilities (container "main" must not include "SYS_ADMIN" in securityContext.capabilities.add)'* ]]
	# Every violation at once.
	run srun sec all rdma "securityContext: {privileged: true}" \
	    "hostPID: true, volumes: [{name: root, hostPath: {path: /}}]" --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'privileged (container "main" must not set securityContext.privileged=true), host namespaces (hostPID), hostPath volumes (volume "root")'* ]]
	run kubectl get runs -n sec -o name
	[ -z "$output" ]
	run kubectl get pods -n sec -o name
	[ -z "$output" ]
}

@test "where no webhook looks, the controller refuses it: InvalidSpec, no pod" {
	kubectl create namespace loose
	srun loose priv rdma "securityContext: {privileged: true}" \
	    "volumes: [{name: root, hostPath: {path: /}}]"
	kubectl wait -n loose --for=jsonpath='{.status.reason}'=InvalidSpec run/priv --timeout=$W
	run kubectl get run priv -n loose -o jsonpath='{.status.message}'
	echo "$output"
	[ "$output" = \
	    'spec: outside the security envelope of ResourceProfile "rdma": privileged (container "main" must not set securityContext.privileged=true), hostPath volumes (volume "root")' ]
	run kubectl get pods -n loose -o name
	[ -z "$output" ]
	kubectl delete namespace loose --wait=false
}

@test "a Run inside its envelope runs: IPC_LOCK and /dev/infiniband read-only in a privileged project" {
	project hpc "resourceProfiles: {allowed: [rdma]}" "podSecurity: {enforce: privileged}"
	kubectl wait --for=condition=Ready project/hpc --timeout=$W
	wait_labels hpc "privileged/latest restricted/latest restricted/latest"
	member hpc alice alice researcher "$(date -u -d '+30 days' +%Y-%m-%dT%H:%M:%SZ)"
	kubectl wait -n hpc --for=condition=Ready projectmember/alice --timeout=$W
	srun hpc ib rdma "securityContext: {capabilities: {add: [IPC_LOCK]}}, volumeMounts: [{name: ib, mountPath: /dev/infiniband, readOnly: true}]" \
	    "volumes: [{name: ib, hostPath: {path: /dev/infiniband}}]" --as alice
	kubectl wait -n hpc --for=jsonpath='{.status.phase}'=Running run/ib --timeout=$W ||
	    { kubectl get run ib -n hpc -o yaml; kubectl get pods -n hpc -o yaml; false; }
	[ "$(kubectl get pod ib-0 -n hpc -o jsonpath='{.spec.containers[0].securityContext.capabilities.add[0]}')" = IPC_LOCK ]
	# Writable, it is outside.
	run srun hpc ibw rdma "volumeMounts: [{name: ib, mountPath: /dev/infiniband}]" \
	    "volumes: [{name: ib, hostPath: {path: /dev/infiniband}}]" --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'hostPath volumes (volume "ib" must be mounted readOnly: /dev/infiniband is allowed read-only)'* ]]
	kubectl delete run ib -n hpc --wait=false
}

@test "in a baseline project namespace, an RDMA Run needing IPC_LOCK is refused with what to change" {
	project sec
	member sec alice alice researcher "$(date -u -d '+30 days' +%Y-%m-%dT%H:%M:%SZ)"
	kubectl wait -n sec --for=condition=Ready projectmember/alice --timeout=$W
	wait_labels sec "baseline/latest restricted/latest restricted/latest"
	run srun sec ib rdma "securityContext: {capabilities: {add: [IPC_LOCK]}}" "" --as alice
	[ "$status" -ne 0 ]
	[[ "$output" == *'denied the request: violates PodSecurity "baseline:latest": non-default capabilities (container "main" must not include "IPC_LOCK" in securityContext.capabilities.add); namespace sec enforces Pod Security level baseline (Project sec, spec.podSecurity.enforce): take these out of the Run, or run it in a namespace of a project the platform team sets to enforce privileged, listing ResourceProfile "rdma" in spec.resourceProfiles.allowed'* ]]
	run kubectl get run ib -n sec
	[ "$status" -ne 0 ]
	# Without the webhook, the controller refuses it before any pod.
	kubectl delete -f "$DC_REPO/manifests/webhooks.yaml"
	srun sec ib rdma "securityContext: {capabilities: {add: [IPC_LOCK]}}" "" --as alice
	kubectl wait -n sec --for=jsonpath='{.status.reason}'=InvalidSpec run/ib --timeout=$W
	[[ "$(kubectl get run ib -n sec -o jsonpath='{.status.message}')" == \
	    'spec: violates PodSecurity "baseline:latest": non-default capabilities'* ]]
	run kubectl get pods -n sec -o name
	[ -z "$output" ]
	kubectl delete run ib -n sec
	kubectl apply -f "$DC_REPO/manifests/webhooks.yaml"
	kubectl wait --for=jsonpath='{.webhooks[0].clientConfig.caBundle}' --timeout=$W \
	    validatingwebhookconfiguration/trainyard-projects
}

@test "a pod the API server refuses for Pod Security fails the session at once" {
	kubectl create namespace labelled
	kubectl label ns labelled pod-security.kubernetes.io/enforce=baseline
	srun labelled ib rdma "securityContext: {capabilities: {add: [IPC_LOCK]}}" "" \
	    >/dev/null
	kubectl wait -n labelled --for=jsonpath='{.status.reason}'=PodSecurity run/ib --timeout=$W
	[ "$(kubectl get run ib -n labelled -o jsonpath='{.status.phase}')" = Failed ]
	[[ "$(kubectl get run ib -n labelled -o jsonpath='{.status.message}')" == \
	    'Error creating Pod ib-0: pods "ib-0" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "main" must not include "IPC_LOCK" in securityContext.capabilities.add)'* ]]
	kubectl wait -n labelled --for=condition=CleanedUp run/ib --timeout=$W
	# One refusal, one Warning, no retry loop.
	[ "$(kubectl get events -n labelled --field-selector reason=PodSecurity \
	    -o jsonpath='{.items[*].type}')" = Warning ]
	run kubectl get events -n labelled --field-selector reason=FailedCreate -o name
	[ "$(echo "$output" | grep -c .)" -le 1 ]
	run kubectl get pods -n labelled -o name
	[ -z "$output" ]
	kubectl delete namespace labelled --wait=false
}
