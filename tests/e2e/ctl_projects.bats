#!/usr/bin/env bats
#
# ctl_projects.bats: the Project and ProjectMember reconcilers with the
# real kubectl, the controller running under its manifests' service
# account and ClusterRole (RBAC and its escalation prevention enforced),
# each person by impersonation (--as, --as-group) and kubectl auth can-i:
#
# - a Project creates its namespaces (and adopts an unlabelled one), and in
#   each the quota, the isolation policies and the owners' binding; the
#   reader role lets owners and members get their Project; a namespace of
#   another project is left alone and named in NamespacesReady;
# - drift is restored: a deleted binding and an edited quota come back; a
#   namespace the Project no longer lists is cleared and released;
# - a ProjectMember binds in every namespace of the project: a researcher
#   may create Runs but not pods, RoleBindings or quotas; a viewer reads
#   but cannot submit; a duplicate subject is refused; a role change makes
#   the new bindings and prunes the old; expiry removes access on time and
#   keeps the member; deleting a member removes its bindings;
# - deleting a Project removes what it made, the namespaces only under
#   deletionPolicy.namespaces Delete; under deletionPolicy.runs
#   WaitForCompletion, only once its Runs ended;
# - not one request of the controller was refused (403).
#
# The controller's own checks are tested without the admission webhooks;
# one test installs them (manifests/webhooks.yaml): attribution from the
# API server's user, refusals at kubectl apply time.

load devcluster
load controller

SA_KC=

setup_file() {
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms || return 1
	ctl_build || return 1
	ctl_install || return 1
	kubectl apply -f "$DC_REPO/crds/trainyard.dev_projects.yaml" \
	    -f "$DC_REPO/crds/trainyard.dev_projectmembers.yaml" \
	    -f "$DC_REPO/manifests/project-roles.yaml" \
	    -f "$DC_REPO/manifests/rbac.yaml" >/dev/null || return 1
	kubectl wait --for condition=established --timeout=20s \
	    crd/projects.trainyard.dev crd/projectmembers.trainyard.dev >/dev/null || return 1
	ctl_config
	ctl_sa_kubeconfig "$DC_DIR/sa.kubeconfig" || return 1
	kubectl delete --raw /devcluster/stats >/dev/null
	# The webhook behind its Service, with self-managed certificates.
	POD_NAMESPACE=trainyard-system ctl_proc_launch p --kubeconfig "$DC_DIR/sa.kubeconfig" \
	    --webhook-cert-mode=self || return 1
	ctl_proc_wait p 'conversion webhook on port' || return 1
	ctl_webhook_endpoints "$(grep -o 'conversion webhook on port [0-9]*' \
	    "$DC_DIR/ctl-p.log" | tail -1 | awk '{print $NF}')" || return 1
	ctl_proc_wait p '(msg=started|"msg":"started")'
}

teardown_file() {
	local status=0
	ctl_proc_stop_all || status=1
	if [ "$status" -ne 0 ]; then
		cp "$DC_DIR/ctl-p.log" "${DC_DIR}.ctl-p.log" 2>/dev/null
		echo "controller log kept in ${DC_DIR}.ctl-p.log" >&2
	fi
	dc_stop || status=1
	return "$status"
}

teardown() {
	ctl_proc_sanitizer
}

W=20s

# can AS... -- VERB RESOURCE [ARGS]: kubectl auth can-i's answer.
can() {
	kubectl auth can-i "$@" 2>/dev/null
}

# project NAME [SPEC LINES]: applies Project NAME with its home namespace
# NAME and NAME-eval, owned by the group NAME-leads.
project() {
	local name="$1"
	shift
	kubectl apply -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: $name}
spec:
  owners: [{kind: Group, name: $name-leads}]
  namespaces: [{name: $name}, {name: $name-eval}]
  quota: {hard: {requests.nvidia.com/gpu: "16", pods: "64"}, maxGPUsPerRun: 8}
  memberPolicy: {subjectKinds: [User, Group], maxInvitationTTL: 2160h}
  isolation: {allowIngressFromNamespaces: [monitoring]}
