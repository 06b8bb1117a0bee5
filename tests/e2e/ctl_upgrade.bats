#!/usr/bin/env bats
#
# ctl_upgrade.bats: the CRDs of crds/ (v1beta1 stored, v1alpha1 served
# and deprecated) applied over those of crds/previous/, with the real
# kubectl, and "trainyard-controller migrate" against them: every field of
# both versions is described, kubectl prints the deprecation warning, and
# migrate rewrites ResourceProfiles, drops managedFields of v1alpha1 and
# trims status.storedVersions, again and again without harm. Then the
# controller, started against these CRDs, reads and writes Runs at v1beta1.
# Every Run here is stored and read at v1beta1 (reading one at another
# version needs the conversion webhook).

load devcluster
load controller

CRDS="$BATS_TEST_DIRNAME/../../crds"

setup_file() {
	ctl_build
	dc_start --kubernetes-version 1.32 \
	    --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" --pod-start-delay 100ms
	kubectl apply -f "$CRDS/previous/trainyard.dev_runs.yaml" \
	    -f "$CRDS/previous/trainyard.dev_resourceprofiles.yaml"
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev
	local i
	for i in 1 2 3; do
		printf 'apiVersion: trainyard.dev/v1alpha1\nkind: ResourceProfile\n%s\n%s\n' \
		    "metadata: {name: p$i}" "spec: {maxNodes: $i}" |
		    kubectl apply --server-side -f -
	done
	kubectl apply -f "$CRDS/trainyard.dev_runs.yaml" \
	    -f "$CRDS/trainyard.dev_resourceprofiles.yaml"
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev
}

teardown_file() {
	ctl_teardown_file
}

# undescribed VERSION: the properties of trainyard.dev/VERSION's schemas
# (as the API server publishes them) without a description, one a line.
undescribed() {
	kubectl get --raw "/openapi/v3/apis/trainyard.dev/$1" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
def walk(n, p):
    for k, v in n.get("properties", {}).items():
        if "description" not in v and "allOf" not in v and "$ref" not in v:
            print(p + "." + k)
        walk(v, p + "." + k)
    if "items" in n:
        walk(n["items"], p + "[]")
for name, s in doc["components"]["schemas"].items():
    if "trainyard" in name:
        walk(s, name)
'
}

@test "every field of both versions has a description" {
	run undescribed v1beta1
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run undescribed v1alpha1
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run kubectl explain runs.spec --api-version=trainyard.dev/v1beta1 --recursive
	[ "$status" -eq 0 ]
	[[ "$output" == *"ingressFrom"* ]]
	[[ "$output" != *"no description"* ]]
	run kubectl explain runs.spec.container.image --api-version=trainyard.dev/v1beta1
	[[ "$output" == *"Container image every node runs."* ]]
	run kubectl explain runs.spec.restart.policy --api-version=trainyard.dev/v1beta1
	[[ "$output" == *"Which failed sessions start a new one automatically"* ]]
}

@test "v1beta1 is stored, v1alpha1 deprecated with kubectl's warning" {
	run kubectl get crd runs.trainyard.dev -o \
	    jsonpath='{range .spec.versions[*]}{.name}={.storage},{.deprecated} {end}'
	[ "$output" = "v1beta1=true, v1alpha1=false,true " ]
	run kubectl get crd runs.trainyard.dev -o jsonpath='{.spec.conversion.strategy}'
	[ "$output" = "Webhook" ]
	run kubectl get crd resourceprofiles.trainyard.dev -o jsonpath='{.spec.conversion.strategy}'
	[ "$output" = "None" ]
	run kubectl get resourceprofiles.v1alpha1.trainyard.dev p1
	[ "$status" -eq 0 ]
	[[ "$output" == *"Warning: trainyard.dev/v1alpha1 ResourceProfile is deprecated; use trainyard.dev/v1beta1 ResourceProfile"* ]]
}

