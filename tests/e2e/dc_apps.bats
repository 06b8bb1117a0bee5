#!/usr/bin/env bats
# apps/v1 Deployments and ReplicaSets with the simulated deployment and
# replicaset controllers (devcluster/apps.c), and TokenReview
# (devcluster/authn.c), driven by the real kubectl: create and apply,
# the get tables, scale, a rolling update that a pod which never becomes
# Ready holds as maxUnavailable says, rollout status, history, undo
# (--to-revision), restart, Recreate, pause, validation messages,
# adoption of orphans, the cascade on delete; TokenReviews of a static, an invalid and a
# service-account token, and RBAC on tokenreviews.
#
# Pods start 100 ms after binding on the three nodes of nodes-small.yaml;
# a pod whose template sets devcluster.trainyard.dev/exit-code: "abc"
# never starts (CreateContainerConfigError), so it never becomes Ready.

load devcluster

setup_file() {
	dc_start --nodes "$DC_REPO/tests/fixtures/devcluster/nodes-small.yaml" \
	    --pod-start-delay 100ms
}

teardown_file() {
	dc_stop
}

# deploy NAME REPLICAS IMAGE [STRATEGY-YAML]: applies a Deployment app=NAME.
deploy() {
	local strategy="${4:-}"
	[ -n "$strategy" ] || strategy='{}'
	kubectl apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
spec:
  replicas: $2
  selector:
    matchLabels: {app: $1}
  strategy: $strategy
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
      - name: main
        image: $3
YAML
}

@test "kubectl create deployment: a ReplicaSet, pods, the tables, rollout status" {
	kubectl create deployment web --image=nginx:1.25 --replicas=3
	kubectl rollout status deployment/web --timeout=20s
	run kubectl get deploy web
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^NAME\ +READY\ +UP-TO-DATE\ +AVAILABLE\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^web\ +3/3\ +3\ +3\  ]]
	run kubectl get rs -l app=web -o wide
	[[ "${lines[0]}" =~ ^NAME\ +DESIRED\ +CURRENT\ +READY\ +AGE\ +CONTAINERS\ +IMAGES\ +SELECTOR$ ]]
	[[ "${lines[1]}" =~ ^web-[bcdfghjklmnpqrstvwxz2456789]+\ +3\ +3\ +3\ .*nginx\ +nginx:1.25\ +app=web,pod-template-hash= ]]
	rs="$(kubectl get rs -l app=web -o jsonpath='{.items[0].metadata.name}')"
	hash="${rs#web-}"
	[ "$(kubectl get rs "$rs" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].controller}')" = Deployment/true ]
	[ "$(kubectl get rs "$rs" -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')" = 1 ]
	[ "$(kubectl get rs "$rs" -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/max-replicas}')" = 4 ]
	run kubectl get pods -l "pod-template-hash=$hash" -o name
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" =~ ^pod/$rs-[a-z0-9]{5}$ ]]
	[ "$(kubectl get deploy web -o jsonpath='{.spec.strategy.rollingUpdate.maxSurge} {.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds}')" = "25% 10 600" ]
	[ "$(kubectl get deploy web -o jsonpath='{.status.conditions[?(@.type=="Progressing")].reason}')" = NewReplicaSetAvailable ]
	[ "$(kubectl get deploy web -o jsonpath='{.status.conditions[?(@.type=="Available")].reason}')" = MinimumReplicasAvailable ]
}

@test "kubectl scale: through the scale subresource, up and down" {
	kubectl scale deployment/web --replicas=5
	kubectl rollout status deployment/web --timeout=20s
	[ "$(kubectl get deploy web -o jsonpath='{.status.availableReplicas}')" = 5 ]
	kubectl scale deployment/web --replicas=2
	kubectl wait --for=jsonpath='{.status.replicas}'=2 deployment/web --timeout=20s
	run kubectl get --raw /apis/apps/v1/namespaces/default/deployments/web/scale
	[[ "$output" == *'"kind":"Scale","apiVersion":"autoscaling/v1"'* ]]
	[[ "$output" == *'"selector":"app=web"'* ]]
}

