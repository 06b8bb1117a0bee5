#!/usr/bin/env bats
#
# cli_ops.bats: kubectl trainyard wait, stop, resume, restart, describe and
# list through the real kubectl: exit codes, what they print, a state
# already reached returns at once, Ctrl-C leaves the Run alone, list of a
# namespace, of all, of a Project's namespaces, and -w.

load cli

setup_file() {
	# ctl_setup_file, with the Projects CRDs in before the controller starts.
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms --node-monitor-grace-period 2s \
	    --node-monitor-period 500ms || return 1
	ctl_build || return 1
	ctl_install || return 1
	ctl_install_projects || return 1
	ctl_config
	ctl_start || return 1
	cli_build
}

teardown_file() {
	cli_teardown_file
}

setup() {
	ctl_ns
}

# mkrun NAME NODES SECONDS [EXIT-CODE] [MESSAGE]: a Run of cpu-small nodes
# that run SECONDS ("" for ever) and exit with EXIT-CODE.
mkrun() {
	local msg=""
	if [ -n "${5:-}" ]; then
		msg="        devcluster.trainyard.dev/termination-message: \"$5\""
	fi
	ctl_apply <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: $1}
spec:
  nodes: $2
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations:
        devcluster.trainyard.dev/run-seconds: "${3:-100000}"
        devcluster.trainyard.dev/exit-code: "${4:-0}"
$msg
EOF
}

# ms: a clock in milliseconds.
ms() {
	echo $(($(date +%s%N) / 1000000))
}

@test "wait: a Run that already ended returns at once with its result" {
	mkrun ok 2 0.2
	mkrun bad 1 0.2 3
	mkrun long 1
	wait_phase ok Succeeded
	wait_phase bad Failed
	wait_phase long Running
	kubectl patch rn long -n "$NS" --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
	wait_phase long Stopped

	t=$(ms)
	run kt wait ok -n "$NS"
	[ "$(($(ms) - t))" -lt 2000 ]
	[ "$status" -eq 0 ]
	[[ "$output" == *"run ok in namespace $NS: session 1 Succeeded"* ]]

	t=$(ms)
	run kt wait bad -n "$NS"
	[ "$(($(ms) - t))" -lt 2000 ]
	[ "$status" -eq 1 ]
	[[ "$output" == *"session 1 Failed"*"(PodFailed): node 0 exited with code 3"* ]]

	t=$(ms)
	run kt wait long -n "$NS"
	[ "$(($(ms) - t))" -lt 2000 ]
	[ "$status" -eq 2 ]
	[[ "$output" == *"session 1 Stopped"*"(Suspended)"* ]]

	# --timeout 0 checks once.
	run kt wait bad -n "$NS" --timeout 0
	[ "$status" -eq 1 ]
	run kt wait ok -n "$NS" --timeout 0 --for start
	[ "$status" -eq 0 ]

	# --for start of a Run that ended: its result too; -o name prints it.
	run kt wait bad -n "$NS" --for start
	[ "$status" -eq 1 ]
	run kt wait ok -n "$NS" -o name
	[ "$status" -eq 0 ]
	[[ "$output" == *"run.trainyard.dev/ok"* ]]
	[ "$(kt wait ok -n "$NS" -o json 2>/dev/null | jq -r .status.phase)" = Succeeded ]
}

