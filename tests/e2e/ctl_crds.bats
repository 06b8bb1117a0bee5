#!/usr/bin/env bats

bats_require_minimum_version 1.5.0
#
# ctl_crds.bats: the Run and ResourceProfile CRDs of crds/ with the real
# kubectl (the default one, and the 1.27 and 1.33 binaries when present):
# they apply and are established, short names and the trainyard category
# work, the schema rejects bad Runs with kubectl's error text, defaults
# appear, printer columns show in "kubectl get rn" and "-o wide", and the
# status subresource carries what the columns print. All of that at
# v1beta1, the storage version; then, with the controller started as the
# default install runs it (its conversion webhook behind the Service
# trainyard-system/trainyard-webhook), a Run written at v1alpha1 converts
# through the webhook, gets kubectl's deprecation warning, runs, and reads
# the same at both versions.

load devcluster
load controller

CRDS="$BATS_TEST_DIRNAME/../../crds"
FIX="$BATS_TEST_DIRNAME/../fixtures/controller/e2e"
SDK=/usr/lib/google-cloud-sdk/bin

# The controller starts only in the last test: before it, the status
# of the sample Run is what the tests write.
setup_file() {
	dc_start --kubernetes-version 1.32 \
	    --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" --pod-start-delay 100ms
	ctl_build
	ctl_install
	ctl_config
}

teardown_file() {
	ctl_teardown_file
}

teardown() {
	ctl_check
}

# kubectl_v VERSION ARGS...: a specific kubectl release, when installed.
kubectl_v() {
	local v="$1"
	shift
	[ -x "$SDK/kubectl.$v" ] || skip "kubectl $v is not installed"
	"$SDK/kubectl.$v" --cache-dir "$DC_DIR/cache-$v" --request-timeout=20s "$@"
}

@test "both CRD files stay small" {
	[ "$(wc -c <"$CRDS/trainyard.dev_runs.yaml")" -lt 65536 ]
	[ "$(wc -c <"$CRDS/trainyard.dev_resourceprofiles.yaml")" -lt 65536 ]
}

@test "short names and the trainyard category" {
	run kubectl api-resources --no-headers
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^runs +rn +trainyard.dev/v1beta1 +true +Run$'
	echo "$output" | grep -E '^resourceprofiles +rp +trainyard.dev/v1beta1 +false +ResourceProfile$'
}

@test "sample runs and profiles apply with every kubectl" {
	run kubectl apply -f "$FIX/samples.yaml"
	[ "$status" -eq 0 ]
	echo "$output" | grep -x 'resourceprofile.trainyard.dev/h100x8 created'
	echo "$output" | grep -x 'run.trainyard.dev/llama created'
	for v in 1.27 1.33; do
		[ -x "$SDK/kubectl.$v" ] || continue
		run kubectl_v "$v" apply -f "$FIX/samples.yaml"
		[ "$status" -eq 0 ]
		# Another release may rewrite last-applied-configuration once.
		echo "$output" | grep -xE 'run.trainyard.dev/llama (unchanged|configured)'
		run kubectl_v "$v" apply -f "$FIX/samples.yaml"
		echo "$output" | grep -x 'run.trainyard.dev/llama unchanged'
		run kubectl_v "$v" get rn llama -o name
		[ "$output" = "run.trainyard.dev/llama" ]
	done
	run kubectl get trainyard -o name
	echo "$output" | grep -x 'run.trainyard.dev/llama'
	echo "$output" | grep -x 'resourceprofile.trainyard.dev/h100x8'
	run kubectl get rp
	echo "$output" | grep -E '^h100x8 +64 +research +'
}

@test "defaults appear" {
	run kubectl get rn llama -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -c '[.spec.session, .spec.restart.policy, .spec.restart.limit]')" = '[1,"Never",3]' ]
	# Nothing is defaulted inside list items: kubectl's client-side apply would
	# report such a list as changed on every apply.
	[ "$(echo "$output" | jq -r '.spec.container.ports[0].protocol')" = null ]
	# Embedded core types keep their fields.
	[ "$(echo "$output" | jq -r '.spec.template.spec.volumes[0].persistentVolumeClaim.claimName')" = datasets ]
	[ "$(echo "$output" | jq -r '.spec.container.env[0].valueFrom.secretKeyRef.name')" = wandb ]
	run kubectl get rp h100x8 -o jsonpath='{.spec.zoneSelectors[0].maxNodes}'
	[ "$output" = 8 ]
}

@test "the schema rejects bad runs with kubectl's message" {
	run kubectl apply -f - <<'YAML'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: zero}
