#!/usr/bin/env bats
# PodDisruptionBudgets, the disruption controller, pods/eviction and
# "kubectl drain" (devcluster/disruption.c), driven by the real kubectl.
#
# Pods are bound by spec.nodeName to the nodes of
# tests/fixtures/devcluster/disruption-nodes.yaml. On node-dead and
# node-spare the simulated kubelet is stopped: the Ready status a test
# patches in stays, and graceful deletions there never finish (so drains
# there use --grace-period=0). node-live has a running kubelet, which
# makes its pods Ready, so a budget there guards them.

load devcluster

setup_file() {
	dc_start --nodes "$DC_REPO/tests/fixtures/devcluster/disruption-nodes.yaml" \
	    --node-monitor-grace-period 10m --pod-start-delay 100ms
}

teardown_file() {
	dc_stop
}

# mkpod NS NAME APP NODE [ready]: a pod controlled by ConfigMap "owner"
# (drain wants a controller), optionally made Ready as a kubelet would.
mkpod() {
	local ns="$1" name="$2" app="$3" node="$4" ready="${5:-}" uid
	local f="$BATS_TEST_TMPDIR/owner-$ns"
	if [ ! -s "$f" ]; then
		kubectl -n "$ns" create configmap owner -o jsonpath='{.metadata.uid}' >"$f"
	fi
	uid="$(cat "$f")"
	kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $name
  labels: {app: $app}
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: "$uid", controller: true}
spec:
  nodeName: $node
  containers: [{name: main, image: busybox}]
YAML
	if [ -n "$ready" ]; then
		kubectl -n "$ns" patch pod "$name" --subresource=status --type=merge \
		    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' \
		    >/dev/null
	fi
}

# evict_raw NS NAME: a raw policy/v1 Eviction POST, as kubectl create --raw sends it.
evict_raw() {
	local ns="$1" name="$2"
	printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"%s","namespace":"%s"}}\n' \
	    "$name" "$ns" >"$BATS_TEST_TMPDIR/eviction.json"
	kubectl create --raw "/api/v1/namespaces/$ns/pods/$name/eviction" \
	    -f "$BATS_TEST_TMPDIR/eviction.json"
}

@test "discovery: poddisruptionbudgets (pdb) and pods/eviction as policy/v1 Eviction" {
	run kubectl get --raw /api/v1
	[ "$status" -eq 0 ]
	[[ "$output" == *'{"name":"pods/eviction","singularName":"","namespaced":true,"group":"policy","version":"v1","kind":"Eviction","verbs":["create"]}'* ]]
	run kubectl api-resources --api-group=policy --no-headers
	[ "$status" -eq 0 ]
	[[ "$output" == *poddisruptionbudgets*pdb*policy/v1*true*PodDisruptionBudget* ]]
	# policy/v1beta1 is gone since 1.25.
	run kubectl get --raw /apis/policy/v1beta1
	[ "$status" -ne 0 ]
	[[ "$output" == *NotFound* ]]
}

@test "kubectl create pdb (protobuf from 1.32, JSON before) and its columns" {
	kubectl create ns pdbs
	kubectl -n pdbs create pdb one --selector=app=one --min-available=1
	/usr/lib/google-cloud-sdk/bin/kubectl.1.27 -n pdbs create pdb two \
	    --selector=app=two --max-unavailable=50%
	run kubectl -n pdbs get pdb
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^NAME\ +MIN\ AVAILABLE\ +MAX\ UNAVAILABLE\ +ALLOWED\ DISRUPTIONS\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^one\ +1\ +N/A\ +0\ + ]]
	[[ "${lines[2]}" =~ ^two\ +N/A\ +50%\ +0\ + ]]
	run kubectl -n pdbs get pdb one -o jsonpath='{.status.observedGeneration} {.status.conditions[0].type}={.status.conditions[0].status}/{.status.conditions[0].reason}'
	[ "$output" = "1 DisruptionAllowed=False/InsufficientPods" ]
	# Upstream's validation.
	run kubectl -n pdbs apply -f - <<YAML
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: both}
spec: {minAvailable: 1, maxUnavailable: 1, selector: {}}
YAML
	[ "$status" -ne 0 ]
	[[ "$output" == *'minAvailable and maxUnavailable cannot be both set'* ]]
	run kubectl -n pdbs apply -f - <<YAML
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pct}
spec: {minAvailable: "150%", unhealthyPodEvictionPolicy: Never}
YAML
	[ "$status" -ne 0 ]
	[[ "$output" == *'spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%'* ]]
	[[ "$output" == *'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"'* ]]
}