@test "migrate rewrites every object, drops v1alpha1 managedFields, trims storedVersions" {
	run kubectl get crd resourceprofiles.trainyard.dev -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1alpha1","v1beta1"]' ]
	run kubectl get resourceprofiles.v1beta1.trainyard.dev p1 --show-managed-fields \
	    -o jsonpath='{.metadata.managedFields[*].apiVersion}'
	[[ "$output" == *"trainyard.dev/v1alpha1"* ]]

	run "$CTL_BIN" migrate --kubeconfig "$DC_DIR/kubeconfig" --dry-run
	[ "$status" -eq 0 ]
	[[ "$output" == *"resourceprofiles.trainyard.dev: 3 would be rewritten, 0 skipped (gone), 0 failed"* ]]
	run kubectl get crd resourceprofiles.trainyard.dev -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1alpha1","v1beta1"]' ]

	run "$CTL_BIN" migrate --kubeconfig "$DC_DIR/kubeconfig"
	[ "$status" -eq 0 ]
	[[ "$output" == *"runs.trainyard.dev: 0 rewritten, 0 skipped (gone), 0 failed"* ]]
	[[ "$output" == *"resourceprofiles.trainyard.dev: 3 rewritten, 0 skipped (gone), 0 failed"* ]]
	[[ "$output" == *"resourceprofiles.trainyard.dev: status.storedVersions set to [v1beta1]"* ]]
	run kubectl get crd resourceprofiles.trainyard.dev runs.trainyard.dev \
	    -o jsonpath='{.items[*].status.storedVersions}'
	[ "$output" = '["v1beta1"] ["v1beta1"]' ]
	run kubectl get resourceprofiles.v1beta1.trainyard.dev p1 --show-managed-fields \
	    -o jsonpath='{.metadata.managedFields[*].apiVersion}'
	[[ "$output" != *"trainyard.dev/v1alpha1"* ]]
	run kubectl get resourceprofiles.v1beta1.trainyard.dev p2 -o jsonpath='{.spec.maxNodes}'
	[ "$output" = 2 ]

	# Again: nothing left to do, nothing harmed.
	run "$CTL_BIN" migrate --kubeconfig "$DC_DIR/kubeconfig"
	[ "$status" -eq 0 ]
	[[ "$output" == *"resourceprofiles.trainyard.dev: status.storedVersions is already [v1beta1]"* ]]
}

@test "migrate: bad usage exits 2" {
	run "$CTL_BIN" migrate --no-such-flag
	[ "$status" -eq 2 ]
	[[ "$output" == *"usage: trainyard-controller migrate"* ]]
	run "$CTL_BIN" migrate extra
	[ "$status" -eq 2 ]
}

@test "the controller reads and writes Runs at v1beta1" {
	kubectl apply -f "$CRDS/third-party/scheduling.x-k8s.io_podgroups.yaml" \
	    -f "$DC_REPO/examples/priorityclasses.yaml" -f "$DC_REPO/examples/profiles.yaml"
	ctl_config
	ctl_start
	grep -q "Runs and ResourceProfiles at trainyard.dev/v1beta1" "$DC_DIR/controller.log"
	NS=upgrade
	kubectl create namespace "$NS"
	kubectl apply -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: beta}
spec:
  nodes: 2
  profile: cpu-small
  container: {image: busybox, command: [sleep, "3600"]}
  restart: {policy: OnFailure, limit: 1}
  network:
    ingressFrom:
    - ipBlock: {cidr: 10.0.0.0/8}
EOF
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running \
	    runs.v1beta1.trainyard.dev/beta --timeout="$CTL_WAIT"
	run kubectl get -n "$NS" networkpolicy beta -o jsonpath='{.spec.ingress[0].from[*].ipBlock.cidr}'
	[ "$output" = "10.0.0.0/8" ]
	run kubectl get -n "$NS" pod beta-0 -o jsonpath='{.metadata.ownerReferences[0].apiVersion}'
	[ "$output" = "trainyard.dev/v1beta1" ]
	run kubectl get -n "$NS" pod beta-1 -o jsonpath='{.spec.containers[0].command}'
	[ "$output" = '["sleep","3600"]' ]
	# Its Events name it at the version it was read at.
	run kubectl get events -n "$NS" --field-selector involvedObject.name=beta,reason=SessionStarted \
	    -o jsonpath='{.items[*].involvedObject.apiVersion}'
	[ "$output" = trainyard.dev/v1beta1 ]

	# An invalid v1beta1 Run: the problems name its v1beta1 fields.
	kubectl apply -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: bad}
spec:
  nodes: 2
  container: {image: busybox}
EOF
	kubectl wait -n "$NS" --for=condition=Valid=False runs.v1beta1.trainyard.dev/bad \
	    --timeout="$CTL_WAIT"
	run kubectl get -n "$NS" runs.v1beta1.trainyard.dev bad \
	    -o jsonpath='{.status.conditions[?(@.type=="Valid")].message}'
	[[ "$output" == *"spec.container.resources"* ]]
	ctl_check
}
