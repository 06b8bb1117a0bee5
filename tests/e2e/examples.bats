#!/usr/bin/env bats
#
# examples.bats: the libkc example programs (examples/libkc/) against the
# devcluster and the controller, as a user would run them: run-wait exits
# with the Run's result (0 Succeeded, 1 Failed, 3 timed out, 4 gone) and
# says so when the Run already ended; gpu-usage sums the GPUs held by
# Trainyard's pods per namespace and Run.

load devcluster
load controller

EX_BIN="$DC_REPO/$DC_BUILD/san/bin/examples"

setup_file() {
	dc_make "$DC_BUILD/san/bin/examples/run-wait" \
	    "$DC_BUILD/san/bin/examples/gpu-usage"
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

# job NAME SECONDS EXIT [NODES]: a Run of NODES (default 1) 2-GPU nodes
# whose containers exit with EXIT after SECONDS.
job() {
	ctl_apply <<EOF2
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: $1}
spec:
  nodes: ${4:-1}
  profile: gpu-2
  container: {image: busybox}
  template:
    metadata:
      annotations:
        devcluster.trainyard.dev/run-seconds: "$2"
        devcluster.trainyard.dev/exit-code: "$3"
EOF2
}

@test "run-wait follows a Run to Succeeded and exits 0" {
	job ok 1 0
	run "$EX_BIN/run-wait" -n "$NS" --timeout 60 ok
	[ "$status" -eq 0 ]
	[[ "$output" == *"run ok: session 1 Succeeded"* ]]
}

@test "run-wait exits 1 for a Failed Run, with the reason" {
	job bad 0.5 3
	run "$EX_BIN/run-wait" -n "$NS" --timeout 60 bad
	[ "$status" -eq 1 ]
	[[ "$output" == *"Failed (PodFailed)"* ]]
	# Asked again after the end, it answers at once with the same result.
	run "$EX_BIN/run-wait" -n "$NS" --timeout 1 bad
	[ "$status" -eq 1 ]
}

@test "run-wait: 3 when the timeout passes, 4 for a Run that does not exist or is deleted" {
	job forever 3600 0
	run "$EX_BIN/run-wait" -n "$NS" --timeout 1 forever
	[ "$status" -eq 3 ]
	[[ "$output" == *"still "* ]]
	run "$EX_BIN/run-wait" -n "$NS" --timeout 5 nosuchrun
	[ "$status" -eq 4 ]
	[[ "$output" == *'run "nosuchrun" not found'* ]]
	( sleep 1; kubectl delete rn -n "$NS" forever --wait=false >/dev/null 2>&1 ) &
	run "$EX_BIN/run-wait" -n "$NS" --timeout 30 forever
	wait
	[ "$status" -eq 4 ]
	[[ "$output" == *"was deleted"* ]]
	run "$EX_BIN/run-wait" --timeout 0 x
	[ "$status" -eq 5 ]
	[[ "$output" == *"--timeout: expected a positive number of seconds"* ]]
}

@test "gpu-usage sums the GPUs of running Trainyard pods by Run" {
	job big 3600 0 3
	job small 3600 0 1
	wait_phase big Running
	wait_phase small Running
	run "$EX_BIN/gpu-usage" -n "$NS"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$(echo "$output" | awk -v ns="$NS" '$1 == ns && $2 == "big" {print $3, $4}')" == "3 6" ]]
	[[ "$(echo "$output" | awk -v ns="$NS" '$1 == ns && $2 == "small" {print $3, $4}')" == "1 2" ]]
	[[ "$(echo "$output" | awk '$1 == "TOTAL" {print $2, $3}')" == "4 8" ]]
	run "$EX_BIN/gpu-usage" -A --resource rdma/hca_shared_devices_a
	[ "$status" -eq 0 ]
	[[ "$output" == *"rdma/hca_shared_devices_a"* ]]
	run "$EX_BIN/gpu-usage" -A -n "$NS"
	[ "$status" -eq 1 ]
}
