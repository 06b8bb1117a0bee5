#!/usr/bin/env bats
#
# ctl_objects.bats: trainyard-controller against the devcluster with the real
# kubectl: the objects of a session and their shapes (pods, PodGroup,
# headless Service, NetworkPolicy), hostnames and the search domain through
# kubectl exec, a session that succeeds and is cleaned up, the API write
# budget of a session start (Events included), a create the API server
# refuses (the status says why, retries back off), Run deletion (nothing
# created again, nothing written) and invalid Runs. When progress is
# written (once it stood still for 15 s) is the pure write policy's,
# unit-tested in test_ctl_session.c with a fake clock.

load devcluster
load controller

setup_file() {
	ctl_setup_file
}

teardown_file() {
	ctl_teardown_file
}

setup() {
	ctl_ns
}

teardown() {
	ctl_check
}

@test "a Run expands into a PodGroup, a headless Service, a NetworkPolicy and pods" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: shape}
spec:
  nodes: 2
  profile: gpu-2
  container:
    image: busybox
    command: [train, "--master=$(MASTER_ADDR):$(MASTER_PORT)"]
    ports: [{name: master, containerPort: 23456}, {containerPort: 8080}]
    env: [{name: MY_FLAG, value: "on"}]
    resources: {limits: {memory: 64Gi}}
  deadlines: {schedulingSeconds: 600}
  template:
    metadata: {labels: {team: vision}}
