#!/usr/bin/env bats
# The simulated kubelets (devcluster/kubelet.c) driven by the real kubectl:
# pod start with an IP from the node's podCIDR, the annotations that end
# containers, CrashLoopBackOff, logs (--tail, --timestamps, -f, --previous),
# graceful deletion (exit 143, ignore-sigterm), events and a stopped kubelet.

load devcluster

setup_file() {
	dc_start --nodes "$DC_REPO/tests/fixtures/devcluster/kubelet-nodes.yaml" \
	    --pod-start-delay 100ms
}

teardown_file() {
	dc_stop
}

# pod NAME RESTART ANNOTATIONS... : a one-container pod on node kl-1.
pod() {
	local name="$1" restart="$2" a
	shift 2
	{
		printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n' "$name"
		printf '  annotations:\n    x: "y"\n'
		for a in "$@"; do
			printf '    devcluster.trainyard.dev/%s\n' "$a"
		done
		printf 'spec:\n  nodeName: kl-1\n  restartPolicy: %s\n' "$restart"
		printf '  terminationGracePeriodSeconds: 5\n'
		printf '  containers:\n  - name: main\n    image: busybox\n'
		printf '    terminationMessagePolicy: FallbackToLogsOnError\n'
	} | kubectl apply -f -
}

# watch_pod NAME FILE: kubectl get -w -o json in the background; prints its pid.
watch_pod() {
	(exec kubectl --cache-dir "$DC_DIR/cache" get pod "$1" -o json -w >"$2" 2>&1 3>&-) &
	echo $!
}

@test "a scheduled pod goes Running with an IP in its node's podCIDR" {
	kubectl run web --image=busybox
	kubectl wait --for=condition=Ready pod/web --timeout=10s
	node="$(kubectl get pod web -o jsonpath='{.spec.nodeName}')"
	cidr="$(kubectl get node "$node" -o jsonpath='{.spec.podCIDR}')"
	ip="$(kubectl get pod web -o jsonpath='{.status.podIP}')"
	[ "${ip%.*}" = "${cidr%.*}" ]
	[ "${ip##*.}" -ge 2 ] && [ "${ip##*.}" -le 254 ]
	run kubectl get pod web -o jsonpath='{.status.hostIP} {.status.phase}'
	[ "$output" = "$(kubectl get node "$node" \
	    -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}') Running" ]
	run kubectl get pod web -o jsonpath='{.status.containerStatuses[0].containerID}'
	[[ "$output" =~ ^containerd://[0-9a-f]{64}$ ]]
	run kubectl get pod web --no-headers
	[[ "$output" == *"1/1"*"Running"* ]]
	run kubectl get pod web -o wide --no-headers
	[[ "$output" == *"$ip"*"$node"* ]]
}

@test "kubectl describe shows the kubelet's events" {
	kubectl wait --for=condition=Ready pod/web --timeout=10s
	run kubectl describe pod web
	[ "$status" -eq 0 ]
	[[ "$output" == *"Pulled"*"kubelet"*'Container image "busybox" already present on machine'* ]]
	[[ "$output" == *"Created"*"kubelet"*"Created container: web"* ]]
	[[ "$output" == *"Started"*"kubelet"*"Started container web"* ]]
	[[ "$output" == *"IP:"*"10.244."* ]]
}

@test "exit-code 3: Failed, reason Error, the log as termination message" {
	pod bad Never 'run-seconds: "0.2"' 'exit-code: "3"' 'log: "starting\nboom"'
	kubectl wait --for=jsonpath='{.status.phase}'=Failed pod/bad --timeout=10s
	run kubectl get pod bad -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}'
	[ "$output" = "3" ]
	run kubectl get pod bad -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}'
	[ "$output" = "Error" ]
	run kubectl get pod bad -o jsonpath='{.status.containerStatuses[0].state.terminated.message}'
	[ "$output" = $'starting\nboom' ]
	# Started the second the log's timestamps count from, ended after it.
	run kubectl get pod bad -o jsonpath='{.status.containerStatuses[0].state.terminated.startedAt} {.status.containerStatuses[0].state.terminated.finishedAt}'
	[[ "$output" =~ ^(20[0-9-]+T[0-9:]+Z)\ (20[0-9-]+T[0-9:]+Z)$ ]]
	started="${BASH_REMATCH[1]}"
	[[ ! "${BASH_REMATCH[2]}" < "$started" ]]
	run kubectl logs bad --timestamps
	[[ "$output" == "${started%Z}.000000000Z starting"* ]]
	run kubectl get pod bad --no-headers
	[[ "$output" == *"0/1"*"Error"* ]]
}

@test "run-seconds then exit 0: Succeeded (Completed)" {
	pod done Never 'run-seconds: "0.3"'
	kubectl wait --for=jsonpath='{.status.phase}'=Succeeded pod/done --timeout=10s
	run kubectl get pod done --no-headers
	[[ "$output" == *"Completed"* ]]
	run kubectl get pod done -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'
	[ "$output" = "PodCompleted" ]
}

