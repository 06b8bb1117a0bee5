#!/usr/bin/env bats
#
# dc_crd.bats: the real kubectl against CustomResourceDefinitions on a
# trainyard-devcluster: establishment, discovery (short names,
# categories), printer columns, schema validation and fieldValidation,
# defaults, patches, the status and scale subresources, deprecated
# versions, cluster-scoped resources, and CRD deletion taking its objects,
# its type and its watches with it.
#
# The devcluster reports Kubernetes 1.32 (kubectl 1.32); apply runs with
# the default client validation, which needs the devcluster's OpenAPI.

load devcluster

FIX="$BATS_TEST_DIRNAME/../fixtures/crd"

setup_file() {
	dc_start --kubernetes-version 1.32
	kubectl apply -f "$FIX/run-crd.yaml"
	kubectl apply -f "$FIX/resourceprofile-crd.yaml"
	kubectl apply -f "$FIX/../schema/podgroup-crd.yaml"
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev \
	    crd/podgroups.scheduling.x-k8s.io
}

teardown_file() {
	dc_stop
}

@test "CRDs are established with their names accepted" {
	run kubectl get crd runs.trainyard.dev -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '.status.conditions[] | select(.type=="NamesAccepted") | .reason')" = NoConflicts ]
	[ "$(echo "$output" | jq -r '.status.conditions[] | select(.type=="Established") | .message')" = "the initial names have been accepted" ]
	[ "$(echo "$output" | jq -c .status.acceptedNames.shortNames)" = '["tr"]' ]
	[ "$(echo "$output" | jq -c .status.storedVersions)" = '["v1beta1"]' ]
	run kubectl get crd
	echo "$output" | grep -E '^runs.trainyard.dev +'
}

@test "api-resources lists the custom types with short names and categories" {
	run kubectl api-resources --no-headers
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^runs +tr +trainyard.dev/v1beta1 +true +Run$'
	echo "$output" | grep -E '^resourceprofiles +rp +trainyard.dev/v1alpha1 +false +ResourceProfile$'
	echo "$output" | grep -E '^podgroups +pg,pgs +scheduling.x-k8s.io/v1alpha1 +true +PodGroup$'
	run kubectl api-resources --categories=trainyard -o name
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	echo "$output" | grep -x runs.trainyard.dev
	echo "$output" | grep -x resourceprofiles.trainyard.dev
	# The version that is not served is not there.
	run kubectl get --raw /apis/trainyard.dev/v1
	[ "$status" -ne 0 ]
}

@test "apply a Run and get it with its printer columns" {
	run kubectl apply -f "$FIX/run-r1.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/r1 created" ]
	run kubectl get runs
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^NAME +NODES +MODE +PHASE +AGE$'
	echo "$output" | grep -E '^r1 +4 +Train +[0-9]+s$'
	run kubectl get tr r1 -o wide
	echo "$output" | grep -E '^NAME +NODES +MODE +PHASE +READY +AGE$'
	# Applying the same file again changes nothing.
	run kubectl apply -f "$FIX/run-r1.yaml"
	[ "$output" = "run.trainyard.dev/r1 unchanged" ]
}

@test "defaults show in -o yaml" {
	run kubectl get run r1 -o yaml
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^  mode: Train$'
	echo "$output" | grep -E '^  generation: 1$'
	echo "$output" | grep -E '^apiVersion: trainyard.dev/v1beta1$'
}

@test "schema violations are 422 with upstream's messages" {
	run kubectl apply -f "$FIX/run-bad.yaml" --validate=false
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'The Run "bad" is invalid: '
	echo "$output" | grep -F 'spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1'
	echo "$output" | grep -F 'spec.mode: Unsupported value: "Sleep": supported values: "Train", "Eval"'
	run kubectl get run bad
	[ "$status" -ne 0 ]
}

@test "--validate=strict refuses an unknown field, --validate=warn prunes it" {
	run kubectl apply -f "$FIX/run-unknown.yaml" --validate=strict
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'strict decoding error: unknown field "spec.gpus"'
	run kubectl apply -f "$FIX/run-unknown.yaml" --validate=warn
	[ "$status" -eq 0 ]
	echo "$output" | grep -Fx 'Warning: unknown field "spec.gpus"'
	echo "$output" | grep -Fx 'run.trainyard.dev/r-unknown created'
	run kubectl get run r-unknown -o jsonpath='{.spec}'
	[ "$(echo "$output" | jq -r .gpus)" = null ]
	[ "$(echo "$output" | jq -r .image)" = pytorch:2.4 ]
	kubectl delete run r-unknown
}