@test "wait: timeouts exit 3, missing Runs 4, --for start, a session that ends later" {
	mkrun long 1
	t=$(ms)
	run kt wait long -n "$NS" --timeout 2s
	[ "$status" -eq 3 ]
	[ "$(($(ms) - t))" -ge 1900 ]
	[ "$(($(ms) - t))" -lt 5000 ]
	[[ "$output" == *"timed out after 2s waiting for run long in namespace $NS to end"* ]]

	run kt wait nope -n "$NS" --timeout 5s
	[ "$status" -eq 4 ]
	[[ "$output" == *"run \"nope\" not found in namespace $NS"* ]]

	run kt wait long -n "$NS" --for start --timeout 20s
	[ "$status" -eq 0 ]
	[[ "$output" == *"session 1 Running (1/1 nodes ready)"* ]]

	# The watch sees the end of a session that is still running.
	mkrun soon 1 2
	run kt wait soon -n "$NS" --timeout 30s
	[ "$status" -eq 0 ]
	[[ "$output" == *"session 1 Succeeded"* ]]

	run kt wait long -n "$NS" --timeout 0
	[ "$status" -eq 3 ]
	[[ "$output" == *"timed out after 0s waiting for run long"* ]]

	run kt wait long -n "$NS" --as nobody
	[ "$status" -eq 5 ]
	[[ "$output" == *"get run long: not allowed: "*"kubectl auth can-i --list -n $NS"* ]]

	run kt wait long -n "$NS" --for later
	[ "$status" -eq 5 ]
	[[ "$output" == *'--for: "later" is not end or start'* ]]
}

@test "wait: deleted while waiting exits 4; Ctrl-C exits 5 and leaves the Run alone" {
	mkrun long 1
	mkrun gone 1
	command kubectl trainyard wait gone -n "$NS" --timeout 30s 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	sleep 1
	kubectl delete rn gone -n "$NS" --wait=false >/dev/null
	s=0
	wait "$pid" || s=$?
	[ "$s" -eq 4 ]
	grep -q "run gone in namespace $NS was deleted while waiting" "$BATS_TEST_TMPDIR/err"

	rv="$(rn long '{.metadata.generation}')"
	command kubectl trainyard wait long -n "$NS" --timeout 30s 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	sleep 1
	kill -INT "$pid"
	s=0
	wait "$pid" || s=$?
	[ "$s" -eq 5 ]
	grep -q "interrupted: run long in namespace $NS was left as it is" "$BATS_TEST_TMPDIR/err"
	[ "$(rn long '{.metadata.generation}')" = "$rv" ]
	[ -z "$(rn long '{.spec.suspend}')" ]
}

@test "wait: a dropped watch and a 410 Expired on the re-watch lose nothing" {
	mkrun soon 1 3
	command kubectl trainyard wait soon -n "$NS" --timeout 30s 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	sleep 1
	# Only this namespace's watches: the controller watches every namespace.
	kubectl create --raw /devcluster/faults -f - >/dev/null \
	    <<<"{\"verb\":\"watch\",\"resource\":\"runs\",\"namespace\":\"$NS\",\"code\":410,\"count\":1}"
	kubectl create --raw /devcluster/faults/drop-watches -f - <<<'{}' >/dev/null
	s=0
	wait "$pid" || s=$?
	injected="$(kubectl get --raw /devcluster/faults | jq '[.. | .injected? // empty] | add')"
	kubectl delete --raw /devcluster/faults >/dev/null
	cat "$BATS_TEST_TMPDIR/err"
	[ "$s" -eq 0 ]
	grep -q "run soon in namespace $NS: session 1 Succeeded" "$BATS_TEST_TMPDIR/err"
	[ "$injected" = 1 ]
}

