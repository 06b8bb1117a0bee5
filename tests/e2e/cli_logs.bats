#!/usr/bin/env bats
#
# cli_logs.bats: kubectl trainyard submit, run and logs through the real
# kubectl: submit --follow exits with the Run's result and shows every
# node's lines in order (an automatic restart's session too), logs of an
# ended session print the failure messages the Run kept, Ctrl-C leaves the
# Run alone, run --dry-run=client prints a Run kubectl applies, and a
# follow survives a dropped watch and a devcluster restart without losing
# or repeating a line.

bats_require_minimum_version 1.5.0

load cli

setup_file() {
	cli_setup_file
}

teardown_file() {
	cli_teardown_file
}

setup() {
	ctl_ns
}

teardown() {
	ctl_check
}

# runfile NAME NODES EXIT LOG INTERVAL SECONDS [EXTRA ANNOTATION LINES...]:
# a Run manifest whose nodes print LOG (lines separated by \n) one line
# every INTERVAL, then exit with EXIT after SECONDS.
runfile() {
	local name="$1" nodes="$2" code="$3" log="$4" every="$5" secs="$6"
	shift 6
	cat <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: $name}
spec:
  nodes: $nodes
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations:
        devcluster.trainyard.dev/run-seconds: "$secs"
        devcluster.trainyard.dev/exit-code: "$code"
        devcluster.trainyard.dev/log: "$log"
        devcluster.trainyard.dev/log-interval: $every
EOF
	local l
	for l in "$@"; do
		printf '        %s\n' "$l"
	done
}

# node_lines FILE I: node I's lines of a log, without the prefix.
node_lines() {
	sed -n "s/^\[node-$2\] //p" "$1" | tr '\n' ' '
}

@test "submit --follow of a succeeding 3-node Run: every node's lines in order, exit 0" {
	runfile ok 3 0 'a\nb\nc' 200ms 1 >"$BATS_TEST_TMPDIR/ok.yaml"
	run --separate-stderr kt submit -n "$NS" -f "$BATS_TEST_TMPDIR/ok.yaml" --follow
	echo "$output" >"$BATS_TEST_TMPDIR/out"
	echo "stdout: $output" >&2
	echo "stderr: $stderr" >&2
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "run.trainyard.dev/ok created" ]
	for i in 0 1 2; do
		[ "$(node_lines "$BATS_TEST_TMPDIR/out" "$i")" = "a b c " ]
	done
	[ "$(grep -c '^\[node-' "$BATS_TEST_TMPDIR/out")" -eq 9 ]
	[[ "$stderr" == *"waiting for the pods of run ok (session 1) to start"* ]]
	[[ "$stderr" == *"run ok: session 1 Succeeded: all 3 nodes finished successfully"* ]]
	# Applying the same file again changes nothing, and says so.
	run kt submit -n "$NS" -f "$BATS_TEST_TMPDIR/ok.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/ok unchanged" ]
	# A change is applied (server-side apply, field manager kubectl-trainyard).
	sed 's/nodes: 3/nodes: 2/' "$BATS_TEST_TMPDIR/ok.yaml" | kt submit -n "$NS" -f - >"$BATS_TEST_TMPDIR/o2"
	[ "$(cat "$BATS_TEST_TMPDIR/o2")" = "run.trainyard.dev/ok configured" ]
	[ "$(rn ok '{.spec.nodes}')" = 2 ]
	kubectl get rn ok -n "$NS" -o json --show-managed-fields | jq -e '[.metadata.managedFields[].manager] | index("kubectl-trainyard")'
}

@test "submit --follow of a failing 3-node Run: exit 1, every node's lines, the reason on stderr" {
	runfile bad 3 3 'a\nb\nc' 200ms 1 >"$BATS_TEST_TMPDIR/bad.yaml"
	run --separate-stderr kt submit -n "$NS" -f "$BATS_TEST_TMPDIR/bad.yaml" --follow
	echo "$output" >"$BATS_TEST_TMPDIR/out"
	echo "stdout: $output" >&2
	echo "stderr: $stderr" >&2
	[ "$status" -eq 1 ]
	for i in 0 1 2; do
		[ "$(node_lines "$BATS_TEST_TMPDIR/out" "$i")" = "a b c " ]
	done
	[[ "$stderr" == *"run bad: session 1 Failed (PodFailed): node "*" exited with code 3 (Error)"* ]]
}