EOF
	wait_phase shape Running
	uid="$(rn shape '{.metadata.uid}')"

	# The pods.
	run kubectl get pods -n "$NS" -l trainyard.dev/run=shape -o json
	[ "$status" -eq 0 ]
	pods="$output"
	[ "$(jq '.items | length' <<<"$pods")" = 2 ]
	p1="$(jq '.items[] | select(.metadata.name == "shape-1")' <<<"$pods")"
	[ "$(jq -r .spec.hostname <<<"$p1")" = shape-1 ]
	[ "$(jq -r .spec.subdomain <<<"$p1")" = shape ]
	[ "$(jq -c .spec.dnsConfig.searches <<<"$p1")" = "[\"shape.$NS.svc.cluster.local\"]" ]
	[ "$(jq -r .spec.restartPolicy <<<"$p1")" = Never ]
	[ "$(jq -r .spec.schedulerName <<<"$p1")" = scheduler-plugins-scheduler ]
	[ "$(jq -r .spec.priorityClassName <<<"$p1")" = trainyard-default ]
	[ "$(jq -r .spec.priority <<<"$p1")" = 1000 ]
	[ "$(jq -c .metadata.labels <<<"$p1")" = '{"app.kubernetes.io/managed-by":"trainyard","scheduling.x-k8s.io/pod-group":"shape","team":"vision","trainyard.dev/node-index":"1","trainyard.dev/preemptible":"false","trainyard.dev/run":"shape","trainyard.dev/session":"1"}' ]
	[ "$(jq -c '.metadata.ownerReferences' <<<"$p1")" = "[{\"apiVersion\":\"trainyard.dev/v1beta1\",\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"Run\",\"name\":\"shape\",\"uid\":\"$uid\"}]" ]
	c="$(jq '.spec.containers[0]' <<<"$p1")"
	[ "$(jq -r .name <<<"$c")" = main ]
	[ "$(jq -r .terminationMessagePolicy <<<"$c")" = FallbackToLogsOnError ]
	# The Run's memory limit wins over the profile's; extended resources
	# get requests equal to limits.
	[ "$(jq -c .resources.limits <<<"$c")" = '{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"2","rdma/hca_shared_devices_a":"1"}' ]
	[ "$(jq -c .resources.requests <<<"$c")" = "$(jq -c .resources.limits <<<"$c")" ]
	[ "$(jq -c '[.env[] | "\(.name)=\(.value)"]' <<<"$c")" = '["TRAINYARD_RUN=shape","TRAINYARD_SESSION=1","TRAINYARD_NODE_INDEX=1","TRAINYARD_NODES=2","TRAINYARD_HOSTS=shape-0,shape-1","MASTER_ADDR=shape-0","MASTER_PORT=23456","WORLD_SIZE=2","RANK=1","NODE_RANK=1","NNODES=2","GPUS_PER_NODE=2","NCCL_IB_HCA=mlx5","MY_FLAG=on"]' ]
	[ "$(jq -c '[.spec.tolerations[] | [.key, .tolerationSeconds]]' <<<"$p1")" = '[["nvidia.com/gpu",null],["node.kubernetes.io/not-ready",2],["node.kubernetes.io/unreachable",2]]' ]
	p0="$(jq '.items[] | select(.metadata.name == "shape-0")' <<<"$pods")"
	[ "$(jq -r '.spec.containers[0].env[] | select(.name == "RANK") | .value' <<<"$p0")" = 0 ]

	# The PodGroup: minMember, the sum of every node's resources, the timeout.
	run kubectl get podgroups.scheduling.x-k8s.io shape -n "$NS" -o json
	[ "$status" -eq 0 ]
	[ "$(jq -c .spec <<<"$output")" = '{"minMember":2,"minResources":{"cpu":"32","memory":"128Gi","nvidia.com/gpu":"4","rdma/hca_shared_devices_a":"2"},"scheduleTimeoutSeconds":600}' ]
	[ "$(jq -r '.metadata.ownerReferences[0].uid' <<<"$output")" = "$uid" ]
	[ "$(jq -r '.metadata.labels["trainyard.dev/session"]' <<<"$output")" = 1 ]

	# The headless Service: workers resolve the master before it is ready.
	run kubectl get service shape -n "$NS" -o json
	[ "$(jq -r .spec.clusterIP <<<"$output")" = None ]
	[ "$(jq -r .spec.publishNotReadyAddresses <<<"$output")" = true ]
	[ "$(jq -c .spec.selector <<<"$output")" = '{"trainyard.dev/run":"shape"}' ]
	[ "$(jq -c '[.spec.ports[] | [.name, .port]]' <<<"$output")" = '[["master",23456],["port-8080",8080]]' ]
	[ "$(jq -r '.metadata.ownerReferences[0].uid' <<<"$output")" = "$uid" ]

	# The NetworkPolicy: ingress from the run's own pods only.
	run kubectl get networkpolicy shape -n "$NS" -o json
	[ "$(jq -c .spec <<<"$output")" = '{"ingress":[{"from":[{"podSelector":{"matchLabels":{"trainyard.dev/run":"shape"}}}]}],"podSelector":{"matchLabels":{"trainyard.dev/run":"shape"}},"policyTypes":["Ingress"]}' ]
	[ "$(jq -r '.metadata.labels["app.kubernetes.io/managed-by"]' <<<"$output")" = trainyard ]

	# The status and the printer columns.
	[ "$(rn shape '{.status.readyNodes} {.status.gpus} {.status.session} {.status.allPodsCreated}')" = "2/2 4 1 true" ]
	[ "$(rn shape '{.status.nodes}')" = '{"failed":0,"pending":0,"running":2,"succeeded":0,"total":2}' ]
	[ "$(rn shape '{.status.conditions[?(@.type=="GangScheduling")].reason}')" = PodGroup ]
	[ "$(rn shape '{.status.conditions[?(@.type=="Valid")].status}')" = True ]
	run kubectl get rn -n "$NS" --no-headers
	[[ "$output" =~ ^shape\ +Running\ +1\ +2/2\ +4\ +[0-9]+s$ ]]

	# Through the devcluster's exec: hostname, FQDN, search domain, env.
	run kubectl exec -n "$NS" shape-1 -- hostname
	[ "$output" = shape-1 ]
	run kubectl exec -n "$NS" shape-1 -- hostname -f
	[ "$output" = "shape-1.shape.$NS.svc.cluster.local" ]
	run kubectl exec -n "$NS" shape-1 -- cat /etc/resolv.conf
	[ "$status" -eq 0 ]
	grep -x "search $NS.svc.cluster.local svc.cluster.local cluster.local shape.$NS.svc.cluster.local" <<<"$output"
	run kubectl exec -n "$NS" shape-0 -- printenv MASTER_ADDR WORLD_SIZE RANK
	[ "$output" = $'shape-0\n2\n0' ]
	kubectl delete rn shape -n "$NS" --wait=false
}