@test "the budget's status follows the pods" {
	kubectl create ns st
	kubectl -n st create pdb web --selector=app=web --min-available=2
	mkpod st w1 web node-dead ready
	mkpod st w2 web node-dead ready
	mkpod st w3 web node-dead
	mkpod st x1 other node-dead ready
	kubectl -n st wait pdb/web --for=jsonpath='{.status.expectedPods}'=3 --timeout=10s
	run kubectl -n st get pdb web -o jsonpath='{.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed}'
	[ "$output" = "2 2 0" ]
	kubectl -n st patch pod w3 --subresource=status --type=merge \
	    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}'
	kubectl -n st wait pdb/web --for=condition=DisruptionAllowed --timeout=10s
	run kubectl -n st get pdb web -o jsonpath='{.status.currentHealthy} {.status.disruptionsAllowed} {.status.conditions[0].reason}'
	[ "$output" = "3 1 SufficientPods" ]
	run kubectl -n st get pdb web
	[[ "${lines[1]}" =~ ^web\ +2\ +N/A\ +1\ + ]]
}

@test "pods/eviction by raw POST: allowed, then blocked by the budget" {
	kubectl create ns ev
	kubectl -n ev create pdb web --selector=app=web --min-available=1
	mkpod ev e1 web node-dead ready
	mkpod ev e2 web node-dead ready
	kubectl -n ev wait pdb/web --for=jsonpath='{.status.disruptionsAllowed}'=1 --timeout=10s
	run evict_raw ev e1
	[ "$status" -eq 0 ]
	[ "$output" = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}' ]
	# DisruptionTarget, then a graceful delete (it stays: the kubelet is stopped).
	run kubectl -n ev get pod e1 -o jsonpath='{.status.conditions[?(@.type=="DisruptionTarget")].reason}/{.status.conditions[?(@.type=="DisruptionTarget")].message}'
	[ "$output" = "EvictionByEvictionAPI/Eviction API: evicting" ]
	run kubectl -n ev get pod e1 -o jsonpath='{.metadata.deletionTimestamp}'
	[ -n "$output" ]
	kubectl -n ev wait pdb/web --for=jsonpath='{.status.disruptionsAllowed}'=0 --timeout=10s
	run evict_raw ev e2
	[ "$status" -ne 0 ]
	[[ "$output" == *"Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget."* ]]
	run kubectl -n ev get pod e2 -o jsonpath='{.metadata.deletionTimestamp}'
	[ -z "$output" ]
	# No such pod: 404.
	run evict_raw ev nope
	[ "$status" -ne 0 ]
	[[ "$output" == *'pods "nope" not found'* ]]
}

@test "drain refuses a pod without a controller unless --force" {
	kubectl create ns bare
	kubectl -n bare run lonely --image=busybox --overrides='{"spec":{"nodeName":"node-spare"}}'
	mkpod bare owned app node-spare ready
	run kubectl drain node-spare --ignore-daemonsets --delete-emptydir-data --timeout=10s
	[ "$status" -ne 0 ]
	[[ "$output" == *'cannot delete Pods that declare no controller (use --force to override): bare/lonely'* ]]
	[ "$(kubectl -n bare get pods -o name | wc -l)" -eq 2 ]
	run kubectl drain node-spare --ignore-daemonsets --delete-emptydir-data --force \
	    --grace-period=0 --timeout=20s
	[ "$status" -eq 0 ]
	[[ "$output" == *'Warning: deleting Pods that declare no controller: bare/lonely'* ]]
	[[ "$output" == *'node/node-spare drained'* ]]
	[ -z "$(kubectl -n bare get pods -o name)" ]
	kubectl uncordon node-spare
}

