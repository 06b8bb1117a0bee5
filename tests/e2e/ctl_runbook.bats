#!/usr/bin/env bats

bats_require_minimum_version 1.5.0
#
# ctl_runbook.bats: docs/upgrade.md, step by step, on the devcluster with
# the real kubectl, while Runs run all the way through. Each test is one
# step of the runbook (in order: they share the cluster), with the step's
# check and, where the runbook has one, its rollback.
#
# The controller runs on the host (the Deployment's pods are simulated
# and run nothing), so the Service trainyard-webhook gets hand-written
# Endpoints pointing at it, as docs/upgrade.md says for the devcluster.
# The Runs "alpha" (created at v1alpha1 before the upgrade) and, later,
# "beta" must keep their session and their pods' uids to the end.

load devcluster
load controller

CRDS="$BATS_TEST_DIRNAME/../../crds"
SVC=trainyard-webhook
NS=runbook

setup_file() {
	ctl_build || return 1
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms || return 1
	CTL_CRDS="$CRDS/previous" ctl_install || return 1
	kubectl apply -f "$DC_REPO/manifests/namespace.yaml" >/dev/null || return 1
	ctl_config
	# The controller looks the served versions up every second, not 30 s.
	echo "apiDiscoveryInterval: 1s" >>"$DC_DIR/controller.yaml"
	kubectl create namespace "$NS" >/dev/null
}

teardown_file() {
	local status=0
	ctl_proc_stop_all || status=1
	dc_stop || status=1
	return "$status"
}

# endpoints NAME: points the Service's Endpoints at controller NAME's
# webhook port, as the endpoints controller would at a new pod.
endpoints() {
	local port
	port="$(sed -n 's/.*conversion webhook on port \([0-9]*\).*/\1/p' \
	    "$DC_DIR/ctl-$1.log" | tail -1)"
	[ -n "$port" ] || return 1
	kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Endpoints
metadata: {name: $SVC, namespace: trainyard-system}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: webhook, port: $port}]
EOF
}

# controller NAME: a controller as the manifests run one (self-managed
# certificates in trainyard-system), reachable through the Service.
controller() {
	POD_NAMESPACE=trainyard-system ctl_proc_launch "$1" --webhook-cert-mode=self ||
	    return 1
	# Its caches may need its own webhook to list Runs: the endpoint first.
	ctl_proc_wait "$1" 'conversion webhook on port' 30 || return 1
	endpoints "$1" || return 1
	ctl_proc_wait "$1" '(msg=started|"msg":"started")' 30
}

# pods_of RUN: "session uid uid ..." of the Run's pods, to compare.
pods_of() {
	echo "$(kubectl get -n "$NS" "runs.$2trainyard.dev" "$1" \
	    -o jsonpath='{.status.session}') $(kubectl get pods -n "$NS" \
	    -l "trainyard.dev/run=$1" -o jsonpath='{.items[*].metadata.uid}')"
}

# crds ARGS...: kubectl apply ARGS, then the established condition, and
# kubectl's discovery cache refreshed (docs/upgrade.md: kubectl would
# otherwise keep asking for a version no longer served).
crds() {
	kubectl apply "$@" >/dev/null || return 1
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev >/dev/null || return 1
	kubectl api-resources --api-group=trainyard.dev >/dev/null
}

# switched NAME VERSION WAS N: controller NAME has logged N times that it
# moved to trainyard.dev/VERSION from WAS (waits up to 10 s for it).
switched() {
	local line="serving version changed: reading trainyard.dev/$2 (was $3)" i
	for i in $(seq 100); do
		[ "$(grep -cF "$line" "$DC_DIR/ctl-$1.log")" -ge "$4" ] && return 0
		sleep 0.1
	done
	echo "controller $1 logged \"$line\" fewer than $4 times:" >&2
	tail -20 "$DC_DIR/ctl-$1.log" >&2
	return 1
}

# starts NAME: how many times controller NAME started.
starts() {
	grep -cE '(msg=started|"msg":"started")' "$DC_DIR/ctl-$1.log"
}