@test "a session that succeeds: Succeeded, history, events, every object deleted" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: ok}
spec:
  nodes: 3
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "0.5"}
EOF
	wait_phase ok Succeeded
	wait_cleaned ok
	[ "$(rn ok '{.status.reason}')" = Succeeded ]
	[ "$(rn ok '{.status.message}')" = "all 3 nodes finished successfully" ]
	[ "$(rn ok '{.status.nodes.succeeded}/{.status.nodes.total}')" = 3/3 ]
	[ -n "$(rn ok '{.status.sessionEndTime}')" ]
	[ "$(rn ok '{.status.history[0].session} {.status.history[0].phase} {.status.history[0].reason}')" = "1 Succeeded Succeeded" ]
	[ "$(rn ok '{.status.conditions[?(@.type=="Finished")].reason}')" = Succeeded ]
	[ "$(rn ok '{.status.conditions[?(@.type=="CleanedUp")].reason}')" = AllDeleted ]
	[ "$(owned ok)" = 0 ]
	[ "$(events ok SessionStarted)" = "session 1 started with 3 nodes" ]
	[ "$(events ok SessionSucceeded)" = "session 1 succeeded: all 3 nodes finished successfully" ]
	run kubectl get rn ok -n "$NS" -o wide --no-headers
	[[ "$output" =~ ^ok\ +Succeeded\ +1\ +0/3\ +0\ +[0-9]+s\ +Succeeded$ ]]
}

@test "starting a session takes at most nodes + 6 API writes, Events included" {
	kubectl delete --raw /devcluster/stats >/dev/null
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: budget}
spec: {nodes: 4, profile: gpu-2, container: {image: busybox}}
EOF
	wait_phase budget Running
	wait_rn budget '{.status.allPodsCreated}' true
	stats="$(kubectl get --raw /devcluster/stats)"
	echo "$stats" | jq -c '.requests[]'
	# The controller's writes: everything but kubectl's create of the Run.
	n="$(jq '[.requests[] | select((.verb == "create" or .verb == "update" or
	    .verb == "patch" or .verb == "delete") and .resource != "runs.trainyard.dev") |
	    .count] | add' <<<"$stats")"
	echo "controller writes: $n"
	# Every object of the session is created exactly once, and one Event
	# (SessionStarted): reaching Running has none.
	[ "$(jq -c '[.requests[] | select(.verb == "create" and
	    .resource != "runs.trainyard.dev") | [.resource, .code, .count]] | sort' <<<"$stats")" = '[["events",201,1],["networkpolicies.networking.k8s.io",201,1],["podgroups.scheduling.x-k8s.io",201,1],["pods",201,4],["services",201,1]]' ]
	[ "$(jq '[.requests[] | select(.verb == "delete" or .verb == "patch") | .count] | add // 0' <<<"$stats")" = 0 ]
	# Two status writes: the session start and all nodes running (progress
	# in between is written only once it stood still for 15 s).
	[ "$(jq '[.requests[] | select(.verb == "update" and
	    .resource == "runs.trainyard.dev/status") | .count] | add // 0' <<<"$stats")" = 2 ]
	# No status write met a conflict (the controller never decides from a
	# Run older than its own last status write).
	[ "$(jq '[.requests[] | select(.code == 409) | .count] | add // 0' <<<"$stats")" = 0 ]
	# nodes + 6: 4 pods, PodGroup, Service, NetworkPolicy, 2 status, 1 Event.
	[ "$n" -le 10 ]
	[ "$(events budget SessionStarted)" = "session 1 started with 4 nodes" ]
	[ -z "$(events budget Running)" ]
	kubectl delete rn budget -n "$NS" --wait=false
}