@test "merge patches work on a Run, strategic ones are 415" {
	run kubectl patch run r1 --type merge -p '{"spec":{"nodes":2}}'
	[ "$status" -eq 0 ]
	[ "$(kubectl get run r1 -o jsonpath='{.spec.nodes} {.metadata.generation}')" = "2 2" ]
	run kubectl patch run r1 -p '{"spec":{"nodes":3}}'
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml'
	run kubectl patch run r1 --type json -p '[{"op":"replace","path":"/spec/nodes","value":3}]'
	[ "$status" -eq 0 ]
	[ "$(kubectl get run r1 -o jsonpath='{.spec.nodes}')" = 3 ]
}

@test "the status subresource" {
	run kubectl patch run r1 --subresource=status --type merge \
	    -p '{"spec":{"nodes":9},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}'
	[ "$status" -eq 0 ]
	kubectl wait --for=condition=Ready run/r1 --timeout=10s
	run kubectl get run r1 -o wide --no-headers
	echo "$output" | grep -E '^r1 +3 +Train +Running +True +[0-9]+s$'
	# A main-resource write keeps the status and leaves generation to spec.
	kubectl label run r1 team=b --overwrite
	[ "$(kubectl get run r1 -o jsonpath='{.status.phase} {.metadata.generation}')" = "Running 3" ]
}

@test "kubectl scale uses the scale subresource" {
	run kubectl scale run r1 --replicas=6
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/r1 scaled" ]
	[ "$(kubectl get run r1 -o jsonpath='{.spec.nodes}')" = 6 ]
	run kubectl get --raw /apis/trainyard.dev/v1beta1/namespaces/default/runs/r1/scale
	[ "$(echo "$output" | jq -r .apiVersion)" = autoscaling/v1 ]
	[ "$(echo "$output" | jq -r .spec.replicas)" = 6 ]
	run kubectl scale run r1 --replicas=65
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'spec.nodes in body should be less than or equal to 64'
}

@test "a deprecated version warns and reads in its own version" {
	run kubectl apply -f "$FIX/run-r2-v1alpha1.yaml"
	[ "$status" -eq 0 ]
	echo "$output" | grep -Fx 'Warning: trainyard.dev/v1alpha1 Run is deprecated; use trainyard.dev/v1beta1 Run'
	run kubectl get runs.v1alpha1.trainyard.dev r2 -o yaml
	[ "$status" -eq 0 ]
	echo "$output" | grep -Fx 'apiVersion: trainyard.dev/v1alpha1'
	echo "$output" | grep -Fx 'Warning: trainyard.dev/v1alpha1 Run is deprecated; use trainyard.dev/v1beta1 Run'
	# v1alpha1 has its own printer columns.
	run kubectl get runs.v1alpha1.trainyard.dev
	echo "$output" | grep -E '^NAME +NODES +AGE$'
	# Stored in v1beta1, read there with v1beta1's defaults.
	[ "$(kubectl get run r2 -o jsonpath='{.apiVersion} {.spec.mode}')" = "trainyard.dev/v1beta1 Eval" ]
}

@test "field selectors: metadata.name and selectable fields" {
	run kubectl get runs --field-selector spec.mode=Eval -o name
	[ "$status" -eq 0 ]
	[ "$output" = "run.trainyard.dev/r2" ]
	run kubectl get runs --field-selector metadata.name=r1 -o name
	[ "$output" = "run.trainyard.dev/r1" ]
	run kubectl get runs --field-selector spec.image=x
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'field label not supported: spec.image'
}

@test "a cluster-scoped custom resource, and the category" {
	run kubectl apply -f "$FIX/profile-h100.yaml"
	[ "$status" -eq 0 ]
	run kubectl get rp
	echo "$output" | grep -E '^NAME +GPUS +ACCELERATOR +AGE$' || \
	    echo "$output" | grep -E '^NAME +GPUS +ACCELERATOR$'
	echo "$output" | grep -E '^h100x8 +8 +nvidia-h100'
	run kubectl get trainyard
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^run.trainyard.dev/r1 '
	echo "$output" | grep -E '^resourceprofile.trainyard.dev/h100x8 '
}