# ca_bundled: both CRDs that convert by Webhook carry the CA (the
# controller writes it within 15 s of the CRD's apply).
ca_bundled() {
	kubectl wait --for=jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}' \
	    --timeout=30s crd/runs.trainyard.dev >/dev/null
}

@test "before: a Run at v1alpha1 is Running under the controller" {
	controller old
	kubectl apply -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: alpha, labels: {team: a}}
spec:
  nodes: 2
  profile: cpu-small
  image: busybox
  command: [sleep, "3600"]
  restartPolicy: OnFailure
  maxRestarts: 2
EOF
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running rn/alpha \
	    --timeout="$CTL_WAIT"
	pods_of alpha >"$BATS_FILE_TMPDIR/alpha"
	run --separate-stderr kubectl get crd runs.trainyard.dev -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1alpha1"]' ]
}

@test "step 1: back up the CRDs and every object" {
	kubectl get crd runs.trainyard.dev resourceprofiles.trainyard.dev -o yaml \
	    >"$BATS_FILE_TMPDIR/crds-backup.yaml"
	kubectl get runs,resourceprofiles -A -o yaml >"$BATS_FILE_TMPDIR/objects-backup.yaml"
	run python3 -c 'import sys, yaml; print(len(yaml.safe_load(sys.stdin)["items"]))' \
	    <"$BATS_FILE_TMPDIR/objects-backup.yaml"
	[ "$output" -eq "$(($(kubectl get runs -A --no-headers | wc -l) +
	    $(kubectl get resourceprofiles --no-headers | wc -l)))" ]
}

@test "step 2: the controller serves the conversion webhook, ready, behind its Service" {
	kubectl apply -f "$DC_REPO/manifests/service.yaml" >/dev/null
	kubectl -n trainyard-system get service "$SVC"
	kubectl -n trainyard-system wait --for=create --timeout=20s \
	    secret/trainyard-webhook-certs
	run --separate-stderr kubectl -n trainyard-system get endpoints "$SVC" \
	    -o jsonpath='{.subsets[0].addresses[0].ip}'
	[ "$output" = 127.0.0.1 ]
}

@test "step 3: v1beta1 served, v1alpha1 still stored; rollback and again" {
	crds -k "$DC_REPO/manifests/upgrade-steps/serve-v1beta1"
	ca_bundled
	# Both versions read every Run; v1beta1 has the new shape.
	run --separate-stderr kubectl get -n "$NS" runs.v1beta1.trainyard.dev alpha \
	    -o jsonpath='{.spec.container.image} {.spec.restart.policy} {.spec.restart.limit}'
	[ "$output" = "busybox OnFailure 2" ]
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev alpha -o jsonpath='{.spec.image}'
	[ "$output" = busybox ]
	run --separate-stderr kubectl get crd runs.trainyard.dev -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1alpha1"]' ]
	# The running controller moves to v1beta1 by itself.
	switched old v1beta1 v1alpha1 1

	# Rollback: the previous CRDs; nothing was stored at v1beta1.
	crds -f "$CRDS/previous/"
	run --separate-stderr kubectl get crd runs.trainyard.dev -o jsonpath='{.spec.versions[*].name}'
	[ "$output" = v1alpha1 ]
	run --separate-stderr kubectl get -n "$NS" rn alpha -o jsonpath='{.spec.image}'
	[ "$output" = busybox ]
	switched old v1alpha1 v1beta1 1

	crds -k "$DC_REPO/manifests/upgrade-steps/serve-v1beta1"
	ca_bundled
	switched old v1beta1 v1alpha1 2
	[ "$(pods_of alpha)" = "$(cat "$BATS_FILE_TMPDIR/alpha")" ]
	[ "$(starts old)" -eq 1 ]
}

