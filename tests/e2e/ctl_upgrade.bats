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
#
# The "follow" tests run on a devcluster of their own: one controller,
# started against v1alpha1 alone, follows the served version without a
# restart as the CRDs go to v1beta1 served, back to v1alpha1 alone, to
# v1beta1 stored and to v1alpha1 unserved; its Runs keep their sessions
# and their pods' uids, and a new Run starts after each step. A standby
# that looks the versions up only every 10 minutes leaves v1beta1 at the
# rollback as soon as its watch answers 404.

load devcluster
load controller

CRDS="$BATS_TEST_DIRNAME/../../crds"
# The CRDs the "follow" tests take a running controller through: v1alpha1
# alone (the previous release's), both with v1beta1 stored (crds/), and the
# runbook's steps (manifests/upgrade-steps/serve-v1beta1, ...).
FOLLOW_CRDS="$CRDS/previous:$CRDS:$BATS_TEST_DIRNAME/../../manifests/upgrade-steps"

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
	local status=0
	# The "follow" tests' controller, on their devcluster (which dc_stop
	# stops with the suite's).
	if [ -s "$BATS_FILE_TMPDIR/follow" ]; then
		(DC_DIR="$(cat "$BATS_FILE_TMPDIR/follow")" && ctl_proc_stop_all) || status=1
	fi
	ctl_teardown_file || status=1
	return "$status"
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

# ---- a running controller follows the served version ----------------------

# follow_env: this suite's second devcluster (the "follow" tests') is the
# current one: DC_DIR, KUBECONFIG, and the paths of FOLLOW_CRDS.
follow_env() {
	DC_DIR="$(cat "$BATS_FILE_TMPDIR/follow")"
	export DC_DIR KUBECONFIG="$DC_DIR/kubeconfig"
	IFS=: read -r F_PREVIOUS F_UPGRADE F_STEPS <<<"$FOLLOW_CRDS"
	NS=follow
}

# f_crds ARGS...: kubectl apply ARGS, then established, the caBundle
# when Runs convert by webhook (the controller writes it within 15 s),
# then a fresh discovery cache for kubectl.
f_crds() {
	kubectl apply "$@" >/dev/null || return 1
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev >/dev/null || return 1
	if [ "$(kubectl get crd runs.trainyard.dev \
	    -o jsonpath='{.spec.conversion.strategy}')" = Webhook ]; then
		kubectl wait --timeout=30s crd/runs.trainyard.dev \
		    --for=jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}' \
		    >/dev/null || return 1
	fi
	kubectl api-resources --api-group=trainyard.dev >/dev/null
}

# f_wait_running NAME
f_wait_running() {
	kubectl wait -n "$NS" --for=jsonpath='{.status.phase}'=Running "rn/$1" \
	    --timeout="$CTL_WAIT" >/dev/null
}

# f_run NAME: a one-node Run at v1alpha1, Running.
f_run() {
	printf '%s\n' 'apiVersion: trainyard.dev/v1alpha1' 'kind: Run' \
	    "metadata: {name: $1}" \
	    'spec: {nodes: 1, profile: cpu-small, image: busybox, command: [sleep, "3600"]}' |
	    kubectl apply -n "$NS" -f - >/dev/null || return 1
	f_wait_running "$1"
}

# f_run_beta NAME: the same at v1beta1.
f_run_beta() {
	printf '%s\n' 'apiVersion: trainyard.dev/v1beta1' 'kind: Run' \
	    "metadata: {name: $1}" \
	    'spec: {nodes: 1, profile: cpu-small, container: {image: busybox, command: [sleep, "3600"]}}' |
	    kubectl apply -n "$NS" -f - >/dev/null || return 1
	f_wait_running "$1"
}

# f_sessions: "name session pod-uids" of every Run, sorted: what no step
# may change.
f_sessions() {
	local r
	for r in $(kubectl get rn -n "$NS" -o jsonpath='{.items[*].metadata.name}'); do
		echo "$r $(kubectl get rn -n "$NS" "$r" -o jsonpath='{.status.session}')" \
		    "$(kubectl get pods -n "$NS" -l "trainyard.dev/run=$r" \
		    -o jsonpath='{.items[*].metadata.uid}')"
	done | sort
}

# f_unchanged: every Run recorded so far still has its session and pods;
# then the record takes the Runs started since.
f_unchanged() {
	local now
	now="$(f_sessions)"
	if [ -s "$BATS_FILE_TMPDIR/follow-sessions" ] &&
	    ! diff "$BATS_FILE_TMPDIR/follow-sessions" \
	    <(grep -Fxf "$BATS_FILE_TMPDIR/follow-sessions" <<<"$now") >&2; then
		echo "sessions or pods changed; now:" >&2
		echo "$now" >&2
		return 1
	fi
	echo "$now" >"$BATS_FILE_TMPDIR/follow-sessions"
}

# f_metric NAME: the controller's sample lines of metric family NAME.
f_metric() {
	curl -sf "http://127.0.0.1:$(ctl_proc_port f metrics)/metrics" | grep "^$1"
}

# f_switched N FROM TO: the controller logged its Nth switch (waiting up
# to 30 s for it), and that one went FROM -> TO.
f_switched() {
	local i n line="serving version changed: reading trainyard.dev/$3 (was $2)"
	for i in $(seq 300); do
		n="$(grep -c 'serving version changed' "$DC_DIR/ctl-f.log")" || true
		if [ "$n" -ge "$1" ]; then
			[ "$n" -eq "$1" ] && grep 'serving version changed' "$DC_DIR/ctl-f.log" |
			    tail -1 | grep -qF "$line" && return 0
			break
		fi
		ctl_proc_alive f || break
		sleep 0.1
	done
	echo "controller f: not \"$line\" as switch $1:" >&2
	grep 'serving version changed' "$DC_DIR/ctl-f.log" >&2
	return 1
}