@test "drain blocked by a budget fails at --timeout, then drains once allowed" {
	kubectl create ns dr
	kubectl -n dr create pdb web --selector=app=dr-web --min-available=2
	mkpod dr d1 dr-web node-dead ready
	mkpod dr d2 dr-web node-dead ready
	kubectl -n dr wait pdb/web --for=jsonpath='{.status.currentHealthy}'=2 --timeout=10s
	run kubectl drain node-dead --ignore-daemonsets --delete-emptydir-data --timeout=2s \
	    --pod-selector=app=dr-web
	[ "$status" -ne 0 ]
	[[ "$output" == *'node/node-dead cordoned'* ]]
	[[ "$output" == *'error when evicting pods/"d1" -n "dr" (will retry after 5s): Cannot evict pod as it would violate the pod'"'"'s disruption budget.'* ]]
	[[ "$output" == *'global timeout reached: 2s'* ]]
	run kubectl get node node-dead -o jsonpath='{.spec.unschedulable}'
	[ "$output" = "true" ]
	[ "$(kubectl -n dr get pods --no-headers | wc -l)" -eq 2 ]
	# Once the budget allows it, the drain goes through.
	kubectl -n dr patch pdb web --type=merge -p '{"spec":{"minAvailable":0}}'
	kubectl -n dr wait pdb/web --for=jsonpath='{.status.disruptionsAllowed}'=2 --timeout=10s
	run kubectl drain node-dead --ignore-daemonsets --delete-emptydir-data --grace-period=0 \
	    --timeout=30s --pod-selector=app=dr-web
	[ "$status" -eq 0 ]
	[[ "$output" == *'node/node-dead drained'* ]]
	[ -z "$(kubectl -n dr get pods -o name)" ]
}

@test "drain of a node with a running kubelet: the budget blocks it, then lets it through" {
	kubectl create ns live
	kubectl -n live create pdb web --selector=app=web --min-available=2
	mkpod live l1 web node-live
	mkpod live l2 web node-live
	mkpod live l3 other node-live
	# The simulated kubelet starts the pods; with both Ready the budget
	# allows no disruption at all.
	kubectl -n live wait pod/l1 pod/l2 --for=condition=Ready --timeout=30s
	kubectl -n live wait pdb/web --for=jsonpath='{.status.currentHealthy}'=2 --timeout=10s
	run kubectl -n live get pdb web -o jsonpath='{.status.disruptionsAllowed}'
	[ "$output" = "0" ]
	run kubectl drain node-live --ignore-daemonsets --delete-emptydir-data --timeout=3s
	[ "$status" -ne 0 ]
	[[ "$output" == *'node/node-live cordoned'* ]]
	[[ "$output" == *'error when evicting pods/"l'[12]'" -n "live" (will retry after 5s): Cannot evict pod as it would violate the pod'"'"'s disruption budget.'* ]]
	[[ "$output" == *'global timeout reached: 3s'* ]]
	[[ "$output" != *'node/node-live drained'* ]]
	# The budget's pods stay, untouched.
	run kubectl -n live get pod l1 l2 -o jsonpath='{range .items[*]}{.metadata.name}:{.metadata.deletionTimestamp};{end}'
	[ "$status" -eq 0 ]
	[ "$output" = "l1:;l2:;" ]
	# Once the budget allows it, the same drain goes through.
	kubectl -n live patch pdb web --type=merge -p '{"spec":{"minAvailable":0}}'
	kubectl -n live wait pdb/web --for=jsonpath='{.status.disruptionsAllowed}'=2 --timeout=10s
	run kubectl drain node-live --ignore-daemonsets --delete-emptydir-data --timeout=60s
	[ "$status" -eq 0 ]
	[[ "$output" == *'pod/l1 evicted'* ]]
	[[ "$output" == *'pod/l2 evicted'* ]]
	[[ "$output" == *'node/node-live drained'* ]]
	[ -z "$(kubectl -n live get pods -o name)" ]
	run kubectl get node node-live
	[[ "$output" == *SchedulingDisabled* ]]
	kubectl uncordon node-live
}

@test "request bodies in chunked transfer coding (kubectl create --raw -f, curl)" {
	local server token
	server="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["clusters"][0]["cluster"]["server"])' "$KUBECONFIG")"
	token="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["users"][0]["user"]["token"])' "$KUBECONFIG")"
	printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chunky"}}\n' \
	    >"$BATS_TEST_TMPDIR/cm.json"
	run curl -sk -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	    -H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/cm.json" \
	    -o /dev/null -w '%{http_code}' "$server/api/v1/namespaces/default/configmaps"
	[ "$output" = "201" ]
	kubectl get configmap chunky
	# Past the 3 MiB limit: 413, as with a Content-Length.
	head -c 4194304 /dev/zero | tr '\0' x >"$BATS_TEST_TMPDIR/big"
	run curl -sk -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	    -H 'Transfer-Encoding: chunked' --data-binary @"$BATS_TEST_TMPDIR/big" \
	    -o /dev/null -w '%{http_code}' "$server/api/v1/namespaces/default/configmaps"
	[ "$output" = "413" ]
}