$(printf '  %s\n' "$@")
EOF
}

# member NS NAME USER ROLE [EXPIRES]: a ProjectMember of user USER.
member() {
	kubectl apply -n "$1" -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: $2}
spec:
  subject: {kind: User, name: $3}
  role: $4
${5:+  expiresAt: "$5"}
EOF
}

# pm NS NAME JSONPATH
pm() {
	kubectl get projectmember "$2" -n "$1" -o jsonpath="$3"
}

# prun NS NAME PROFILE SECONDS [ANNOTATION]: a 1-node Run of PROFILE ("" for
# none) whose pods run SECONDS, with ANNOTATION ("key: value") if given.
prun() {
	kubectl apply -n "$1" -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata:
  name: $2
${5:+  annotations: {$5\}}
spec:
  nodes: 1
${3:+  profile: $3}
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "$4"}
EOF
}

# quota NS RUN FIELD: a field of the Run's QuotaReserved condition.
quota() {
	kubectl get run "$2" -n "$1" \
	    -o jsonpath="{.status.conditions[?(@.type==\"QuotaReserved\")].$3}"
}

# quota_wait NS RUN STATUS REASON
quota_wait() {
	local i
	for i in $(seq 200); do
		[ "$(quota "$1" "$2" status)/$(quota "$1" "$2" reason)" = "$3/$4" ] && return 0
		sleep 0.1
	done
	echo "run $1/$2: QuotaReserved $(quota "$1" "$2" status)/$(quota "$1" "$2" reason):" \
	    "$(quota "$1" "$2" message)" >&2
	return 1
}

# pods_of NS RUN: the names of the Run's pods.
pods_of() {
	kubectl get pods -n "$1" -l trainyard.dev/run="$2" -o name
}

@test "a Project creates its namespaces, quota, policies, owners' binding and reader role" {
	kubectl create namespace llm-eval
	project llm
	kubectl wait --for=condition=Ready project/llm --timeout=$W
	[ "$(kubectl get project llm -o jsonpath='{.status.phase}')" = Active ]
	[ "$(kubectl get project llm -o jsonpath='{.status.observedGeneration}')" = 1 ]
	kubectl get project llm -o jsonpath='{.metadata.finalizers}' | grep -q trainyard.dev/project
	for ns in llm llm-eval; do
		# llm-eval existed without a project label: adopted.
		[ "$(kubectl get ns "$ns" -o jsonpath='{.metadata.labels.trainyard\.dev/project}')" = llm ]
		[ "$(kubectl get quota trainyard-project -n "$ns" -o jsonpath='{.spec.hard.pods}')" = 64 ]
		kubectl get networkpolicy -n "$ns" trainyard-project-isolation \
		    trainyard-project-allowed-namespaces >/dev/null
		[ "$(kubectl get rolebinding trainyard-project-owners -n "$ns" \
		    -o jsonpath='{.roleRef.name} {.subjects[0].kind}/{.subjects[0].name}')" = \
		    "trainyard-project-admin Group/llm-leads" ]
	done
	[ "$(kubectl get project llm -o jsonpath='{.status.namespaces[*].ready}')" = "true true" ]
	# An owner administers the project and may read its Project, not another's.
	[ "$(can create projectmembers.trainyard.dev -n llm --as bob --as-group llm-leads)" = yes ]
	[ "$(can create runs.trainyard.dev -n llm-eval --as bob --as-group llm-leads)" = yes ]
	[ "$(can get projects.trainyard.dev/llm --as bob --as-group llm-leads)" = yes ]
	[ "$(can update projects.trainyard.dev/llm --as bob --as-group llm-leads)" = no ]
	[ "$(can create pods -n llm --as bob --as-group llm-leads)" = no ]
	[ "$(can create runs.trainyard.dev -n default --as bob --as-group llm-leads)" = no ]
}

@test "a namespace of another project is left alone and named in NamespacesReady" {
	# llm-eval is not "other-*": the controller refuses the spec, changes nothing.
	kubectl apply -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: other}
spec:
  namespaces: [{name: other}, {name: llm-eval}]
