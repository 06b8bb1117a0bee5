#!/usr/bin/env bats
#
# dc_exec.bats: kubectl exec against a trainyard-devcluster (pods/exec over
# WebSocket, v5.channel.k8s.io): the built-in commands (hostname, env,
# cat /etc/resolv.conf, echo, true, false, sh -c 'exit N', cat with -i),
# exit codes, the runtime's error for an unknown program, -c with two
# containers, a container that is not running, RBAC, and kubectl 1.29's
# SPDY, which the devcluster does not serve.
#
# Pods are made "running" by patching pods/status as a kubelet would, on
# a Node whose simulated kubelet is stopped (so nothing else writes them).
# Users: alice (may exec) and bob (may only read pods), from a
# --token-auth-file.

load devcluster

bats_require_minimum_version 1.5.0

setup_file() {
	printf 'tok-alice,alice,u-alice\ntok-bob,bob,u-bob\n' >"$BATS_FILE_TMPDIR/tokens"
	dc_start --kubernetes-version 1.32 --token-auth-file "$BATS_FILE_TMPDIR/tokens"
	kubectl apply -f - <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: exec-node
  annotations: {devcluster.trainyard.dev/kubelet: stopped}
---
apiVersion: v1
kind: Service
metadata: {name: trainer-master}
spec:
  selector: {app: trainer}
  ports: [{name: dist, port: 29500}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: trainer-config}
data: {EPOCHS: "10"}
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer-0
  labels: {app: trainer}
spec:
  nodeName: exec-node
  hostname: trainer-0
  subdomain: trainers
  dnsConfig:
    searches: [trainers.default.svc.cluster.local]
    options: [{name: ndots, value: "2"}]
  containers:
  - name: main
    image: busybox
    env:
    - {name: RANK, value: "0"}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MASTER_ADDR, value: "$(POD_NAME).trainers"}
    - {name: EPOCHS, valueFrom: {configMapKeyRef: {name: trainer-config, key: EPOCHS}}}
  - name: sidecar
    image: busybox
---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec:
  nodeName: exec-node
  containers: [{name: main, image: busybox}]