@test "rollout: history, undo, undo --to-revision, restart" {
	kubectl set image deployment/web nginx=nginx:1.26
	kubectl annotate deployment/web kubernetes.io/change-cause="nginx 1.26"
	kubectl rollout status deployment/web --timeout=20s
	run kubectl rollout history deployment/web
	[[ "$output" == *"1         <none>"* ]]
	[[ "$output" == *"2         nginx 1.26"* ]]
	run kubectl get rs -l app=web --no-headers
	[ "${#lines[@]}" -eq 2 ]
	run kubectl describe deployment web
	[[ "$output" =~ Normal\ +ScalingReplicaSet\ .*deployment-controller\ +Scaled\ up\ replica\ set\ web-[a-z0-9]+\ from\ 0\ to\ 1 ]]
	[[ "$output" =~ Scaled\ down\ replica\ set\ web-[a-z0-9]+\ from\ [0-9]+\ to\ 0 ]]
	run kubectl get events --field-selector reason=SuccessfulCreate -o jsonpath='{.items[0].source.component}'
	[ "$output" = replicaset-controller ]
	kubectl rollout undo deployment/web
	kubectl rollout status deployment/web --timeout=20s
	[ "$(kubectl get deploy web -o jsonpath='{.spec.template.spec.containers[0].image}')" = nginx:1.25 ]
	[ "$(kubectl get deploy web -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')" = 3 ]
	kubectl rollout undo deployment/web --to-revision=2
	kubectl rollout status deployment/web --timeout=20s
	[ "$(kubectl get deploy web -o jsonpath='{.spec.template.spec.containers[0].image}')" = nginx:1.26 ]
	run kubectl get rs -l app=web --no-headers
	[ "${#lines[@]}" -eq 2 ]
	kubectl rollout restart deployment/web
	kubectl rollout status deployment/web --timeout=20s
	[ -n "$(kubectl get deploy web -o jsonpath='{.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}')" ]
	run kubectl get rs -l app=web --no-headers
	[ "${#lines[@]}" -eq 3 ]
	[ "$(kubectl get pods -l app=web --field-selector=status.phase=Running -o name | wc -l)" -ge 2 ]
}

@test "a pod that never becomes Ready holds the rollout as maxUnavailable says" {
	deploy api 4 busybox '{rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}'
	kubectl rollout status deployment/api --timeout=20s
	kubectl patch deployment api --type=merge -p \
	    '{"spec":{"template":{"metadata":{"annotations":{"devcluster.trainyard.dev/exit-code":"abc"}}}}}'
	kubectl wait --for=jsonpath='{.status.updatedReplicas}'=2 deployment/api --timeout=20s
	run kubectl rollout status deployment/api --timeout=2s
	[ "$status" -ne 0 ]
	[[ "$output" == *'Waiting for deployment "api" rollout to finish: 2 out of 4 new replicas have been updated...'* ]]
	# 4 + maxSurge 1 pods at most, 4 - maxUnavailable 1 available at least.
	[ "$(kubectl get pods -l app=api --no-headers | wc -l)" -eq 5 ]
	[ "$(kubectl get deploy api -o jsonpath='{.status.availableReplicas}')" = 3 ]
	kubectl rollout undo deployment/api
	kubectl rollout status deployment/api --timeout=20s
	[ "$(kubectl get deploy api -o jsonpath='{.status.updatedReplicas}/{.status.availableReplicas}')" = 4/4 ]
}

@test "Recreate: the old pods go before the new ones come; pause holds a rollout" {
	deploy rec 2 busybox:1.36 '{type: Recreate}'
	kubectl rollout status deployment/rec --timeout=20s
	kubectl rollout pause deployment/rec
	kubectl set image deployment/rec main=busybox:1.37
	kubectl wait --for=jsonpath='{.status.conditions[?(@.type=="Progressing")].reason}'=DeploymentPaused \
	    deployment/rec --timeout=20s
	[ "$(kubectl get rs -l app=rec --no-headers | wc -l)" -eq 1 ]
	kubectl rollout resume deployment/rec
	kubectl rollout status deployment/rec --timeout=20s
	run kubectl get rs -l app=rec -o jsonpath='{range .items[*]}{.spec.replicas}{" "}{end}'
	[[ "$output" == *"0 "* ]]
	[[ "$output" == *"2 "* ]]
}

@test "server-side apply, validation messages, an immutable selector" {
	kubectl apply --server-side -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: ssa}