@test "stop, resume, restart: the patches, sessions and what they print" {
	mkrun job 1
	kt wait job -n "$NS" --for start --timeout 20s 2>/dev/null

	run kt stop job -n "$NS"
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/job stopped (session 1 ends, its pods are deleted)" ]
	[ "$(rn job '{.spec.suspend}')" = true ]
	run kt wait job -n "$NS" --timeout 20s
	[ "$status" -eq 2 ]
	run kt stop job -n "$NS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"is already stopped (spec.suspend is true)"* ]]

	wait_cleaned job
	run kt resume job -n "$NS"
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/job resumed (session 2 starts)" ]
	[ "$(rn job '{.spec.suspend}')" = false ]
	kt wait job -n "$NS" --for start --timeout 20s 2>/dev/null
	[ "$(rn job '{.status.session}')" = 2 ]
	run kt resume job -n "$NS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"is not stopped (spec.suspend is false); nothing to resume"* ]]

	run kt restart job -n "$NS"
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/job restarted: session 3 starts (session 2 ends, its pods are deleted)" ]
	[ "$(rn job '{.spec.session}')" = 3 ]
	kt wait job -n "$NS" --for start --timeout 30s 2>/dev/null
	[ "$(rn job '{.status.session}')" = 3 ]

	# restart of a stopped Run resumes it too; -o name prints the Run.
	kt stop job -n "$NS" >/dev/null
	kt wait job -n "$NS" --timeout 20s 2>/dev/null || [ "$?" -eq 2 ]
	run kt restart job -n "$NS" -o name
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/job" ]
	[ "$(rn job '{.spec.suspend} {.spec.session}')" = "false 4" ]
	kt wait job -n "$NS" --for start --timeout 30s 2>/dev/null
	[ "$(rn job '{.status.session}')" = 4 ]

	# A Run that ended: stop has nothing to do; restart runs it again.
	mkrun done 1 0.2
	kt wait done -n "$NS" --timeout 20s 2>/dev/null
	run kt stop done -n "$NS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"has already ended (session 1 Succeeded); nothing to stop"* ]]
	[ -z "$(rn done '{.spec.suspend}')" ]
	run kt restart done -n "$NS" -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .spec.session)" = 2 ]
	# Right after the restart, wait waits for session 2, not session 1's result.
	run kt wait done -n "$NS" --timeout 30s
	[ "$status" -eq 0 ]
	[[ "$output" == *"session 2 Succeeded"* ]]

	run kt stop nope -n "$NS"
	[ "$status" -eq 4 ]
	[[ "$output" == *"run \"nope\" not found in namespace $NS"* ]]
}

@test "describe: history, failed nodes with exit codes and messages, conditions, events" {
	mkrun crash 2 0.2 3 "CUDA error: out of memory"
	wait_phase crash Failed
	run kt describe crash -n "$NS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Phase:        Failed"* ]]
	[[ "$output" == *"Reason:       PodFailed"* ]]
	[[ "$output" == *"Sessions:"* ]]
	echo "$output" | grep -E '^  1 +Failed +PodFailed '
	[[ "$output" == *"Failed nodes (session 1):"* ]]
	echo "$output" | grep -E '^  NODE +POD +MACHINE +EXIT CODE +REASON$'
	echo "$output" | grep -E '^  0 +crash-0 +gpu-[ab][0-9] +3 +Error$'
	[[ "$output" == *"node 0 (crash-0) said:"*"    CUDA error: out of memory"* ]]
	[[ "$output" == *"Conditions:"* ]]
	echo "$output" | grep -E '^  Finished +True +PodFailed '
	[[ "$output" == *"Events:"* ]]
	echo "$output" | grep -E '^  Normal +SessionStarted .* trainyard-controller +session 1 started'
	echo "$output" | grep -E '^  Warning +PodFailed .*session 1 failed: node . exited with code 3'
	[ "$(kt describe crash -n "$NS" -o json | jq -r .metadata.name)" = crash ]

	# A session that cannot be placed: the PodGroup's state while it waits.
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: big}
spec:
  nodes: 5
  profile: gpu-8
  container: {image: busybox}
EOF
	wait_rn big '{.status.session}' 1
	for i in $(seq 50); do
		kubectl get podgroups.scheduling.x-k8s.io big -n "$NS" >/dev/null 2>&1 && break
		sleep 0.1
	done
	run kt describe big -n "$NS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Waiting:"*"PodGroup big (scheduling.x-k8s.io): "* ]]
	# The session that runs is in the table before it ends.
	echo "$output" | grep -E '^  1 +Pending +- +[0-9]+s ago +- +[0-9]+s$'
	kubectl delete rn big -n "$NS" --wait=false >/dev/null

	run kt describe nope -n "$NS"
	[ "$status" -eq 4 ]
}