@test "submit --follow follows an automatic restart's new session to the end" {
	runfile again 2 3 'a\nb' 100ms 0.5 >"$BATS_TEST_TMPDIR/again.yaml"
	printf '  restart: {policy: OnFailure, limit: 1}\n' >>"$BATS_TEST_TMPDIR/again.yaml"
	run --separate-stderr kt submit -n "$NS" -f "$BATS_TEST_TMPDIR/again.yaml" --follow
	echo "$output" >"$BATS_TEST_TMPDIR/out"
	echo "stdout: $output" >&2
	echo "stderr: $stderr" >&2
	[ "$status" -eq 1 ]
	for i in 0 1; do
		[ "$(node_lines "$BATS_TEST_TMPDIR/out" "$i")" = "a b a b " ]
	done
	[[ "$stderr" == *"session 2 of run again started"* ]]
	[[ "$stderr" == *"run again: session 2 Failed (PodFailed)"* ]]
}

@test "logs of a Run whose pods are gone: says so and prints the kept failure messages" {
	runfile gone 2 7 'x\ny' 100ms 0.5 \
	    'devcluster.trainyard.dev/termination-message: "CUDA error: out of memory at step 7"' |
	    ctl_apply
	wait_phase gone Failed
	wait_cleaned gone
	run --separate-stderr kt logs gone -n "$NS"
	echo "stdout: $output" >&2
	echo "stderr: $stderr" >&2
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"session 1 of run gone has ended (Failed: PodFailed) and its pods are gone; the failure messages it kept:"* ]]
	[[ "$output" == *"[node-"?"] exit code 7 (Error), pod gone-"?" on gpu-"* ]]
	[[ "$output" == *"] CUDA error: out of memory at step 7"* ]]
	# -f on an ended session says the same and returns.
	run --separate-stderr kt logs gone -n "$NS" -f --node 0
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"its pods are gone"* ]]
	# Errors say what to do.
	run kt logs nosuch -n "$NS"
	[ "$status" -eq 4 ]
	[[ "$output" == *"run \"nosuch\" not found in namespace $NS"* ]]
	run kt logs gone -n "$NS" --node 5
	[ "$status" -eq 5 ]
	[[ "$output" == *"run gone has 2 nodes: --node takes 0 to 1"* ]]
}

@test "logs of a running Run: one node, --tail, --timestamps" {
	runfile live 2 0 'l1\nl2\nl3\nl4' 50ms 30 | ctl_apply
	wait_phase live Running
	sleep 0.5
	run --separate-stderr kt logs live -n "$NS" --node 1 --tail 2
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '[node-1] l3\n[node-1] l4')" ]
	run --separate-stderr kt logs live -n "$NS" --timestamps
	[ "$status" -eq 0 ]
	[ "$(grep -c '^\[node-[01]\] 20[0-9-]*T[0-9:.]*Z l[1-4]$' <<<"$output")" -eq 8 ]
	# Ctrl-C stops following and leaves the Run alone.
	# (kubectl execs the plugin: $! is the plugin itself.)
	command kubectl trainyard logs live -n "$NS" -f >"$BATS_TEST_TMPDIR/f" 2>&1 3>&- &
	local pid=$! rc=0 i
	for i in $(seq 50); do
		[ "$(grep -c '^\[node-' "$BATS_TEST_TMPDIR/f")" -ge 8 ] && break
		sleep 0.1
	done
	kill -INT "$pid"
	wait "$pid" || rc=$?
	echo "rc $rc: $(cat "$BATS_TEST_TMPDIR/f")" >&2
	[ "$rc" -eq 130 ]
	[ "$(rn live '{.status.phase}')" = Running ]
	kubectl delete rn live -n "$NS" --wait=false >/dev/null
}