@test "follow: a controller reads Runs at v1alpha1 alone" {
	local dir port
	dc_start_extra dir --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms
	echo "$dir" >"$BATS_FILE_TMPDIR/follow"
	follow_env
	f_crds -f "$F_PREVIOUS/trainyard.dev_runs.yaml" \
	    -f "$F_PREVIOUS/trainyard.dev_resourceprofiles.yaml"
	kubectl apply -f "$CRDS/third-party/scheduling.x-k8s.io_podgroups.yaml" \
	    -f "$DC_REPO/manifests/namespace.yaml" -f "$DC_REPO/manifests/service.yaml" \
	    >/dev/null
	ctl_profiles v1alpha1
	kubectl create namespace "$NS" >/dev/null
	ctl_config
	echo "apiDiscoveryInterval: 2s" >>"$DC_DIR/controller.yaml"
	POD_NAMESPACE=trainyard-system ctl_proc_launch f --webhook-cert-mode=self \
	    --leader-elect --leader-election-namespace default
	ctl_proc_wait f 'conversion webhook on port' 30
	port="$(sed -n 's/.*conversion webhook on port \([0-9]*\).*/\1/p' \
	    "$DC_DIR/ctl-f.log" | tail -1)"
	printf '%s\n' 'apiVersion: v1' 'kind: Endpoints' \
	    'metadata: {name: trainyard-webhook, namespace: trainyard-system}' \
	    'subsets:' '- addresses: [{ip: 127.0.0.1}]' \
	    "  ports: [{name: webhook, port: $port}]" | kubectl apply -f - >/dev/null
	ctl_proc_wait f '(msg=started|"msg":"started")' 30
	grep -q "Runs and ResourceProfiles at trainyard.dev/v1alpha1" "$DC_DIR/ctl-f.log"
	f_run a
	f_unchanged
	run f_metric trainyard_api_version_info
	[ "$output" = 'trainyard_api_version_info{group="trainyard.dev",version="v1alpha1"} 1' ]
}

@test "follow: v1beta1 served: the controller moves to it without a restart" {
	follow_env
	f_crds -k "$F_STEPS/serve-v1beta1"
	f_switched 1 v1alpha1 v1beta1
	f_unchanged
	f_run b
	# Written at the version read: b's pods and Events name it at v1beta1.
	run kubectl get pods -n "$NS" -l trainyard.dev/run=b \
	    -o jsonpath='{.items[0].metadata.ownerReferences[0].apiVersion}'
	[ "$output" = trainyard.dev/v1beta1 ]
	run kubectl get events -n "$NS" --field-selector \
	    involvedObject.name=b,reason=SessionStarted \
	    -o jsonpath='{.items[*].involvedObject.apiVersion}'
	[ "$output" = trainyard.dev/v1beta1 ]
	run f_metric trainyard_api_version_info
	[ "$output" = 'trainyard_api_version_info{group="trainyard.dev",version="v1beta1"} 1' ]
	f_unchanged
	# A standby that looks the versions up only every 10 minutes: the next
	# test's rollback reaches it through the 404 of its Run watch alone.
	sed 's/^apiDiscoveryInterval: .*/apiDiscoveryInterval: 10m/' "$DC_DIR/controller.yaml" \
	    >"$DC_DIR/controller-slow.yaml"
	ctl_proc_launch g --config "$DC_DIR/controller-slow.yaml" --webhook-bind-address 0 \
	    --leader-elect --leader-election-namespace default
	ctl_proc_wait g 'Runs and ResourceProfiles at trainyard.dev/v1beta1' 30
}

@test "follow: the CRDs rolled back to v1alpha1 alone: the controller moves back" {
	follow_env
	f_crds -f "$F_PREVIOUS/trainyard.dev_runs.yaml" \
	    -f "$F_PREVIOUS/trainyard.dev_resourceprofiles.yaml"
	f_switched 2 v1beta1 v1alpha1
	ctl_proc_wait g 'serving version changed: reading trainyard.dev/v1alpha1 \(was v1beta1\)' 30
	# (its list or watch at v1beta1 answered 404; the next look was minutes away)
	grep -qE 'list/watch (runs|resourceprofiles): ' "$DC_DIR/ctl-g.log"
	# A standby with Runs queued: no drain to wait for (that takes 20 s).
	ctl_proc_term g 10
	f_run c
	f_unchanged
}

@test "follow: v1beta1 stored, then v1alpha1 unserved: sessions and pods kept" {
	follow_env
	f_crds -k "$F_UPGRADE"
	f_switched 3 v1alpha1 v1beta1
	f_run d
	f_unchanged
	f_crds -k "$F_STEPS/unserve-v1alpha1"
	f_run_beta e
	f_unchanged
	# Already at the newest version served: no other switch.
	[ "$(grep -c 'serving version changed' "$DC_DIR/ctl-f.log")" -eq 3 ]
	run kubectl get rn -n "$NS" -o jsonpath='{.items[*].status.phase}'
	[ "$output" = "Running Running Running Running Running" ]
	# One process, one term as leader, nothing deleted, no session ended.
	[ "$(grep -cE 'msg=started|"msg":"started"' "$DC_DIR/ctl-f.log")" -eq 1 ]
	[ "$(grep -c 'leading: starting the workers' "$DC_DIR/ctl-f.log")" -eq 1 ]
	run f_metric trainyard_pods_deleted_total
	[ "$output" = "trainyard_pods_deleted_total 0" ]
	run f_metric trainyard_pods_created_total
	[ "$output" = "trainyard_pods_created_total 5" ]
	run f_metric trainyard_sessions_ended_total
	[ -z "$output" ]
	ctl_proc_term f
}
