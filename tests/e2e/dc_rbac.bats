#!/usr/bin/env bats
#
# dc_rbac.bats: the real kubectl against RBAC on a trainyard-devcluster:
# 403 messages, Roles and ClusterRoles bound to users, groups and service
# accounts, aggregation into the default view role, resourceNames,
# nonResourceURLs, kubectl auth can-i (SelfSubjectAccessReview and, with
# --list, SelfSubjectRulesReview), kubectl auth whoami
# (SelfSubjectReview), and impersonation authorized by RBAC.
#
# Users come from a --token-auth-file: alice (group devs) and bob; the
# kubeconfig's admin is in system:masters.

load devcluster

setup_file() {
	printf 'tok-alice,alice,u-alice,"devs"\ntok-bob,bob,u-bob\n' \
	    >"$BATS_FILE_TMPDIR/tokens"
	dc_start --kubernetes-version 1.32 --token-auth-file "$BATS_FILE_TMPDIR/tokens"
}

teardown_file() {
	dc_stop
}

@test "alice may not list pods: kube-apiserver's 403" {
	run kubectl --token=tok-alice get pods
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"' ]
	run kubectl auth can-i list pods --as alice
	[ "$output" = no ]
}

@test "a Role and RoleBinding grant it, in their namespace only" {
	kubectl create role pod-reader --verb=get,list,watch --resource=pods
	kubectl create rolebinding alice-pods --role=pod-reader --user=alice
	kubectl --token=tok-alice get pods
	run kubectl auth can-i list pods --as alice
	[ "$output" = yes ]
	run kubectl auth can-i list pods --as alice -n kube-system
	[ "$output" = no ]
	run kubectl auth can-i list pods --as bob
	[ "$output" = no ]
	run kubectl --token=tok-alice auth can-i delete pods
	[ "$output" = no ]
}

@test "kubectl auth can-i --list shows the rules review" {
	run kubectl --token=tok-alice auth can-i --list
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^pods +\[\] +\[\] +\[get list watch\]'
	echo "$output" | grep -E '^selfsubjectaccessreviews.authorization.k8s.io +\[\] +\[\] +\[create\]'
	echo "$output" | grep -E '^ +\[/api/\*\] +\[\] +\[get\]'
}

@test "a group binding grants to every member" {
	kubectl create namespace team
	kubectl create rolebinding devs-edit --clusterrole=edit --group=devs -n team
	run kubectl --token=tok-alice auth can-i create configmaps -n team
	[ "$output" = yes ]
	kubectl --token=tok-alice create configmap c1 -n team
	run kubectl --token=tok-bob auth can-i create configmaps -n team
	[ "$output" = no ]
	run kubectl auth can-i create configmaps -n team --as carol --as-group devs
	[ "$output" = yes ]
}

@test "a ServiceAccount subject and resourceNames" {
	kubectl create configmap cm1 --from-literal=a=b
	kubectl create configmap cm2 --from-literal=a=b
	kubectl create role one-cm --verb=get --resource=configmaps --resource-name=cm1
	kubectl create rolebinding sa1-one --role=one-cm --serviceaccount=default:sa1
	run kubectl auth can-i get configmaps/cm1 --as system:serviceaccount:default:sa1
	[ "$output" = yes ]
	run kubectl auth can-i get configmaps/cm2 --as system:serviceaccount:default:sa1
	[ "$output" = no ]
	run kubectl auth can-i list configmaps --as system:serviceaccount:default:sa1
	[ "$output" = no ]
	kubectl --as system:serviceaccount:default:sa1 get configmap cm1
	run kubectl --as system:serviceaccount:default:sa1 get configmap cm2
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'configmaps "cm2" is forbidden: User "system:serviceaccount:default:sa1" cannot get resource "configmaps" in API group "" in the namespace "default"'
}

@test "a ClusterRole labelled aggregate-to-view extends view, edit and admin" {
	kubectl apply -f - <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
	kubectl wait --for=condition=Established --timeout=20s crd/widgets.example.com
	kubectl create clusterrolebinding bob-view --clusterrole=view --user=bob
	run kubectl auth can-i list widgets.example.com --as bob
	[ "$output" = no ]
	kubectl create clusterrole widgets-view --verb=get,list,watch --resource=widgets.example.com
	kubectl label clusterrole widgets-view rbac.authorization.k8s.io/aggregate-to-view=true
	run kubectl auth can-i list widgets.example.com --as bob
	[ "$output" = yes ]
	kubectl --token=tok-bob get widgets -A
	kubectl get clusterrole admin -o jsonpath='{.rules[*].resources}' | grep -F widgets
	run kubectl --token=tok-bob delete widget nope
	echo "$output" | grep -F 'widgets.example.com "nope" is forbidden: User "bob" cannot delete resource "widgets" in API group "example.com" in the namespace "default"'
	kubectl delete clusterrole widgets-view
	run kubectl auth can-i list widgets.example.com --as bob
	[ "$output" = no ]
}

@test "nonResourceURLs" {
	run kubectl auth can-i get /metrics --as bob
	[ "$output" = no ]
	kubectl create clusterrole metrics --verb=get --non-resource-url='/metrics*'
	kubectl create clusterrolebinding bob-metrics --clusterrole=metrics --user=bob
	run kubectl auth can-i get /metrics/x --as bob
	[ "$output" = yes ]
	run kubectl auth can-i get /version --as bob
	[ "$output" = yes ]
}