EOF
	kubectl wait --for=condition=Ready=False project/other --timeout=$W
	[ "$(kubectl get project other -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')" = InvalidSpec ]
	run kubectl get ns other
	[ "$status" -ne 0 ]
	kubectl delete project other --wait --timeout=$W
	# A namespace the project may list, labelled for another project.
	kubectl create namespace taken-x
	kubectl label namespace taken-x trainyard.dev/project=someone-else
	kubectl apply -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: taken}
spec:
  namespaces: [{name: taken}, {name: taken-x}]
EOF
	kubectl wait --for=condition=NamespacesReady=False project/taken --timeout=$W
	run kubectl get project taken -o jsonpath='{.status.conditions[?(@.type=="NamespacesReady")].message}'
	[ "$output" = "namespace taken-x belongs to project someone-else" ]
	[ "$(kubectl get ns taken-x -o jsonpath='{.metadata.labels.trainyard\.dev/project}')" = someone-else ]
	run kubectl get quota -n taken-x -o name
	[ -z "$output" ]
	kubectl delete project taken --wait --timeout=$W
}

@test "drift is restored: a deleted binding, an edited quota and policy come back" {
	uid="$(kubectl get rolebinding trainyard-project-owners -n llm-eval -o jsonpath='{.metadata.uid}')"
	kubectl delete rolebinding trainyard-project-owners -n llm-eval
	kubectl wait --for=create rolebinding/trainyard-project-owners -n llm-eval --timeout=$W
	[ "$(kubectl get rolebinding trainyard-project-owners -n llm-eval -o jsonpath='{.metadata.uid}')" != "$uid" ]
	kubectl patch quota trainyard-project -n llm --type merge -p '{"spec":{"hard":{"pods":"1"}}}'
	kubectl wait --for=jsonpath='{.spec.hard.pods}'=64 quota/trainyard-project -n llm --timeout=$W
	kubectl patch networkpolicy trainyard-project-isolation -n llm --type merge \
	    -p '{"spec":{"podSelector":{"matchExpressions":null,"matchLabels":{"x":"y"}}}}'
	kubectl wait --for=jsonpath='{.spec.podSelector.matchExpressions[0].operator}'=DoesNotExist \
	    networkpolicy/trainyard-project-isolation -n llm --timeout=$W
	# Someone took the labels off: the controller finds it and puts them back.
	kubectl label rolebinding trainyard-project-owners -n llm trainyard.dev/project-
	kubectl wait --for=jsonpath='{.metadata.labels.trainyard\.dev/project}'=llm \
	    rolebinding/trainyard-project-owners -n llm --timeout=$W
}

@test "a researcher binds in every namespace: Runs yes; pods, RoleBindings, quotas no" {
	member llm alice alice researcher
	kubectl wait -n llm --for=condition=Ready projectmember/alice --timeout=$W
	[ "$(pm llm alice '{.status.namespaces}')" = '["llm","llm-eval"]' ]
	[ "$(pm llm alice '{.status.conditions[0].reason}')" = Bound ]
	kubectl get projectmember alice -n llm -o jsonpath='{.metadata.finalizers}' |
	    grep -q trainyard.dev/project-member
	for ns in llm llm-eval; do
		[ "$(kubectl get rolebinding trainyard-researcher-alice -n "$ns" \
		    -o jsonpath='{.roleRef.name} {.subjects[0].name}')" = \
		    "trainyard-project-researcher alice" ]
		[ "$(can create runs.trainyard.dev -n "$ns" --as alice)" = yes ]
		[ "$(can create pods --subresource=exec -n "$ns" --as alice)" = yes ]
		[ "$(can create pods -n "$ns" --as alice)" = no ]
		[ "$(can create rolebindings -n "$ns" --as alice)" = no ]
		[ "$(can update resourcequotas -n "$ns" --as alice)" = no ]
		[ "$(can create networkpolicies -n "$ns" --as alice)" = no ]
		[ "$(can create projectmembers.trainyard.dev -n "$ns" --as alice)" = no ]
	done
	[ "$(can create runs.trainyard.dev -n default --as alice)" = no ]
	# The reader binding follows the members.
	kubectl wait --for=jsonpath='{.subjects[1].name}'=alice \
	    clusterrolebinding/trainyard-project-reader:llm --timeout=$W
	[ "$(can get projects.trainyard.dev/llm --as alice)" = yes ]
	[ "$(kubectl get project llm -o jsonpath='{.status.members.researchers}')" = 1 ]

	member llm bob bob viewer
	kubectl wait -n llm --for=condition=Ready projectmember/bob --timeout=$W
	[ "$(can get pods --subresource=log -n llm-eval --as bob)" = yes ]
	[ "$(can list runs.trainyard.dev -n llm --as bob)" = yes ]
	[ "$(can create runs.trainyard.dev -n llm --as bob)" = no ]
	[ "$(can delete runs.trainyard.dev -n llm --as bob)" = no ]
}