@test "PodGroups from the scheduler-plugins CRD" {
	run kubectl apply -f "$FIX/podgroup-pg1.yaml"
	[ "$status" -eq 0 ]
	run kubectl get pg
	echo "$output" | grep -E '^NAME +AGE$'
	echo "$output" | grep -E '^pg1 +[0-9]+s$'
	[ "$(kubectl get pg pg1 -o jsonpath='{.spec.minMember}')" = 4 ]
}

@test "deleting a CRD deletes its objects, honours finalizers, then the type" {
	kubectl apply -f - <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata:
  name: r-held
  finalizers: [example.com/hold]
spec:
  image: pytorch:2.4
EOF
	# A watch of the type ends when the type goes.
	kubectl get runs -w >"$DC_DIR/watch.out" 2>&1 &
	local watcher=$!
	wait_for_line "$DC_DIR/watch.out" '^r-held '
	run kubectl delete crd runs.trainyard.dev --wait=false
	[ "$status" -eq 0 ]
	run kubectl get crd runs.trainyard.dev -o jsonpath='{.metadata.finalizers[0]} {.status.conditions[?(@.type=="Terminating")].reason}'
	[ "$output" = "customresourcecleanup.apiextensions.k8s.io InstanceDeletionInProgress" ]
	run kubectl apply -f "$FIX/run-unknown.yaml" --validate=false
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'create not allowed while custom resource definition is terminating'
	# The others go; the held one waits for its finalizer.
	kubectl wait --for=delete run/r1 run/r2 --timeout=20s
	[ -n "$(kubectl get run r-held -o jsonpath='{.metadata.deletionTimestamp}')" ]
	kubectl get crd runs.trainyard.dev
	kubectl patch run r-held --type merge -p '{"metadata":{"finalizers":null}}'
	kubectl wait --for=delete crd/runs.trainyard.dev --timeout=20s
	wait "$watcher"
	# Gone (kubectl words it by what its discovery cache still says).
	run kubectl get runs
	[ "$status" -ne 0 ]
	echo "$output" | grep -E "the server doesn't have a resource type \"runs\"|the server could not find the requested resource"
	run kubectl api-resources --api-group=trainyard.dev -o name
	[ "$output" = "resourceprofiles.trainyard.dev" ]
	# kubectl delete crd waits for the cleanup by itself.
	run kubectl delete crd resourceprofiles.trainyard.dev
	[ "$status" -eq 0 ]
	run kubectl get rp
	[ "$status" -ne 0 ]
}

@test "a CRD can come back after deletion, empty" {
	kubectl apply -f "$FIX/run-crd.yaml"
	kubectl wait --for condition=established crd/runs.trainyard.dev --timeout=20s
	run kubectl get runs -o name
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	kubectl apply -f "$FIX/run-r1.yaml"
	[ "$(kubectl get run r1 -o jsonpath='{.spec.nodes}')" = 4 ]
}

@test "CRDs and their objects are served again after a restart" {
	local d
	d="$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/devcluster.XXXXXX")"
	echo "$d" >>"$DC_DIR.extra"
	_dc_launch "$d" --kubernetes-version 1.32
	kubectl_at "$d" apply -f "$FIX/run-crd.yaml"
	kubectl_at "$d" wait --for condition=established crd/runs.trainyard.dev --timeout=20s
	kubectl_at "$d" apply -f "$FIX/run-r1.yaml"
	# Stop it (the data dir stays), then start it again on the same data.
	kill -TERM "$(cat "$d/pid")"
	timeout 10 tail --pid="$(cat "$d/pid")" -f /dev/null
	! grep -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$d/log"
	rm -f "$d/kubeconfig"
	mv "$d/log" "$d/log.1"
	_dc_launch "$d" --kubernetes-version 1.32
	run kubectl_at "$d" get runs --no-headers
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^r1 +4 +Train '
	run kubectl_at "$d" api-resources --api-group=trainyard.dev -o name
	[ "$output" = "runs.trainyard.dev" ]
	dc_stop_extra "$d"
}