@test "kubectl auth whoami" {
	run kubectl --token=tok-alice auth whoami
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^Username +alice$'
	echo "$output" | grep -E '^UID +u-alice$'
	echo "$output" | grep -E '^Groups +\[devs system:authenticated\]$'
	run kubectl auth whoami --as bob
	echo "$output" | grep -E '^Username +bob$'
}

@test "impersonation: denied to alice, allowed to the admin and by a role" {
	run kubectl --token=tok-alice --as=bob get ns default
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope' ]
	run kubectl --as=dave get pods
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'pods is forbidden: User "dave" cannot list resource "pods"'
	kubectl --as=alice get pods
	kubectl create clusterrole impersonate-bob --verb=impersonate --resource=users --resource-name=bob
	kubectl create clusterrolebinding alice-imp --clusterrole=impersonate-bob --user=alice
	run kubectl --token=tok-alice auth whoami --as=bob
	echo "$output" | grep -E '^Username +bob$'
	run kubectl --token=tok-alice --as=carol get ns default
	echo "$output" | grep -F 'users "carol" is forbidden'
}

# Escalation prevention: lead may write Roles and RoleBindings in esc, and
# read pods there; nothing else.
@test "escalation: setup of a namespace lead administers" {
	kubectl create namespace esc
	kubectl create role rbac-writer -n esc --verb=create,get,list,update,patch,delete \
	    --resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io
	kubectl create rolebinding lead-rbac -n esc --role=rbac-writer --user=lead
	kubectl create role lead-pods -n esc --verb=get,list --resource=pods
	kubectl create rolebinding lead-pods -n esc --role=lead-pods --user=lead
	run kubectl auth can-i create rolebindings -n esc --as lead
	[ "$output" = yes ]
}

@test "escalation: binding cluster-admin is refused with kube-apiserver's message" {
	run kubectl --as lead create rolebinding grab -n esc --clusterrole=cluster-admin --user=eve
	[ "$status" -ne 0 ]
	[ "$output" = 'error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "lead" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}' ]
	run kubectl get rolebinding grab -n esc
	[ "$status" -ne 0 ]
	run kubectl --as lead create rolebinding grab -n esc --clusterrole=view --user=eve
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "lead" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:'
	echo "$output" | grep -Fx '{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "watch"]}'
	echo "$output" | grep -Fx '{APIGroups:[""], Resources:["pods"], Verbs:["watch"]}'
}

@test "escalation: a role whose permissions lead holds may be bound" {
	kubectl create role pod-reader -n esc --verb=get --resource=pods
	kubectl --as lead create rolebinding eve-pods -n esc --role=pod-reader --user=eve
	run kubectl auth can-i get pods -n esc --as eve
	[ "$output" = yes ]
	run kubectl --as lead create rolebinding nx -n esc --role=nope --user=eve
	[ "$status" -ne 0 ]
	[ "$output" = 'error: failed to create rolebinding: roles.rbac.authorization.k8s.io "nope" not found' ]
}

@test "escalation: the bind verb on one role's name allows binding that role only" {
	kubectl create role bind-view -n esc --verb=bind \
	    --resource=clusterroles.rbac.authorization.k8s.io --resource-name=view
	kubectl create rolebinding lead-bind -n esc --role=bind-view --user=lead
	kubectl --as lead create rolebinding eve-view -n esc --clusterrole=view --user=eve
	run kubectl auth can-i list configmaps -n esc --as eve
	[ "$output" = yes ]
	run kubectl --as lead create rolebinding eve-edit -n esc --clusterrole=edit --user=eve
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'rolebindings.rbac.authorization.k8s.io "eve-edit" is forbidden: user "lead"'
}

@test "escalation: a role granting more than lead holds is refused, escalate allows it" {
	run kubectl --as lead create role secrets -n esc --verb=get,list --resource=secrets,pods
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): roles.rbac.authorization.k8s.io "secrets" is forbidden: user "lead" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}' ]
	kubectl --as lead create role pods-only -n esc --verb=get,list --resource=pods
	run kubectl --as lead --as-group ops create role pods-watch -n esc --verb=watch --resource=pods
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'user "lead" (groups=["ops" "system:authenticated"])'
	kubectl create role escalate -n esc --verb=escalate --resource=roles.rbac.authorization.k8s.io
	kubectl create rolebinding lead-escalate -n esc --role=escalate --user=lead
	kubectl --as lead create role secrets -n esc --verb=get,list --resource=secrets,pods
	kubectl get role secrets -n esc
}

@test "impersonating groups: system:authenticated added, each group checked" {
	run kubectl auth whoami --as bob --as-group a
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^Groups +\[a system:authenticated\]$'
	kubectl create clusterrolebinding a-view --clusterrole=view --group=a
	run kubectl auth can-i list pods --as bob --as-group a
	[ "$output" = yes ]
	run kubectl --token=tok-alice --as=bob --as-group=a get pods
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): groups "a" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope' ]
}

@test "escalation: an aggregationRule needs cluster-admin's permissions" {
	kubectl create clusterrole cr-writer --verb=create,get,update \
	    --resource=clusterroles.rbac.authorization.k8s.io
	kubectl create clusterrolebinding lead-cr --clusterrole=cr-writer --user=lead
	run kubectl --as lead create clusterrole agg --aggregation-rule=team=x
	[ "$status" -ne 0 ]
	[ "$output" = 'Error from server (Forbidden): clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule' ]
	kubectl create clusterrole agg --aggregation-rule=team=x
}