@test "the controller's own checks: a duplicate subject and a member outside the home namespace" {
	member llm alice-again alice admin
	kubectl wait -n llm --for=condition=Ready=False projectmember/alice-again --timeout=$W
	[ "$(pm llm alice-again '{.status.conditions[0].reason}')" = DuplicateSubject ]
	run kubectl get rolebinding trainyard-admin-alice-again -n llm
	[ "$status" -ne 0 ]
	# The oldest keeps its binding: alice is still a researcher only.
	[ "$(can create projectmembers.trainyard.dev -n llm --as alice)" = no ]
	member llm-eval dave dave researcher
	kubectl wait -n llm-eval --for=condition=Ready=False projectmember/dave --timeout=$W
	[ "$(pm llm-eval dave '{.status.conditions[0].reason}')" = NotHomeNamespace ]
	[ "$(can create runs.trainyard.dev -n llm --as dave)" = no ]
	member default erin erin researcher
	kubectl wait -n default --for=condition=Ready=False projectmember/erin --timeout=$W
	[ "$(pm default erin '{.status.conditions[0].reason}')" = ProjectNotFound ]
	kubectl delete projectmember alice-again -n llm --wait --timeout=$W
	kubectl delete projectmember dave -n llm-eval --wait --timeout=$W
	kubectl delete projectmember erin -n default --wait --timeout=$W
}

@test "a role change binds the new role before the old binding goes" {
	kubectl patch projectmember alice -n llm --type merge -p '{"spec":{"role":"admin"}}'
	kubectl wait --for=create rolebinding/trainyard-admin-alice -n llm-eval --timeout=$W
	kubectl wait --for=delete rolebinding/trainyard-researcher-alice -n llm --timeout=$W
	kubectl wait --for=delete rolebinding/trainyard-researcher-alice -n llm-eval --timeout=$W
	kubectl wait -n llm --for=jsonpath='{.status.observedGeneration}'=2 projectmember/alice \
	    --timeout=$W
	[ "$(can create projectmembers.trainyard.dev -n llm --as alice)" = yes ]
}

@test "expiry removes access on time; the member stays; deletion removes the bindings" {
	local at
	at="$(date -u -d '+4 seconds' +%Y-%m-%dT%H:%M:%SZ)"
	member llm carol carol researcher "$at"
	kubectl wait -n llm --for=condition=Ready projectmember/carol --timeout=$W
	[ "$(can create runs.trainyard.dev -n llm --as carol)" = yes ]
	kubectl wait -n llm --for=condition=Ready=False projectmember/carol --timeout=$W
	[ "$(pm llm carol '{.status.conditions[0].reason}')" = Expired ]
	[ "$(date -u +%s)" -ge "$(date -u -d "$at" +%s)" ]
	[ "$(can create runs.trainyard.dev -n llm --as carol)" = no ]
	run kubectl get rolebindings -n llm -l trainyard.dev/member=carol -o name
	[ -z "$output" ]
	kubectl wait --for=jsonpath='{.status.members.expired}'=1 project/llm --timeout=$W

	kubectl delete projectmember bob -n llm --wait --timeout=$W
	run kubectl get rolebindings -A -l trainyard.dev/member=bob -o name
	[ -z "$output" ]
	[ "$(can list runs.trainyard.dev -n llm --as bob)" = no ]
}