@test "run --dry-run=client -o yaml prints a Run that kubectl applies; run --follow" {
	export WANDB_KEY=secret-1
	run --separate-stderr kt run smoke --image busybox --nodes 2 --profile cpu-small \
	    --env A=1 --env-from-local WANDB_KEY --deadline 90s --dry-run=client -o yaml \
	    -- python train.py --lr 0.1
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/smoke.yaml"
	kubectl apply -n "$NS" -f "$BATS_TEST_TMPDIR/smoke.yaml"
	[ "$(rn smoke '{.spec.nodes} {.spec.container.image} {.spec.deadlines.activeSeconds}')" = \
	    "2 busybox 90" ]
	[ "$(kubectl get rn smoke -n "$NS" -o json | jq -c '.spec.container |
	    [.command, .args, .env]')" = '[["python"],["train.py","--lr","0.1"],[{"name":"A","value":"1"},{"name":"WANDB_KEY","value":"secret-1"}]]' ]
	kubectl delete rn smoke -n "$NS" --wait=false >/dev/null
	# A variable that is not set is an error that says so.
	run kt run smoke2 --image busybox --nodes 1 --env-from-local NOPE_NOT_SET --dry-run=client
	[ "$status" -eq 5 ]
	[[ "$output" == *"NOPE_NOT_SET is not set in your environment"* ]]
	run kt run smoke2 --nodes 1 --dry-run=client
	[ "$status" -eq 5 ]
	[[ "$output" == *"--image is required"* ]]
	# For real, followed to its end (the devcluster's containers run until
	# stopped: the deadline ends the session); a second create is refused.
	run --separate-stderr kt run quick -n "$NS" --image busybox --nodes 2 --profile cpu-small \
	    --deadline 2s --follow -- sh -c 'echo hi'
	echo "stdout: $output" >&2
	echo "stderr: $stderr" >&2
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "run.trainyard.dev/quick created" ]
	[[ "$stderr" == *"run quick: session 1 Failed (DeadlineExceeded)"* ]]
	run kt run quick -n "$NS" --image busybox --nodes 2 --profile cpu-small
	[ "$status" -eq 5 ]
	[[ "$output" == *"run \"quick\" already exists in namespace $NS"* ]]
}

# dc_restart_same_port: stops the suite's devcluster and starts it again on
# the same port and data dir, as an API server restart looks to clients.
dc_restart_same_port() {
	local server port pid i
	server="$(command kubectl --kubeconfig "$DC_DIR/kubeconfig" config view \
	    -o jsonpath='{.clusters[0].cluster.server}')"
	port="${server##*:}"
	pid="$(cat "$DC_DIR/pid")"
	kill -TERM "$pid"
	for i in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$DC_DIR/log"
	cp "$DC_DIR/log" "$DC_DIR/log.before-restart"
	mv "$DC_DIR/kubeconfig" "$DC_DIR/kubeconfig.old"
	"$DC_BIN" --listen "127.0.0.1:$port" --kubeconfig "$DC_DIR/kubeconfig" \
	    --data-dir "$DC_DIR/data" --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms --node-monitor-grace-period 2s \
	    --node-monitor-period 500ms >"$DC_DIR/log" 2>&1 3>&- &
	echo $! >"$DC_DIR/pid"
	for i in $(seq 200); do
		[ -s "$DC_DIR/kubeconfig" ] && return 0
		sleep 0.05
	done
	return 1
}

@test "a follow survives a dropped watch and an API server restart: no line lost or repeated" {
	# A restarted devcluster serves a log again with timestamps moved by up
	# to a second (it restores a container's start from status.startedAt,
	# whole seconds, and learns the wall clock again): lines 1.5 s apart,
	# so a moved line never passes the next one.
	local log='l01' i
	for i in $(seq 2 6); do
		log="$log\\nl0$i"
	done
	runfile long 2 0 "$log" 1500ms 9.5 >"$BATS_TEST_TMPDIR/long.yaml"
	kt submit -n "$NS" -f "$BATS_TEST_TMPDIR/long.yaml" --follow \
	    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local pid=$!
	for i in $(seq 100); do
		[ "$(grep -c '^\[node-' "$BATS_TEST_TMPDIR/out")" -ge 4 ] && break
		sleep 0.1
	done
	echo '{}' | kubectl create --raw /devcluster/faults/drop-watches -f - >/dev/null
	sleep 0.3
	dc_restart_same_port
	local rc=0
	wait "$pid" || rc=$?
	echo "stdout: $(cat "$BATS_TEST_TMPDIR/out")" >&2
	echo "stderr: $(cat "$BATS_TEST_TMPDIR/err")" >&2
	[ "$rc" -eq 0 ]
	local want
	want="$(printf 'l%02d ' $(seq 1 6))"
	[ "$(node_lines "$BATS_TEST_TMPDIR/out" 0)" = "$want" ]
	[ "$(node_lines "$BATS_TEST_TMPDIR/out" 1)" = "$want" ]
	grep -q "resuming where it stopped" "$BATS_TEST_TMPDIR/err"
}
