#!/usr/bin/env bats
#
# ctl_endings.bats: how sessions end, with the real kubectl against the
# devcluster's scheduler, kubelets and node controllers: PodFailed (exit
# code, reason and termination message in failedNodes), Preempted by a
# higher-priority gang with an automatic restart (restart.policy
# OnPreemption), Evicted by kubectl drain, NodeLost by kubectl delete node,
# PodDeleted by hand, DeadlineExceeded on time, Unschedulable after
# deadlines.schedulingSeconds. The Runs are written at v1beta1.

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

# pinned NAME NODE [SPEC LINES...]: a 1-node run of 8 GPUs on machine NODE.
pinned() {
	local name="$1" node="$2" l
	shift 2
	{
		printf 'apiVersion: trainyard.dev/v1beta1\nkind: Run\n'
		printf 'metadata: {name: %s}\nspec:\n  nodes: 1\n' "$name"
		printf '  container: {image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}\n'
		printf '  template:\n    spec:\n      nodeSelector: {kubernetes.io/hostname: %s}\n' \
		    "$node"
		printf '      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n'
		for l in "$@"; do
			printf '  %s\n' "$l"
		done
	} | ctl_apply
}

@test "a container that fails: PodFailed with exit code, reason and termination message" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: oom}
spec:
  nodes: 1
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations:
        devcluster.trainyard.dev/run-seconds: "0.5"
        devcluster.trainyard.dev/exit-code: "137"
        devcluster.trainyard.dev/reason: OOMKilled
        devcluster.trainyard.dev/termination-message: "CUDA out of memory"
EOF
	wait_phase oom Failed
	wait_cleaned oom
	[ "$(rn oom '{.status.reason}')" = PodFailed ]
	[ "$(rn oom '{.status.message}')" = "node 0 exited with code 137 (OOMKilled)" ]
	run kubectl get rn oom -n "$NS" -o json
	[ "$(jq -c '.status.failedNodes[0] | [.index, .pod, .exitCode, .reason, .message]' <<<"$output")" = '[0,"oom-0",137,"OOMKilled","CUDA out of memory"]' ]
	[[ "$(jq -r '.status.failedNodes[0].node' <<<"$output")" == gpu-* ]]
	[ "$(jq -c '.status.nodes' <<<"$output")" = '{"failed":1,"pending":0,"running":0,"succeeded":0,"total":1}' ]
	[ "$(jq -r '.status.history[-1].reason' <<<"$output")" = PodFailed ]
	[ "$(events oom PodFailed)" = "session 1 failed: node 0 exited with code 137 (OOMKilled)" ]
	# restart.policy Never: no new session.
	[ "$(rn oom '{.status.session} {.status.restarts}')" = "1 0" ]
	[ "$(owned oom)" = 0 ]
}

@test "a log tail as the message when the program wrote none" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: crash}
spec:
  nodes: 1
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations:
        devcluster.trainyard.dev/run-seconds: "0.3"
        devcluster.trainyard.dev/exit-code: "3"
        devcluster.trainyard.dev/log: "step 1\nTraceback: boom"
EOF
	wait_phase crash Failed
	[ "$(rn crash '{.status.message}')" = "node 0 exited with code 3 (Error)" ]
	[ "$(rn crash '{.status.failedNodes[0].message}')" = $'step 1\nTraceback: boom' ]
	[ "$(rn crash '{.status.failedNodes[0].reason}')" = Error ]
}

@test "preempted by a higher-priority gang: Preempted, then an automatic restart" {
	pinned low gpu-b4 'preemptible: true' 'restart: {policy: OnPreemption}'
	wait_phase low Running
	run kubectl get pod low-0 -n "$NS" -o jsonpath='{.spec.priorityClassName} {.metadata.labels.trainyard\.dev/preemptible}'
	[ "$output" = "trainyard-preemptible true" ]
	pinned high gpu-b4
	wait_rn low '{.status.history[0].reason}' Preempted
	[ "$(rn low '{.status.history[0].phase}')" = Failed ]
	events low Preempted | grep -F "node 0 (pod low-0 on gpu-b4) was preempted by a higher-priority workload"
	events low RestartScheduled | grep -Fx "session 2 starts in 1s (restart 1 of 3)"
	wait_phase high Running
	# The restart: session 2, waiting for the machine the high run holds.
	wait_rn low '{.status.session}' 2
	[ "$(rn low '{.status.restarts} {.status.phase}')" = "1 Pending" ]
	run kubectl get pod low-0 -n "$NS" -o jsonpath='{.metadata.labels.trainyard\.dev/session}'
	[ "$output" = 2 ]
	kubectl delete rn high -n "$NS"
	wait_phase low Running
	[ "$(rn low '{.status.history[*].session}')" = 1 ]
	kubectl delete rn low -n "$NS" --wait=false
}