@test "deleting a Project removes what it made; namespaces stay unless Delete" {
	kubectl delete project llm --wait --timeout=$W
	run kubectl get rolebindings,networkpolicies,resourcequotas -A -l trainyard.dev/project=llm -o name
	echo "left: $output"
	[ -z "$output" ]
	# Its members stay, without a project.
	kubectl wait -n llm --for=jsonpath='{.status.conditions[0].reason}'=ProjectNotFound \
	    projectmember/alice --timeout=$W
	run kubectl get clusterrole,clusterrolebinding trainyard-project-reader:llm
	[ "$status" -ne 0 ]
	kubectl get ns llm llm-eval >/dev/null
	[ "$(can create runs.trainyard.dev -n llm --as alice)" = no ]

	project gone "deletionPolicy: {namespaces: Delete}"
	kubectl wait --for=condition=Ready project/gone --timeout=$W
	kubectl delete project gone --wait --timeout=$W
	kubectl wait --for=delete namespace/gone namespace/gone-eval --timeout=$W
}

@test "deletionPolicy.runs WaitForCompletion: the Project goes once its Runs ended" {
	project waits "deletionPolicy: {runs: WaitForCompletion, namespaces: Delete}"
	kubectl wait --for=condition=Ready project/waits --timeout=$W
	kubectl apply -n waits-eval -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: r}
spec:
  nodes: 1
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "4"}
EOF
	kubectl wait -n waits-eval --for=jsonpath='{.status.phase}'=Running rn/r --timeout=$W
	kubectl delete project waits --wait=false
	# While the Run runs, nothing goes.
	[ "$(kubectl get run r -n waits-eval -o jsonpath='{.status.phase}')" = Running ]
	kubectl get project waits -o jsonpath='{.metadata.deletionTimestamp}' | grep -q .
	kubectl get rolebinding trainyard-project-owners -n waits-eval >/dev/null
	kubectl get ns waits-eval -o jsonpath='{.status.phase}' | grep -qx Active
	kubectl wait -n waits-eval --for=jsonpath='{.status.phase}'=Succeeded rn/r --timeout=$W
	kubectl wait --for=delete project/waits --timeout=$W
	kubectl wait --for=delete namespace/waits namespace/waits-eval --timeout=$W
}

@test "a namespace the Project no longer lists is cleared and released, not deleted" {
	project shrink
	kubectl wait --for=condition=Ready project/shrink --timeout=$W
	kubectl patch project shrink --type merge -p '{"spec":{"namespaces":[{"name":"shrink"}]}}'
	kubectl wait --for=delete quota/trainyard-project rolebinding/trainyard-project-owners \
	    networkpolicy/trainyard-project-isolation -n shrink-eval --timeout=$W
	for i in $(seq 100); do
		[ -z "$(kubectl get ns shrink-eval -o jsonpath='{.metadata.labels.trainyard\.dev/project}')" ] &&
		    break
		sleep 0.05
	done
	[ -z "$(kubectl get ns shrink-eval -o jsonpath='{.metadata.labels.trainyard\.dev/project}')" ]
	kubectl wait --for=jsonpath='{.status.observedGeneration}'=2 project/shrink --timeout=$W
	[ "$(kubectl get project shrink -o jsonpath='{.status.namespaces[*].name}')" = shrink ]
	kubectl delete project shrink --wait --timeout=$W
}