@test "step 4: v1beta1 stored; reads, patches, apply and watches at both versions" {
	crds -f "$CRDS/"
	run --separate-stderr kubectl get crd runs.trainyard.dev \
	    -o jsonpath='{.spec.versions[?(@.storage==true)].name}'
	[ "$output" = v1beta1 ]
	ca_bundled
	# A watch at v1alpha1 sees a change made at v1beta1.
	kubectl get -n "$NS" runs.v1alpha1.trainyard.dev alpha -w \
	    -o jsonpath='{.apiVersion} {.metadata.labels.step}{"\n"}' \
	    >"$BATS_FILE_TMPDIR/watch" 2>&1 &
	local w=$!
	kubectl patch -n "$NS" runs.v1beta1.trainyard.dev alpha --type=merge \
	    -p '{"metadata":{"labels":{"step":"4"}}}'
	for i in $(seq 100); do
		grep -qx "trainyard.dev/v1alpha1 4" "$BATS_FILE_TMPDIR/watch" && break
		sleep 0.1
	done
	kill "$w" 2>/dev/null || true
	grep -qx "trainyard.dev/v1alpha1 4" "$BATS_FILE_TMPDIR/watch" ||
	    { cat "$BATS_FILE_TMPDIR/watch" >&2; false; }
	run --separate-stderr kubectl get crd runs.trainyard.dev -o jsonpath='{.status.storedVersions}'
	[ "$output" = '["v1alpha1","v1beta1"]' ]

	# Rollback: v1alpha1 stored again; both versions still read and write.
	crds -k "$DC_REPO/manifests/upgrade-steps/serve-v1beta1"
	run --separate-stderr kubectl get crd runs.trainyard.dev \
	    -o jsonpath='{.spec.versions[?(@.storage==true)].name}'
	[ "$output" = v1alpha1 ]
	kubectl patch -n "$NS" runs.v1beta1.trainyard.dev alpha --type=merge \
	    -p '{"metadata":{"labels":{"step":"4-rollback"}}}' >/dev/null
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev alpha \
	    -o jsonpath='{.metadata.labels.step} {.spec.restart}{.spec.restartPolicy}'
	[ "$output" = "4-rollback OnFailure" ]
	crds -f "$CRDS/"

	# A new Run at v1beta1, with what only v1beta1 can say, read at both.
	kubectl apply --server-side -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: beta}
spec:
  nodes: 2
  profile: cpu-small
  container: {image: busybox, command: [sleep, "3600"]}
  network:
    ingressFrom:
    - ipBlock: {cidr: 10.0.0.0/8}
EOF
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running \
	    runs.v1beta1.trainyard.dev/beta --timeout="$CTL_WAIT"
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev beta \
	    -o jsonpath='{.spec.image} {.metadata.annotations}'
	[[ "$output" == "busybox "*"conversion.trainyard.dev/v1beta1-only"* ]]
	# Server-side apply at v1alpha1 keeps what only v1beta1 holds.
	kubectl apply --server-side --field-manager=old-client -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: beta, labels: {owner: old-client}}
EOF
	run --separate-stderr kubectl get -n "$NS" runs.v1beta1.trainyard.dev beta \
	    -o jsonpath='{.spec.network.ingressFrom[0].ipBlock.cidr} {.metadata.labels.owner}'
	[ "$output" = "10.0.0.0/8 old-client" ]
	pods_of beta >"$BATS_FILE_TMPDIR/beta"
	[ "$(pods_of alpha)" = "$(cat "$BATS_FILE_TMPDIR/alpha")" ]
	# No restart: the controller of step 2 is still the one running.
	[ "$(starts old)" -eq 1 ]
}

@test "the webhook down: reads at the other version fail with kube-apiserver's error, then recover" {
	ctl_proc_term old
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev beta
	[ "$status" -ne 0 ]
	echo "$stderr" >&2
	[[ "$stderr" == *"conversion webhook for trainyard.dev/v1beta1, Kind=Run failed: Post \"https://$SVC.trainyard-system.svc:443/convert?timeout=30s\""* ]]
	# The fix is to bring it back; nothing was lost meanwhile.
	controller new
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running \
	    runs.v1alpha1.trainyard.dev/beta --timeout="$CTL_WAIT"
	grep -q "Runs and ResourceProfiles at trainyard.dev/v1beta1" "$DC_DIR/ctl-new.log"
	[ "$(pods_of alpha)" = "$(cat "$BATS_FILE_TMPDIR/alpha")" ]
	[ "$(pods_of beta)" = "$(cat "$BATS_FILE_TMPDIR/beta")" ]
}