EOF
	kubectl patch pod trainer-0 --subresource=status --type=merge -p '{"status":{
	    "phase":"Running","podIP":"10.244.1.7","podIPs":[{"ip":"10.244.1.7"}],
	    "containerStatuses":[
	      {"name":"main","ready":true,"restartCount":0,"image":"busybox","imageID":"",
	       "state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}},
	      {"name":"sidecar","ready":true,"restartCount":0,"image":"busybox","imageID":"",
	       "state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}]}}'
	kubectl create role exec --verb=get,create --resource=pods,pods/exec
	kubectl create rolebinding alice-exec --role=exec --user=alice
	kubectl create role read --verb=get,list --resource=pods
	kubectl create rolebinding bob-read --role=read --user=bob
}

teardown_file() {
	dc_stop
}

@test "hostname and hostname -f: spec.hostname and the subdomain's FQDN" {
	run kubectl exec trainer-0 -c main -- hostname
	[ "$status" -eq 0 ]
	[ "$output" = trainer-0 ]
	run kubectl exec trainer-0 -c main -- hostname -f
	[ "$output" = trainer-0.trainers.default.svc.cluster.local ]
}

@test "env: the container's variables, expanded and resolved, and service links" {
	run kubectl exec trainer-0 -c main -- env
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ]
	[ "${lines[1]}" = HOSTNAME=trainer-0 ]
	echo "$output" | grep -qx 'RANK=0'
	echo "$output" | grep -qx 'MASTER_ADDR=trainer-0.trainers'
	echo "$output" | grep -qx 'EPOCHS=10'
	echo "$output" | grep -qx 'KUBERNETES_SERVICE_HOST=10.96.0.1'
	echo "$output" | grep -qx 'KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443'
	echo "$output" | grep -qx 'TRAINER_MASTER_SERVICE_PORT_DIST=29500'
	run kubectl exec trainer-0 -c main -- printenv MASTER_ADDR
	[ "$output" = trainer-0.trainers ]
	run kubectl exec trainer-0 -c main -- printenv NOPE
	[ "$status" -eq 1 ]
}

@test "cat /etc/resolv.conf, /etc/hosts and /etc/hostname as the kubelet writes them" {
	run kubectl exec trainer-0 -c main -- cat /etc/resolv.conf
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "search default.svc.cluster.local svc.cluster.local cluster.local trainers.default.svc.cluster.local" ]
	[ "${lines[1]}" = "nameserver 10.96.0.10" ]
	[ "${lines[2]}" = "options ndots:2" ]
	run kubectl exec trainer-0 -c main -- cat /etc/hosts
	echo "$output" | grep -qx "$(printf '10.244.1.7\ttrainer-0.trainers.default.svc.cluster.local\ttrainer-0')"
	run kubectl exec trainer-0 -c main -- cat /etc/hostname
	[ "$output" = trainer-0 ]
	run kubectl exec trainer-0 -c main -- cat /etc/shadow
	[ "$status" -eq 1 ]
	[ "$output" = "cat: /etc/shadow: No such file or directory
command terminated with exit code 1" ]
}

@test "echo, and stdin through cat with -i" {
	run kubectl exec trainer-0 -c main -- echo hi there
	[ "$status" -eq 0 ]
	[ "$output" = "hi there" ]
	run bash -c 'printf "line one\nline two\n" | kubectl exec -i trainer-0 -c main -- cat'
	[ "$status" -eq 0 ]
	[ "$output" = "line one
line two" ]
}

@test "exit codes reach kubectl; an unknown program gets containerd's error" {
	run kubectl exec trainer-0 -c main -- true
	[ "$status" -eq 0 ]
	run kubectl exec trainer-0 -c main -- false
	[ "$status" -eq 1 ]
	[ "$output" = "command terminated with exit code 1" ]
	run kubectl exec trainer-0 -c main -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	run -127 kubectl exec trainer-0 -c main -- sh -c 'nope --version'
	[ "${lines[0]}" = "sh: 1: nope: not found" ]
	run kubectl exec trainer-0 -c main -- nope
	[ "$status" -eq 1 ]
	[[ "$output" == 'error: Internal error occurred: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "'* ]]
	[[ "$output" == *'": OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown' ]]
}

@test "-c picks the container; without it kubectl defaults to the first" {
	run kubectl exec trainer-0 -c sidecar -- hostname
	[ "$status" -eq 0 ]
	[ "$output" = trainer-0 ]
	run kubectl exec trainer-0 -- hostname
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 'Defaulted container "main" out of: main, sidecar' ]
	[ "${lines[1]}" = trainer-0 ]
}

@test "a container that is not running: the kubelet's error through the apiserver" {
	run kubectl exec waiting -- hostname
	[ "$status" -eq 1 ]
	[ "$output" = 'error: Internal error occurred: unable to upgrade connection: container not found ("main")' ]
}

@test "RBAC: alice may exec, bob gets the 403 of the SPDY retry (create)" {
	run kubectl --token=tok-alice exec trainer-0 -c main -- hostname
	[ "$status" -eq 0 ]
	[ "$output" = trainer-0 ]
	run kubectl --token=tok-bob exec trainer-0 -c main -- hostname
	[ "$status" -eq 1 ]
	[ "$output" = 'error: pods "trainer-0" is forbidden: User "bob" cannot create resource "pods/exec" in API group "" in the namespace "default"' ]
}

@test "kubectl 1.29 speaks SPDY, which is not served; with WebSockets enabled it works" {
	K129=/usr/lib/google-cloud-sdk/bin/kubectl.1.29
	[ -x "$K129" ] || skip "kubectl 1.29 is not installed"
	run timeout 20 "$K129" --kubeconfig "$KUBECONFIG" exec trainer-0 -c main -- hostname
	[ "$status" -ne 0 ]
	[[ "$output" == *"unable to upgrade connection"* ]]
	run env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true timeout 20 "$K129" \
	    --kubeconfig "$KUBECONFIG" exec trainer-0 -c main -- hostname
	[ "$status" -eq 0 ]
	[ "$output" = trainer-0 ]
}