@test "quota: a Run that does not fit waits with no pods, first come first served, and starts when quota frees" {
	project q "resourceProfiles: {allowed: [gpu-8, gpu-2], default: gpu-8}"
	kubectl wait --for=condition=Ready project/q --timeout=$W
	prun q a gpu-8 8
	prun q-eval b gpu-8 600
	quota_wait q a True QuotaReserved
	quota_wait q-eval b True QuotaReserved
	# 16 of 16 GPUs held, over both namespaces: c (the default profile, 8)
	# waits, and d (2 GPUs, submitted after c) waits behind it.
	prun q c "" 600
	quota_wait q c False QuotaExceeded
	prun q d gpu-2 600
	quota_wait q d False QuotaExceeded
	quota q c message | grep -F 'needs 8 requests.nvidia.com/gpu; 0 of 16 are free'
	quota q d message | grep -F 'behind 1 earlier Run (first: q/c)'
	[ "$(kubectl get run c -n q -o jsonpath='{.status.phase}/{.status.reason}')" = \
	    Pending/QuotaExceeded ]
	[ -z "$(pods_of q c)" ]
	[ -z "$(pods_of q d)" ]
	[ "$(kubectl get run a -n q -o jsonpath='{.status.quota.reserved.requests\.nvidia\.com/gpu}')" = 8 ]
	kubectl wait --for=jsonpath='{.status.usage.gpus}'=16/16 project/q --timeout=$W
	kubectl wait --for=jsonpath='{.status.runs.waiting}'=2 project/q --timeout=$W
	[ "$(kubectl get project q -o jsonpath='{.status.runs.active}')" = 2 ]
	# a ends and is cleaned up: c, first in line, starts; d still waits.
	kubectl wait -n q --for=jsonpath='{.status.phase}'=Succeeded rn/a --timeout=$W
	quota_wait q c True QuotaReserved
	quota_wait q a False Released
	kubectl wait -n q --for=jsonpath='{.status.phase}'=Running rn/c --timeout=$W
	[ "$(quota q d reason)" = QuotaExceeded ]
	[ -z "$(pods_of q d)" ]
	# Deleting b frees 8: d starts.
	kubectl delete run b -n q-eval --wait=false
	quota_wait q d True QuotaReserved
	kubectl wait --for=jsonpath='{.status.usage.gpus}'=10/16 project/q --timeout=$W
	kubectl delete runs --all -n q --wait=false
}

@test "quota: maxGPUsPerRun, allowed profiles, a quota it can never fit: invalid with the reason" {
	project qv "resourceProfiles: {allowed: [gpu-8, gpu-2]}"
	kubectl wait --for=condition=Ready project/qv --timeout=$W
	kubectl apply -n qv -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: big}
spec:
  nodes: 2
  profile: gpu-8
  container: {image: busybox}
EOF
	prun qv cpu cpu-small 600
	kubectl wait -n qv --for=jsonpath='{.status.reason}'=InvalidSpec rn/big rn/cpu --timeout=$W
	kubectl get run big -n qv -o jsonpath='{.status.message}' |
	    grep -F 'the Run asks for 16 GPUs (2 nodes of 8); project qv allows at most 8 per Run'
	kubectl get run cpu -n qv -o jsonpath='{.status.message}' |
	    grep -F 'ResourceProfile "cpu-small" is not allowed in project qv (allowed: gpu-8, gpu-2)'
	[ -z "$(pods_of qv big)$(pods_of qv cpu)" ]
	# More than the whole quota: can never start.
	kubectl patch project qv --type merge -p '{"spec":{"quota":{"hard":{"requests.nvidia.com/gpu":"4"}}}}'
	prun qv eight gpu-8 600
	kubectl wait -n qv --for=jsonpath='{.status.reason}'=InvalidSpec rn/eight --timeout=$W
	kubectl get run eight -n qv -o jsonpath='{.status.message}' |
	    grep -F 'needs 8 requests.nvidia.com/gpu, more than the quota of 4 in project qv'
	# The quota grows: the same Run starts.
	kubectl patch project qv --type merge -p '{"spec":{"quota":{"hard":{"requests.nvidia.com/gpu":"16"}}}}'
	quota_wait qv eight True QuotaReserved
	kubectl delete runs --all -n qv --wait=false
}

@test "quota: a member's maxGPUs caps what their Runs hold; others are not held up" {
	project qm
	kubectl wait --for=condition=Ready project/qm --timeout=$W
	kubectl apply -n qm -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: carol}
