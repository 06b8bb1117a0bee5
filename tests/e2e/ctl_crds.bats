#!/usr/bin/env bats
#
# ctl_crds.bats: the Run and ResourceProfile CRDs of crds/ with the real
# kubectl (the default one, and the 1.27 and 1.33 binaries when present):
# they apply and are established, short names and the trainyard category
# work, the schema rejects bad Runs with kubectl's error text, defaults
# appear, printer columns show in "kubectl get rn" and "-o wide", and the
# status subresource carries what the columns print.

load devcluster

CRDS="$BATS_TEST_DIRNAME/../../crds"
FIX="$BATS_TEST_DIRNAME/../fixtures/controller/e2e"
SDK=/usr/lib/google-cloud-sdk/bin

setup_file() {
	dc_start --kubernetes-version 1.32
	kubectl apply -f "$CRDS/trainyard.dev_runs.yaml" \
	    -f "$CRDS/trainyard.dev_resourceprofiles.yaml"
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev
}

teardown_file() {
	dc_stop
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
	echo "$output" | grep -E '^runs +rn +trainyard.dev/v1alpha1 +true +Run$'
	echo "$output" | grep -E '^resourceprofiles +rp +trainyard.dev/v1alpha1 +false +ResourceProfile$'
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
	[ "$(echo "$output" | jq -c '[.spec.session, .spec.restartPolicy, .spec.maxRestarts]')" = '[1,"Never",3]' ]
	# Nothing is defaulted inside list items: kubectl's client-side apply would
	# report such a list as changed on every apply.
	[ "$(echo "$output" | jq -r '.spec.ports[0].protocol')" = null ]
	# Embedded core types keep their fields.
	[ "$(echo "$output" | jq -r '.spec.template.spec.volumes[0].persistentVolumeClaim.claimName')" = datasets ]
	[ "$(echo "$output" | jq -r '.spec.env[0].valueFrom.secretKeyRef.name')" = wandb ]
	run kubectl get rp h100x8 -o jsonpath='{.spec.zoneSelectors[0].maxNodes}'
	[ "$output" = 8 ]
}

@test "the schema rejects bad runs with kubectl's message" {
	run kubectl apply -f - <<'YAML'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: zero}
spec: {nodes: 0, image: x}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'The Run "zero" is invalid: spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: huge}
spec: {nodes: 10001, image: x, restartPolicy: Always}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.nodes: Invalid value: 10001: spec.nodes in body should be less than or equal to 10000'
	echo "$output" | grep -F 'spec.restartPolicy: Unsupported value: "Always": supported values: "Never", "OnPreemption", "OnFailure"'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: noimage}
spec: {nodes: 1}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.image: Required value'
	run kubectl create -f - <<'YAML'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: badqty}
spec: {nodes: 1, image: x, resources: {limits: {cpu: two}}}
YAML
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.resources.limits.cpu'
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