spec: {nodes: 0, container: {image: x}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'The Run "zero" is invalid: spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: huge}
spec: {nodes: 10001, container: {image: x}, restart: {policy: Always}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.nodes: Invalid value: 10001: spec.nodes in body should be less than or equal to 10000'
	echo "$output" | grep -F 'spec.restart.policy: Unsupported value: "Always": supported values: "Never", "OnPreemption", "OnFailure"'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: nocontainer}
spec: {nodes: 1}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.container: Required value'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: noimage}
spec: {nodes: 1, container: {command: [x]}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.container.image: Required value'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: badqty}
spec: {nodes: 1, container: {image: x, resources: {limits: {cpu: two}}}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.container.resources.limits.cpu'
}

@test "printer columns in get rn and -o wide" {
	kubectl patch rn llama --subresource=status --type=merge \
	    -p '{"status":{"phase":"Running","session":1,"readyNodes":"3/4","gpus":32,"reason":"Waiting"}}'
	run kubectl get rn
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^NAME +PHASE +SESSION +NODES +GPUS +AGE$'
	echo "$output" | grep -E '^llama +Running +1 +3/4 +32 +[0-9]+s$'
	run kubectl get rn -o wide
	echo "$output" | grep -E '^NAME +PHASE +SESSION +NODES +GPUS +AGE +REASON$'
	echo "$output" | grep -E '^llama +Running +1 +3/4 +32 +[0-9]+s +Waiting$'
	for v in 1.27 1.33; do
		[ -x "$SDK/kubectl.$v" ] || continue
		run kubectl_v "$v" get rn -o wide
		echo "$output" | grep -E '^llama +Running +1 +3/4 +32 +[0-9]+s +Waiting$'
	done
	# The status subresource ignores spec changes and vice versa.
	run kubectl get rn llama -o jsonpath='{.metadata.generation}'
	[ "$output" = 1 ]
}

# metric NAME LABELS: the value of a series on the controller's /metrics.
metric() {
	local port
	port="$(grep -oE 'metrics on port [0-9]+' "$DC_DIR/controller.log" | tail -1)"
	curl -sS --max-time 5 "http://127.0.0.1:${port##* }/metrics" |
	    awk -v s="$1{$2}" '$1 == s {print $2}'
}

@test "a v1alpha1 Run converts through the webhook: the warning, a session, the same Run at both versions" {
	ctl_start
	NS=alpha
	kubectl create namespace "$NS"
	# The controller writes its CA into the CRDs once it has made it.
	kubectl wait --for=jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}' \
	    --timeout=20s crd/runs.trainyard.dev
	local series='trainyard_webhook_conversion_objects_total'
	local to_beta='desired_version="trainyard.dev/v1beta1",result="success"'
	before="$(metric "$series" "$to_beta")"
	run --separate-stderr kubectl apply -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: old, labels: {client: old}}
spec:
  nodes: 2
  profile: cpu-small
  image: busybox
  command: [sleep, "3600"]
  env: [{name: MODE, value: alpha}]
  restartPolicy: OnFailure
  maxRestarts: 2
  activeDeadlineSeconds: 3600
EOF
	echo "$output $stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/old created" ]
	[ "$stderr" = "Warning: trainyard.dev/v1alpha1 Run is deprecated; use trainyard.dev/v1beta1 Run" ]
	# Stored at v1beta1: the webhook converted it on the way in.
	[ "$(metric "$series" "$to_beta")" -gt "${before:-0}" ]
	wait_phase old Running
	wait_rn old '{.status.readyNodes}' 2/2
	[ "$(owned old)" = 5 ]
	[ "$(events old SessionStarted)" = "session 1 started with 2 nodes" ]
	run kubectl exec -n "$NS" old-1 -- printenv MODE
	[ "$output" = alpha ]

	# The same Run at both versions: metadata, status and each field.
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev old -o json
	[ "$status" -eq 0 ]
	[ "$stderr" = "Warning: trainyard.dev/v1alpha1 Run is deprecated; use trainyard.dev/v1beta1 Run" ]
	alpha="$output"
	run --separate-stderr kubectl get -n "$NS" runs.v1beta1.trainyard.dev old -o json
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	beta="$output"
	[ "$(jq -r .apiVersion <<<"$alpha") $(jq -r .apiVersion <<<"$beta")" = \
	    "trainyard.dev/v1alpha1 trainyard.dev/v1beta1" ]
	[ "$(jq -c '[.metadata, .status]' <<<"$alpha")" = "$(jq -c '[.metadata, .status]' <<<"$beta")" ]
	[ "$(jq -c '.spec | [.nodes, .profile, .session, .image, .command, .env,
	    .restartPolicy, .maxRestarts, .activeDeadlineSeconds]' <<<"$alpha")" = \
	    '[2,"cpu-small",1,"busybox",["sleep","3600"],[{"name":"MODE","value":"alpha"}],"OnFailure",2,3600]' ]
	[ "$(jq -c '.spec | [.nodes, .profile, .session, .container.image, .container.command,
	    .container.env, .restart.policy, .restart.limit, .deadlines.activeSeconds]' <<<"$beta")" = \
	    '[2,"cpu-small",1,"busybox",["sleep","3600"],[{"name":"MODE","value":"alpha"}],"OnFailure",2,3600]' ]
	kubectl delete rn old -n "$NS" --wait=false
}
