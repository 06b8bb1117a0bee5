#!/usr/bin/env bats
#
# ctl_nopodgroup.bats: no PodGroup CRD installed. Runs still work, scheduled
# pod by pod by the default scheduler, and the GangScheduling condition
# says why.

load devcluster
load controller

setup_file() {
	export CTL_NO_PODGROUP=1
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

@test "without a PodGroup API: runs work, GangScheduling=False NoPodGroupAPI" {
	grep -F 'PodGroup API: none' "$DC_DIR/controller.log"
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: solo}
spec:
  nodes: 2
  profile: gpu-2
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "6"}
EOF
	wait_phase solo Running
	wait_cond solo GangScheduling False
	[ "$(rn solo '{.status.conditions[?(@.type=="GangScheduling")].reason}')" = NoPodGroupAPI ]
	run kubectl get pod solo-0 -n "$NS" -o json
	[ "$(jq -r .spec.schedulerName <<<"$output")" = default-scheduler ]
	[ "$(jq -r '.metadata.labels["scheduling.x-k8s.io/pod-group"]' <<<"$output")" = null ]
	[ "$(owned solo)" = 4 ]
	wait_phase solo Succeeded
	wait_cleaned solo
	[ "$(owned solo)" = 0 ]
}