@test "kubectl drain: Evicted" {
	pinned drained gpu-a3
	wait_phase drained Running
	kubectl drain gpu-a3 --pod-selector=trainyard.dev/run=drained --timeout=20s
	wait_phase drained Failed
	kubectl uncordon gpu-a3
	[ "$(rn drained '{.status.reason}')" = Evicted ]
	[ "$(rn drained '{.status.message}')" = "node 0 was evicted from gpu-a3 (a drain or the eviction API)" ]
	[ "$(rn drained '{.status.failedNodes[0].reason}')" = Evicted ]
	wait_cleaned drained
}

@test "kubectl delete node: NodeLost" {
	pinned lost gpu-b3
	wait_phase lost Running
	kubectl delete node gpu-b3
	wait_phase lost Failed
	rn lost '{.status.reason}: {.status.message}'
	[ "$(rn lost '{.status.reason}')" = NodeLost ]
	[ "$(rn lost '{.status.message}')" = "node 0 lost its machine gpu-b3 (the node is gone)" ]
	wait_cleaned lost
}

@test "a pod deleted by hand: PodDeleted" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: del}
spec: {nodes: 2, profile: cpu-small, container: {image: busybox}}
EOF
	wait_phase del Running
	kubectl delete pod del-1 -n "$NS" --wait=false
	wait_phase del Failed
	rn del '{.status.reason}: {.status.message}'
	[ "$(rn del '{.status.reason}')" = PodDeleted ]
	[ "$(rn del '{.status.message}')" = "the pod of node 1 (del-1) was deleted" ]
	wait_cleaned del
	[ "$(owned del)" = 0 ]
}

@test "deadlines.activeSeconds: DeadlineExceeded on time, with no other event" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: late}
spec: {nodes: 2, profile: cpu-small, container: {image: busybox}, deadlines: {activeSeconds: 2}}
EOF
	wait_phase late Running
	wait_phase late Failed 10s
	[ "$(rn late '{.status.reason}')" = DeadlineExceeded ]
	[ "$(rn late '{.status.message}')" = "the session ran longer than deadlines.activeSeconds (2s)" ]
	start="$(date -d "$(rn late '{.status.sessionStartTime}')" +%s)"
	end="$(date -d "$(rn late '{.status.sessionEndTime}')" +%s)"
	[ $((end - start)) -ge 2 ] && [ $((end - start)) -le 4 ]
	wait_cleaned late
}

@test "deadlines.schedulingSeconds: Unschedulable with the counts and the scheduler's reason" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: huge}
spec:
  nodes: 2
  container: {image: busybox, resources: {limits: {nvidia.com/gpu: 16}}}
  deadlines: {schedulingSeconds: 2}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
EOF
	wait_rn huge '{.status.session}' 1
	[ "$(kubectl get podgroups.scheduling.x-k8s.io huge -n "$NS" -o jsonpath='{.spec.scheduleTimeoutSeconds}')" = 2 ]
	wait_phase huge Failed 10s
	[ "$(rn huge '{.status.reason}')" = Unschedulable ]
	msg="$(rn huge '{.status.message}')"
	echo "$msg"
	[[ "$msg" == "0 of 2 nodes running after 2s (deadlines.schedulingSeconds); 2 pending; node "[01]": "* ]]
	# The scheduler's word: no fit, or the gang's Permit timeout.
	[[ "$msg" == *"Insufficient nvidia.com/gpu"* || "$msg" == *"at plugin Coscheduling"* ]]
	wait_cleaned huge
	[ "$(rn huge '{.status.session}')" = 1 ]
}