spec: {subject: {kind: User, name: carol}, role: researcher, maxGPUs: 8}
EOF
	kubectl wait -n qm --for=condition=Ready projectmember/carol --timeout=$W
	# Without the mutating webhook the annotation is the client's (the
	# webhooks' test shows it cannot be forged once they are installed).
	prun qm c1 gpu-8 600 'trainyard.dev/submitted-by: carol'
	quota_wait qm c1 True QuotaReserved
	prun qm c2 gpu-2 600 'trainyard.dev/submitted-by: carol'
	quota_wait qm c2 False MemberQuotaExceeded
	quota qm c2 message |
	    grep -F "waiting for carol's GPUs in project qm: this Run needs 2, their Runs hold 8 of 8"
	[ -z "$(pods_of qm c2)" ]
	# Someone else's Run, submitted after c2, is not held up behind it.
	prun qm d1 gpu-2 600 'trainyard.dev/submitted-by: dave'
	quota_wait qm d1 True QuotaReserved
	# Asking more than the cap at all: invalid.
	kubectl patch projectmember carol -n qm --type merge -p '{"spec":{"maxGPUs":1}}'
	kubectl delete run c1 -n qm --wait=false
	kubectl wait -n qm --for=jsonpath='{.status.reason}'=InvalidSpec rn/c2 --timeout=$W
	kubectl get run c2 -n qm -o jsonpath='{.status.message}' |
	    grep -F 'the Run asks for 2 GPUs; its submitter carol may hold at most 1 in project qm'
	kubectl delete runs --all -n qm --wait=false
}

@test "suspend: Hold admits no new session, Drain stops running ones, None resumes both" {
	project hold
	kubectl wait --for=condition=Ready project/hold --timeout=$W
	prun hold a gpu-2 600
	kubectl wait -n hold --for=jsonpath='{.status.phase}'=Running rn/a --timeout=$W
	kubectl patch project hold --type merge -p '{"spec":{"suspend":"Hold"}}'
	kubectl wait --for=jsonpath='{.status.phase}'=Suspended project/hold --timeout=$W
	prun hold b gpu-2 600
	quota_wait hold b False ProjectSuspended
	quota hold b message | grep -F 'project hold is suspended (suspend: Hold): no new sessions start'
	[ -z "$(pods_of hold b)" ]
	[ "$(kubectl get run a -n hold -o jsonpath='{.status.phase}')" = Running ]
	kubectl patch project hold --type merge -p '{"spec":{"suspend":"Drain"}}'
	kubectl wait -n hold --for=jsonpath='{.status.reason}'=ProjectSuspended rn/a --timeout=$W
	[ "$(kubectl get run a -n hold -o jsonpath='{.status.phase}')" = Stopped ]
	kubectl wait -n hold --for=delete pod/a-0 --timeout=$W
	quota_wait hold a False ProjectSuspended
	kubectl patch project hold --type merge -p '{"spec":{"suspend":"None"}}'
	kubectl wait -n hold --for=jsonpath='{.status.phase}'=Running rn/a rn/b --timeout=$W
	[ "$(kubectl get run a -n hold -o jsonpath='{.status.session}')" = 2 ]
	kubectl delete runs --all -n hold --wait=false
}

@test "deletionPolicy.runs Cancel: deleting the Project stops its Runs through their cleanup, then goes" {
	project cancel
	kubectl wait --for=condition=Ready project/cancel --timeout=$W
	prun cancel-eval r gpu-2 600
	kubectl wait -n cancel-eval --for=jsonpath='{.status.phase}'=Running rn/r --timeout=$W
	kubectl delete project cancel --wait=false
	kubectl wait -n cancel-eval --for=jsonpath='{.status.reason}'=ProjectDeleted rn/r --timeout=$W
	[ "$(kubectl get run r -n cancel-eval -o jsonpath='{.status.phase}')" = Stopped ]
	kubectl wait --for=delete project/cancel --timeout=$W
	[ -z "$(pods_of cancel-eval r)" ]
	# The namespaces stay (Retain), and so does the Run, for the record.
	kubectl get ns cancel cancel-eval >/dev/null
	kubectl get run r -n cancel-eval >/dev/null
	kubectl delete ns cancel cancel-eval --wait=false
}