@test "step 5: migrate rewrites every object and trims storedVersions" {
	run "$CTL_BIN" migrate --kubeconfig "$DC_DIR/kubeconfig"
	[ "$status" -eq 0 ]
	[[ "$output" == *"runs.trainyard.dev: 2 rewritten, 0 skipped (gone), 0 failed"* ]]
	[[ "$output" == *"runs.trainyard.dev: status.storedVersions set to [v1beta1]"* ]]
	run --separate-stderr kubectl get crd runs.trainyard.dev resourceprofiles.trainyard.dev \
	    -o jsonpath='{.items[*].status.storedVersions}'
	[ "$output" = '["v1beta1"] ["v1beta1"]' ]
	# Safe to run again.
	run "$CTL_BIN" migrate --kubeconfig "$DC_DIR/kubeconfig"
	[ "$status" -eq 0 ]
}

@test "step 6: v1alpha1 no longer served; rollback and again" {
	crds -k "$DC_REPO/manifests/upgrade-steps/unserve-v1alpha1"
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev alpha
	[ "$status" -ne 0 ]
	run --separate-stderr kubectl get -n "$NS" runs.v1beta1.trainyard.dev alpha -o jsonpath='{.spec.container.image}'
	[ "$output" = busybox ]
	crds -f "$CRDS/"
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev alpha -o jsonpath='{.spec.image}'
	[ "$output" = busybox ]
	crds -k "$DC_REPO/manifests/upgrade-steps/unserve-v1alpha1"
	[ "$(pods_of alpha v1beta1.)" = "$(cat "$BATS_FILE_TMPDIR/alpha")" ]
}

@test "step 7: v1alpha1 removed; Runs still Running, a new one starts" {
	crds -k "$DC_REPO/manifests/upgrade-steps/remove-v1alpha1"
	run --separate-stderr kubectl get crd runs.trainyard.dev -o jsonpath='{.spec.versions[*].name}'
	[ "$output" = v1beta1 ]
	run --separate-stderr kubectl get -n "$NS" rn -o jsonpath='{.items[*].status.phase}'
	[ "$output" = "Running Running" ]
	kubectl apply -n "$NS" -f - <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: after}
spec:
  nodes: 1
  profile: cpu-small
  container: {image: busybox, command: [sleep, "3600"]}
EOF
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running rn/after \
	    --timeout="$CTL_WAIT"
	[ "$(pods_of alpha v1beta1.)" = "$(cat "$BATS_FILE_TMPDIR/alpha")" ]
	[ "$(pods_of beta v1beta1.)" = "$(cat "$BATS_FILE_TMPDIR/beta")" ]

	# Rollback: v1alpha1 back, not served, then served; the Runs read at it.
	crds -k "$DC_REPO/manifests/upgrade-steps/unserve-v1alpha1"
	run --separate-stderr kubectl get crd runs.trainyard.dev -o jsonpath='{.spec.versions[*].name}'
	[ "$output" = "v1beta1 v1alpha1" ]
	crds -f "$CRDS/"
	run --separate-stderr kubectl get -n "$NS" runs.v1alpha1.trainyard.dev after \
	    -o jsonpath='{.spec.image} {.status.phase}'
	[ "$output" = "busybox Running" ]
	crds -k "$DC_REPO/manifests/upgrade-steps/remove-v1alpha1"
	[ "$(pods_of alpha v1beta1.)" = "$(cat "$BATS_FILE_TMPDIR/alpha")" ]
	# One start for the controller brought back after the webhook test.
	[ "$(starts new)" -eq 1 ]
	ctl_proc_term new
}