@test "a pod create the API server refuses: the Run says why, and retries back off" {
	kubectl apply -f - >/dev/null <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: ResourceProfile
metadata: {name: no-such-class}
spec:
  resources: {cpu: "1"}
  priorityClassName: trainyard-missing
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
EOF
	kubectl delete --raw /devcluster/stats >/dev/null
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: refused}
spec: {nodes: 2, profile: no-such-class, container: {image: busybox}}
EOF
	t0="$(date +%s)"
	# Why nothing starts, at once (not after the 15 s of progress).
	wait_rn refused '{.status.conditions[?(@.type=="Scheduled")].reason}' FailedCreate 10s
	msg="$(rn refused '{.status.conditions[?(@.type=="Scheduled")].message}')"
	echo "$msg"
	[[ "$msg" == "Error creating Pod refused-0: "*"no PriorityClass with name trainyard-missing was found"* ]]
	[ "$(rn refused '{.status.phase}')" = Pending ]
	# Retries back off (1 s, doubling): a handful of requests, not a storm.
	sleep $((t0 + 7 - $(date +%s)))
	stats="$(kubectl get --raw /devcluster/stats)"
	creates="$(jq '[.requests[] | select(.verb == "create" and .resource == "pods") |
	    .count] | add // 0' <<<"$stats")"
	events="$(jq '[.requests[] | select(.resource == "events") | .count] | add // 0' <<<"$stats")"
	echo "in 7 s: $creates pod creates, $events Event writes"
	[ "$creates" -ge 2 ] && [ "$creates" -le 5 ]
	[ "$events" -le 7 ]
	# One FailedCreate Event, its count raised.
	[ "$(events refused FailedCreate | wc -l)" = 1 ]
	[ "$(kubectl get pods -n "$NS" -o name | wc -l)" = 0 ]
	kubectl delete rn refused -n "$NS" --wait=false
	kubectl delete resourceprofile no-such-class
}

@test "deleting a Run deletes everything it owns, and nothing comes back" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: gone}
spec: {nodes: 3, profile: cpu-small, container: {image: busybox}}
EOF
	wait_phase gone Running
	[ "$(owned gone)" = 6 ]
	kubectl delete --raw /devcluster/stats >/dev/null
	kubectl delete rn gone -n "$NS" --timeout=20s
	kubectl wait -n "$NS" --for=delete pod/gone-0 pod/gone-1 pod/gone-2 service/gone \
	    networkpolicy/gone podgroups.scheduling.x-k8s.io/gone --timeout=20s
	# An absence: give a (wrong) recreate a moment to show up.
	sleep 1
	[ "$(owned gone)" = 0 ]
	# Not even for a moment: a child the garbage collector deleted before
	# the Run's delete reached the controller's cache is not created again.
	[ "$(kubectl get --raw /devcluster/stats | jq '[.requests[] | select(.verb == "create" and
	    .resource != "events") | .count] | add // 0')" = 0 ]
	run kubectl get pods -n "$NS" -o name
	[ -z "$output" ]
}

