#!/usr/bin/env bats
#
# ctl_sessions.bats: a Run's sessions with the real kubectl against the
# devcluster: suspend and resume, a session bump (after a session ended
# and while one runs), and a controller killed with SIGKILL in the middle
# of a session and started again (no duplicate or orphaned objects, the
# status converges).

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

@test "suspend ends the session as Stopped; resume starts the next one" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: pause}
spec: {nodes: 2, profile: cpu-small, container: {image: busybox}}
EOF
	wait_phase pause Running
	kubectl patch rn pause -n "$NS" --type=merge -p '{"spec":{"suspend":true}}'
	wait_phase pause Stopped
	[ "$(rn pause '{.status.reason}')" = Suspended ]
	[ "$(rn pause '{.status.message}')" = "suspended (spec.suspend is true)" ]
	wait_cleaned pause
	[ "$(owned pause)" = 0 ]
	events pause SessionStopped | grep -Fx "session 1 stopped: suspended (spec.suspend is true)"
	kubectl patch rn pause -n "$NS" --type=merge -p '{"spec":{"suspend":false}}'
	wait_rn pause '{.status.session}' 2
	wait_phase pause Running
	[ "$(rn pause '{.status.history[0].phase} {.status.history[0].reason} {.status.restarts}')" = "Stopped Suspended 0" ]
	run kubectl get pods -n "$NS" -l trainyard.dev/run=pause \
	    -o jsonpath='{.items[*].metadata.labels.trainyard\.dev/session}'
	[ "$output" = "2 2" ]
	kubectl delete rn pause -n "$NS" --wait=false
}

@test "a session bump starts a new session, ending a running one as NewSession" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: again}
spec:
  nodes: 2
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "0.5"}
EOF
	wait_phase again Succeeded
	wait_cleaned again
	# Again, with a change that applies to the new session.
	kubectl patch rn again -n "$NS" --type=merge \
	    -p '{"spec":{"session":2,"nodes":3,"template":{"metadata":{"annotations":{"devcluster.trainyard.dev/run-seconds":"30"}}}}}'
	wait_rn again '{.status.session}' 2
	wait_phase again Running
	[ "$(rn again '{.status.nodes.total} {.status.readyNodes}')" = "3 3/3" ]
	[ "$(kubectl get pod again-2 -n "$NS" -o jsonpath='{.metadata.annotations.trainyard\.dev/generation}')" = 2 ]
	# A bump while session 2 runs: it stops as NewSession, session 4 starts.
	kubectl patch rn again -n "$NS" --type=merge -p '{"spec":{"session":4}}'
	wait_rn again '{.status.session}' 4
	wait_phase again Running
	[ "$(rn again '{.status.history[*].session}')" = "1 2" ]
	[ "$(rn again '{.status.history[1].phase} {.status.history[1].reason}')" = "Stopped NewSession" ]
	[ "$(rn again '{.status.history[0].reason}')" = Succeeded ]
	run kubectl get pods -n "$NS" -l trainyard.dev/run=again \
	    -o jsonpath='{.items[*].metadata.labels.trainyard\.dev/session}'
	[ "$output" = "4 4 4" ]
	[ "$(owned again)" = 6 ]
	kubectl delete rn again -n "$NS" --wait=false
}

@test "SIGKILL mid-session: after a restart, no duplicates, no orphans, status converges" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: crash}
spec:
  nodes: 12
  container: {image: busybox, resources: {limits: {cpu: "1"}}}
  template:
    metadata:
      # Long enough that the first pods still run when the restarted
      # controller counts them, on a loaded machine too.
      annotations: {devcluster.trainyard.dev/run-seconds: "15"}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
EOF
	# Kill it while it creates the pods.
	wait_rn crash '{.status.session}' 1
	ctl_kill9
	uids_before="$(kubectl get pods -n "$NS" -o jsonpath='{.items[*].metadata.uid}')"
	ctl_restart
	wait_phase crash Running
	run kubectl get pods -n "$NS" -l trainyard.dev/run=crash -o json
	[ "$(jq '.items | length' <<<"$output")" = 12 ]
	[ "$(jq -r '[.items[].metadata.name] | unique | length' <<<"$output")" = 12 ]
	# The pods made before the crash were kept, not replaced.
	for u in $uids_before; do
		jq -e --arg u "$u" 'any(.items[]; .metadata.uid == $u)' <<<"$output" >/dev/null
	done
	[ "$(owned crash)" = 15 ]

	# Kill it again while the session runs; the pods finish meanwhile.
	ctl_kill9
	wait_pods crash '{.status.phase}' Succeeded
	ctl_restart
	wait_phase crash Succeeded
	wait_cleaned crash
	[ "$(owned crash)" = 0 ]
	[ "$(rn crash '{.status.session} {.status.reason} {.status.nodes.succeeded}')" = "1 Succeeded 12" ]
	[ "$(rn crash '{.status.history[*].session}')" = 1 ]
	# One SessionStarted event: the restarts did not start another session.
	[ "$(events crash SessionStarted | wc -l)" = 1 ]
}

@test "SIGTERM stops the controller cleanly; runs survive and are picked up again" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: calm}
spec: {nodes: 2, profile: cpu-small, container: {image: busybox}}
EOF
	wait_phase calm Running
	ctl_stop
	kubectl delete pod calm-0 -n "$NS" --wait=true
	ctl_start
	wait_phase calm Failed
	[ "$(rn calm '{.status.reason}')" = PodDeleted ]
	[ "$(rn calm '{.status.message}')" = "the pod of node 0 (calm-0) was deleted" ]
	wait_cleaned calm
}
