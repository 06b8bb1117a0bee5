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
# - not one request of the controller was refused (403);
# - an admin cannot bind cluster-admin or a role outside the three, nor can
#   the controller's own account (RBAC's escalation check): last, as it
#   makes refused requests on purpose.
#
# The controller's own checks are tested without the admission webhooks;
# one test installs them (manifests/webhooks.yaml): attribution from the
# API server's user, refusals at kubectl apply time.

load projects

setup_file() {
	projects_setup_file
}

teardown_file() {
	projects_teardown_file
}

teardown() {
	projects_teardown
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
	prun waits-eval r cpu-small 4
	kubectl wait -n waits-eval --for=jsonpath='{.status.phase}'=Running rn/r --timeout=$W
	# Every phase the Run goes through, until its namespace takes it away.
	kubectl get run r -n waits-eval -w -o jsonpath='{.status.phase}{"\n"}' \
	    >"$BATS_TEST_TMPDIR/phases" 2>/dev/null &
	kubectl delete project waits --wait=false
	# While the Run runs, nothing goes.
	[ "$(kubectl get run r -n waits-eval -o jsonpath='{.status.phase}')" = Running ]
	kubectl get project waits -o jsonpath='{.metadata.deletionTimestamp}' | grep -q .
	kubectl get rolebinding trainyard-project-owners -n waits-eval >/dev/null
	kubectl get ns waits-eval -o jsonpath='{.status.phase}' | grep -qx Active
	kubectl wait --for=delete project/waits --timeout=$W
	kubectl wait --for=delete namespace/waits namespace/waits-eval --timeout=$W
	kill %1 2>/dev/null || true
	# It ran to its end before anything went.
	grep -qx Succeeded "$BATS_TEST_TMPDIR/phases"
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

@test "not one request of the controller was refused" {
	projects_no_refusals
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

@test "an admin cannot bind cluster-admin or a role outside the three; neither can the controller" {
	project own
	kubectl wait --for=condition=Ready project/own --timeout=$W
	# Owners (the group own-leads) are project admins: they invite through
	# ProjectMembers only.
	[ "$(can create projectmembers.trainyard.dev -n own --as ann --as-group own-leads)" = yes ]
	run kubectl create rolebinding grab -n own --clusterrole=cluster-admin --user=eve \
	    --as ann --as-group own-leads
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'User "ann" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "own"'
	run kubectl apply -n own --as ann --as-group own-leads -f - <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: eve}
spec: {subject: {kind: User, name: eve}, role: cluster-admin}
EOF
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.role: Unsupported value: "cluster-admin"'
	# The controller's own account may bind the three project roles and
	# nothing else: RBAC's escalation check, with kube-apiserver's message.
	run kubectl --kubeconfig "$DC_DIR/sa.kubeconfig" create rolebinding grab -n own \
	    --clusterrole=cluster-admin --user=eve
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'is attempting to grant RBAC permissions not currently held'
	kubectl --kubeconfig "$DC_DIR/sa.kubeconfig" create rolebinding viewer-eve -n own \
	    --clusterrole=trainyard-project-viewer --user=eve
	kubectl delete rolebinding viewer-eve -n own
	kubectl delete project own --wait --timeout=$W
}