@test "list: a namespace, -A, -o name and json, a Project's namespaces, -w" {
	mkrun aa 2 0.2
	mkrun bb 1
	wait_phase aa Succeeded
	wait_phase bb Running
	run kt list -n "$NS"
	[ "$status" -eq 0 ]
	echo "$output" | sed -n 1p | grep -E '^NAME +PHASE +SESSION +NODES +GPUS +AGE +REASON$'
	echo "$output" | grep -E '^aa +Succeeded +1 +0/2 +0 +[0-9]+s +Succeeded$'
	echo "$output" | grep -E '^bb +Running +1 +1/1 +0 +[0-9]+s$'
	[ "$(echo "$output" | wc -l)" -eq 3 ]

	run kt list -A
	[ "$status" -eq 0 ]
	echo "$output" | sed -n 1p | grep -E '^NAMESPACE +NAME +PHASE'
	echo "$output" | grep -E "^$NS +bb +Running"

	[ "$(kt list -n "$NS" -o name | sort | tr '\n' ' ')" = \
	    "run.trainyard.dev/aa run.trainyard.dev/bb " ]
	[ "$(kt list -n "$NS" -o json | jq -r '.kind, (.items | length)' | tr '\n' ' ')" = "List 2 " ]

	run kt list -n "$NS" --as nobody
	[ "$status" -eq 5 ]
	[[ "$output" == *"list runs: not allowed: "* ]]
	run kt list -A --as nobody
	[ "$status" -eq 5 ]
	[[ "$output" == *"list runs in all namespaces: not allowed"*"list one namespace with -n NS"* ]]

	kubectl create namespace "$NS-empty" >/dev/null
	run kt list -n "$NS-empty"
	[ "$status" -eq 0 ]
	[[ "$output" == *"No runs found in namespace $NS-empty."* ]]

	# -w: a line per change until Ctrl-C, which exits 0.
	command kubectl trainyard list -n "$NS" -w >"$BATS_TEST_TMPDIR/w" 2>&1 &
	pid=$!
	sleep 1
	kubectl delete rn aa -n "$NS" --wait=false >/dev/null
	for i in $(seq 50); do grep -q '^aa  *Deleted' "$BATS_TEST_TMPDIR/w" && break; sleep 0.1; done
	kill -INT "$pid"
	s=0
	wait "$pid" || s=$?
	[ "$s" -eq 0 ]
	grep -E '^aa +Deleted +1 ' "$BATS_TEST_TMPDIR/w"

	# --project: the Runs of the Project's namespaces.
	kubectl apply -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: p$NS}
spec:
  owners: [{kind: Group, name: leads}]
  namespaces: [{name: p$NS}, {name: p$NS-b}]
  quota: {hard: {requests.nvidia.com/gpu: "8"}}
EOF
	kubectl wait --for=condition=Ready "project/p$NS" --timeout=20s >/dev/null
	NS="p$NS" mkrun one 1
	NS="p$NS-b" mkrun two 1
	run kt list --project "p$NS"
	[ "$status" -eq 0 ]
	echo "$output" | sed -n 1p | grep -E '^NAMESPACE +NAME +PHASE'
	echo "$output" | grep -E "^p$NS +one "
	echo "$output" | grep -E "^p$NS-b +two "
	[ "$(echo "$output" | wc -l)" -eq 3 ]
	# A session that waits for the project's quota: describe and wait say so.
	kubectl apply -n "p$NS" -f - >/dev/null <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: g1}
spec: {nodes: 1, profile: gpu-8, container: {image: busybox}}
EOF
	NS="p$NS" wait_phase g1 Running
	kubectl apply -n "p$NS" -f - >/dev/null <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: g2}
spec: {nodes: 1, profile: gpu-8, container: {image: busybox}}
EOF
	NS="p$NS" wait_rn g2 '{.status.reason}' QuotaExceeded
	run kt describe g2 -n "p$NS"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Waiting:"*"  quota (QuotaExceeded): waiting for quota in project p$NS: needs 8 requests.nvidia.com/gpu"* ]]
	run kt wait g2 -n "p$NS" --for start --timeout 1s
	[ "$status" -eq 3 ]
	[[ "$output" == *"to start: no session yet (Pending: QuotaExceeded)"* ]]
	kubectl delete rn g1 g2 -n "p$NS" --wait=false >/dev/null

	run kt list --project nope
	[ "$status" -eq 5 ]
	[[ "$output" == *'project "nope" not found'* ]]
	run kt list --project "p$NS" -A
	[ "$status" -eq 5 ]
}