@test "invalid runs never start: Valid=False with every problem, then a fix starts them" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: nothing}
spec: {nodes: 2, container: {image: busybox}}
---
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: toobig}
spec: {nodes: 9, profile: cpu-small, container: {image: busybox}}
---
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: a-very-long-run-name-that-fits-a-service-but-not-the-hostnames}
spec: {nodes: 100, container: {image: busybox, resources: {limits: {cpu: "1"}}}}
---
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: a-name-of-sixty-four-characters-cannot-name-the-service-xxxxxxxx}
spec: {nodes: 1, profile: cpu-small, container: {image: busybox}}
---
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: noprofile}
spec: {nodes: 1, profile: h200x16, container: {image: busybox}}
EOF
	long=a-very-long-run-name-that-fits-a-service-but-not-the-hostnames
	long64=a-name-of-sixty-four-characters-cannot-name-the-service-xxxxxxxx
	for r in nothing toobig "$long" "$long64" noprofile; do
		wait_cond "$r" Valid False
		[ "$(rn "$r" '{.status.phase} {.status.reason}')" = "Failed InvalidSpec" ]
		[ "$(rn "$r" '{.status.conditions[?(@.type=="Valid")].reason}')" = InvalidSpec ]
	done
	[ "$(rn nothing '{.status.conditions[?(@.type=="Valid")].message}')" = 'spec: neither spec.profile nor spec.container.resources is set: say what each node gets, with a ResourceProfile (spec.profile) or spec.container.resources.limits such as {nvidia.com/gpu: 8}' ]
	[ "$(rn toobig '{.status.message}')" = 'spec.nodes: 9 nodes is more than ResourceProfile "cpu-small" allows (maxNodes 8)' ]
	[ "$(rn "$long" '{.status.message}')" = "metadata.name: \"$long\" is too long for 100 nodes: the pod hostname \"$long-99\" would have 65 characters, and hostnames allow 63; use a name of at most 60 characters" ]
	rn "$long64" '{.status.message}' | grep -F "cannot name the run's Service"
	rn noprofile '{.status.message}' | grep -F 'ResourceProfile "h200x16" not found'
	[ "$(events toobig InvalidSpec)" = 'spec.nodes: 9 nodes is more than ResourceProfile "cpu-small" allows (maxNodes 8)' ]
	run kubectl describe rn toobig -n "$NS"
	[[ "$output" == *"InvalidSpec"*"maxNodes 8"* ]]
	# Nothing was created for any of them.
	run kubectl get pods,services,networkpolicies,podgroups.scheduling.x-k8s.io -n "$NS" -o name
	[ -z "$output" ]
	[ -z "$(rn toobig '{.status.session}')" ] || [ "$(rn toobig '{.status.session}')" = 0 ]

	# A fix starts the first session.
	kubectl patch rn toobig -n "$NS" --type=merge -p '{"spec":{"nodes":2}}'
	wait_cond toobig Valid True
	wait_phase toobig Running
	[ "$(rn toobig '{.status.session} {.status.readyNodes}')" = "1 2/2" ]
	kubectl delete rn --all -n "$NS" --wait=false
}

@test "deleting running Runs costs the controller no writes and no 404s" {
	for i in $(seq 20); do
		printf -- '---\napiVersion: trainyard.dev/v1beta1\nkind: Run\nmetadata: {name: del-%d}\nspec: {nodes: 1, profile: cpu-small, container: {image: busybox}}\n' "$i"
	done | ctl_apply
	for i in $(seq 20); do
		wait_phase "del-$i" Running 60s
	done
	kubectl delete --raw /devcluster/stats >/dev/null
	kubectl delete rn --all -n "$NS" --wait=false >/dev/null
	kubectl wait -n "$NS" --for=delete pod -l trainyard.dev/run --timeout=30s >/dev/null
	# Past the hold (3 s), after which an end would be written.
	sleep 4
	stats="$(kubectl get --raw /devcluster/stats)"
	echo "$stats" | jq -c '.requests[]'
	# kubectl's deletes of the Runs aside: no status write, create, delete or Event.
	[ "$(jq '[.requests[] | select((.verb == "create" or .verb == "update" or
	    .verb == "patch" or .verb == "delete") and .resource != "runs.trainyard.dev") |
	    .count] | add // 0' <<<"$stats")" = 0 ]
	[ "$(jq '[.requests[] | select(.resource == "runs.trainyard.dev/status") | .count] |
	    add // 0' <<<"$stats")" = 0 ]
	# No uncached GET of a Run already gone, nor of anything the Runs owned.
	# (The certificate thread looks for the optional admission webhook
	# configurations, which this cluster does not have.)
	[ "$(jq '[.requests[] | select(.code == 404 and
	    (.resource | test("webhookconfigurations") | not)) | .count] | add // 0' \
	    <<<"$stats")" = 0 ]
}