@test "a removed member's running Runs keep running" {
	project keep
	kubectl wait --for=condition=Ready project/keep --timeout=$W
	member keep erin erin researcher
	kubectl wait -n keep --for=condition=Ready projectmember/erin --timeout=$W
	prun keep e gpu-2 600 'trainyard.dev/submitted-by: erin'
	kubectl wait -n keep --for=jsonpath='{.status.phase}'=Running rn/e --timeout=$W
	uid="$(kubectl get pod e-0 -n keep -o jsonpath='{.metadata.uid}')"
	kubectl delete projectmember erin -n keep --wait --timeout=$W
	[ "$(can create runs.trainyard.dev -n keep --as erin)" = no ]
	sleep 1
	[ "$(kubectl get run e -n keep -o jsonpath='{.status.phase}/{.status.session}')" = Running/1 ]
	[ "$(kubectl get pod e-0 -n keep -o jsonpath='{.metadata.uid}')" = "$uid" ]
	kubectl delete runs --all -n keep --wait=false
}

@test "not one request of the controller was refused" {
	stats="$(kubectl get --raw /devcluster/stats)"
	echo "$stats" | jq -c '.byCode, (.requests[] | select(.code == 403))'
	[ "$(jq '.byCode["403"] // 0' <<<"$stats")" = 0 ]
	# No write loops: a handful of updates (drift, adoption, status) in the whole file.
	jq -c '[.requests[] | select(.verb == "update" or .verb == "patch") |
	    {verb, resource, code, count}]' <<<"$stats" >&3
	n="$(jq '[.requests[] | select(.verb == "update" and
	    (.resource | test("^(rolebindings|clusterrolebindings|clusterroles|resourcequotas|networkpolicies)"))) |
	    .count] | add // 0' <<<"$stats")"
	echo "object updates: $n" >&3
	[ "$n" -le 20 ]
	run grep -ci forbidden "$DC_DIR/ctl-p.log"
	[ "$output" = 0 ]
}

@test "admission webhooks: attribution cannot be forged, the policy refuses at apply time" {
	project adm
	kubectl wait --for=condition=Ready project/adm --timeout=$W
	kubectl apply -f "$DC_REPO/manifests/webhooks.yaml"
	# The controller writes its CA into both configurations.
	kubectl wait --for=jsonpath='{.webhooks[0].clientConfig.caBundle}' --timeout=$W \
	    mutatingwebhookconfiguration/trainyard-projects
	kubectl wait --for=jsonpath='{.webhooks[0].clientConfig.caBundle}' --timeout=$W \
	    validatingwebhookconfiguration/trainyard-projects
	local expires
	expires="$(date -u -d '+30 days' +%Y-%m-%dT%H:%M:%SZ)"
	# An owner invites, claiming someone else did: the API server's user counts.
	kubectl apply -n adm --as bob --as-group adm-leads -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata:
  name: frank
  annotations: {trainyard.dev/invited-by: mallory}
spec: {subject: {kind: User, name: frank}, role: viewer, expiresAt: "$expires"}
EOF
	[ "$(pm adm frank '{.metadata.annotations.trainyard\.dev/invited-by}')" = bob ]
	kubectl wait -n adm --for=jsonpath='{.status.invitedBy}'=bob projectmember/frank \
	    --timeout=$W
	run kubectl apply -n adm --as bob --as-group adm-leads -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: root}
spec: {subject: {kind: Group, name: "system:masters"}, role: admin}
EOF
	[ "$status" -ne 0 ]
	[[ "$output" == *'admission webhook "policy.projects.trainyard.dev" denied the request'* ]]
	run kubectl get projectmember root -n adm
	[ "$status" -ne 0 ]
	kubectl delete -f "$DC_REPO/manifests/webhooks.yaml"
	kubectl delete project adm --wait --timeout=$W
	# The controller's own calls (caBundle patches included) were never refused.
	run grep -ci forbidden "$DC_DIR/ctl-p.log"
	[ "$output" = 0 ]
}