spec:
  replicas: 1
  selector: {matchLabels: {app: ssa}}
  template:
    metadata: {labels: {app: ssa}}
    spec:
      containers: [{name: main, image: busybox}]
YAML
	kubectl rollout status deployment/ssa --timeout=20s
	run kubectl apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers: [{name: main, image: busybox}]
YAML
	[ "$status" -ne 0 ]
	[[ "$output" == *'The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`'* ]]
	run kubectl patch deployment ssa --type=merge -p \
	    '{"spec":{"selector":{"matchLabels":{"app":"z"}},"template":{"metadata":{"labels":{"app":"z"}}}}}'
	[ "$status" -ne 0 ]
	[[ "$output" == *'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"z"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable'* ]]
}

@test "orphans: a Deployment deleted with --cascade=orphan, applied again, adopts them" {
	deploy orph 2 busybox
	kubectl rollout status deployment/orph --timeout=20s
	before="$(kubectl get pods -l app=orph -o name | sort)"
	kubectl delete deployment orph --cascade=orphan
	kubectl delete rs -l app=orph --cascade=orphan
	[ -z "$(kubectl get pods -l app=orph -o jsonpath='{.items[*].metadata.ownerReferences}')" ]
	deploy orph 2 busybox
	kubectl rollout status deployment/orph --timeout=20s
	kubectl wait --for=jsonpath='{.metadata.ownerReferences[0].kind}'=ReplicaSet pod -l app=orph \
	    --timeout=20s
	[ "$(kubectl get pods -l app=orph -o name | sort)" = "$before" ]
	[ "$(kubectl get rs -l app=orph --no-headers | wc -l)" -eq 1 ]
	[ -z "$(kubectl get deploy orph -o jsonpath='{.status.collisionCount}')" ]
}

@test "deleting a Deployment cascades to its ReplicaSets and pods" {
	kubectl delete deployment web api rec ssa orph --wait=true
	kubectl wait --for=delete rs --all --timeout=20s
	kubectl wait --for=delete pod -l 'app in (web,api,rec,ssa,orph)' --timeout=20s
	[ -z "$(kubectl get rs -o name)" ]
	run kubectl get pods -l 'app in (web,api,rec,ssa,orph)' -o name
	[ -z "$output" ]
}

@test "TokenReview: a static token, an invalid one, a service-account token, RBAC" {
	admin="$(kubectl config view --raw -o jsonpath='{.users[0].user.token}')"
	review() {
		kubectl create -o json -f - <<JSON
{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"$1"}}
JSON
	}
	out="$(review "$admin")"
	[ "$(jq -r .status.authenticated <<<"$out")" = true ]
	[ "$(jq -r .status.user.username <<<"$out")" = admin ]
	[ "$(jq -c .status.audiences <<<"$out")" = '["https://kubernetes.default.svc.cluster.local"]' ]
	out="$(review not-a-token)"
	[ "$(jq -r .status.authenticated <<<"$out")" = false ]
	[ "$(jq -r .status.error <<<"$out")" = "invalid bearer token" ]
	kubectl create serviceaccount scraper
	sa="$(kubectl create token scraper)"
	out="$(review "$sa")"
	[ "$(jq -r .status.authenticated <<<"$out")" = true ]
	[ "$(jq -r .status.user.username <<<"$out")" = system:serviceaccount:default:scraper ]
	[ "$(jq -c .status.user.groups <<<"$out")" = '["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]' ]
	# Without RBAC create on tokenreviews the service account is refused.
	run kubectl --token="$sa" create --validate=false -f - <<JSON
{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"$admin"}}
JSON
	[ "$status" -ne 0 ]
	[[ "$output" == *'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:default:scraper" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope'* ]]
	kubectl create clusterrole reviewer --verb=create --resource=tokenreviews.authentication.k8s.io
	kubectl create clusterrolebinding reviewer --clusterrole=reviewer --serviceaccount=default:scraper
	out="$(kubectl --token="$sa" create --validate=false -o json -f - <<JSON
{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"$admin"}}
JSON
)"
	[ "$(jq -r .status.authenticated <<<"$out")" = true ]
	run kubectl create -f - <<JSON
{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}
JSON
	[ "$status" -ne 0 ]
	[[ "$output" == *'token is required for TokenReview in authentication'* ]]
}