@test "kubectl logs, --tail, --timestamps" {
	pod talk Always 'log: "alpha\nbeta\ngamma"'
	kubectl wait --for=condition=Ready pod/talk --timeout=10s
	run kubectl logs talk
	[ "$output" = $'alpha\nbeta\ngamma' ]
	run kubectl logs talk --tail=1
	[ "$output" = "gamma" ]
	run kubectl logs talk --timestamps --tail=2
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z\ beta$ ]]
	[[ "${lines[1]}" =~ Z\ gamma$ ]]
	run kubectl logs talk --previous
	[ "$status" -ne 0 ]
	[[ "$output" == *'previous terminated container "main" in pod "talk" not found'* ]]
}

@test "kubectl logs -f follows and ends when the container exits" {
	pod tick Never 'log: "one\ntwo\nthree"' 'log-interval: 300ms' 'run-seconds: "1"'
	kubectl wait --for=condition=Ready pod/tick --timeout=10s
	run timeout 10 kubectl logs -f tick
	[ "$status" -eq 0 ]
	[ "$output" = $'one\ntwo\nthree' ]
	kubectl wait --for=jsonpath='{.status.phase}'=Succeeded pod/tick --timeout=10s
}

@test "a waiting container has no logs; a bad annotation is a config error" {
	pod broken Always 'exit-code: "lots"'
	kubectl wait --for=jsonpath='{.status.containerStatuses[0].state.waiting.reason}'=CreateContainerConfigError \
	    pod/broken --timeout=10s
	run kubectl get pod broken -o \
	    jsonpath='{.status.containerStatuses[0].state.waiting.message}'
	[[ "$output" == *"devcluster.trainyard.dev/exit-code"* ]]
	run kubectl logs broken
	[ "$status" -ne 0 ]
	[[ "$output" == *'container "main" in pod "broken" is waiting to start: CreateContainerConfigError'* ]]
}

@test "a crashing container restarts, then CrashLoopBackOff" {
	pod crash Always 'run-seconds: "0.2"' 'exit-code: "1"' 'log: "dying"'
	kubectl wait --for=jsonpath='{.status.containerStatuses[0].state.waiting.reason}'=CrashLoopBackOff \
	    pod/crash --timeout=10s
	run kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].restartCount}'
	[ "$output" = "1" ]
	run kubectl get pod crash --no-headers
	[[ "$output" == *"CrashLoopBackOff"*"1"* ]]
	run kubectl get pod crash -o \
	    jsonpath='{.status.containerStatuses[0].state.waiting.message}'
	[[ "$output" == "back-off 10s restarting failed container=main pod=crash_default("* ]]
	run kubectl logs crash --previous
	[ "$output" = "dying" ]
	run kubectl describe pod crash
	[[ "$output" == *"BackOff"*"Back-off restarting failed container main"* ]]
}

@test "graceful deletion: the containers exit 143, then the pod is gone" {
	pod bye Always
	kubectl wait --for=condition=Ready pod/bye --timeout=10s
	w="$BATS_TEST_TMPDIR/watch"
	pid="$(watch_pod bye "$w")"
	wait_for_line "$w" '"phase": "Running"'
	kubectl delete pod bye --timeout=10s
	wait_for_line "$w" '"exitCode": 143'
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	grep -q '"reason": "Error"' "$w"
	grep -q '"phase": "Failed"' "$w"
	run kubectl get pod bye
	[ "$status" -ne 0 ]
	run kubectl get events --field-selector involvedObject.name=bye,reason=Killing \
	    -o jsonpath='{.items[0].message}'
	[ "$output" = "Stopping container main" ]
}

@test "ignore-sigterm: the container runs out the grace period, exit 137" {
	pod stubborn Always 'ignore-sigterm: "true"'
	kubectl wait --for=condition=Ready pod/stubborn --timeout=10s
	w="$BATS_TEST_TMPDIR/watch"
	pid="$(watch_pod stubborn "$w")"
	wait_for_line "$w" '"phase": "Running"'
	start=$(date +%s%N)
	kubectl delete pod stubborn --grace-period=1 --timeout=10s
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	wait_for_line "$w" '"exitCode": 137'
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	! grep -q '"exitCode": 143' "$w"
	[ "$took" -ge 300 ]
}

@test "a stopped kubelet leaves its pod Terminating until it comes back" {
	kubectl run held --image=busybox --overrides='{"spec":{"nodeName":"kl-2"}}'
	kubectl wait --for=condition=Ready pod/held --timeout=10s
	kubectl annotate node kl-2 devcluster.trainyard.dev/kubelet=stopped
	kubectl delete pod held --wait=false
	sleep 1
	run kubectl get pod held -o jsonpath='{.metadata.deletionTimestamp} {.status.phase}'
	[[ "$output" == *"Z Running" ]]
	run kubectl get pod held --no-headers
	[[ "$output" == *"Terminating"* ]]
	kubectl annotate node kl-2 devcluster.trainyard.dev/kubelet-
	kubectl wait --for=delete pod/held --timeout=10s
}
