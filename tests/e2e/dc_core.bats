#!/usr/bin/env bats
#
# dc_core.bats: the real kubectl against a trainyard-devcluster: discovery,
# CRUD, patches, watches, deletion, errors.
#
# The main devcluster reports Kubernetes 1.32, so the kubectl dispatcher
# runs its built-in kubectl 1.32, which sends protobuf bodies for "create
# namespace|configmap|secret" (openapi.c decodes them); the version test
# below reads with 1.27 and 1.33 too.
#
# apply, create -f and replace -f validate as they do against
# kube-apiserver: the devcluster serves OpenAPI (dc_api.bats tests it).

load devcluster

setup_file() {
	dc_start --kubernetes-version 1.32
}

teardown_file() {
	dc_stop
}

@test "version and health" {
	run kubectl version -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .serverVersion.gitVersion)" = "v1.32.0" ]
	[ "$(echo "$output" | jq -r .serverVersion.minor)" = "32" ]
	run kubectl get --raw /readyz
	[ "$output" = "ok" ]
	run kubectl get --raw /livez
	[ "$output" = "ok" ]
	run kubectl get --raw /healthz
	[ "$output" = "ok" ]
}

@test "api-resources lists the built-in types with short names" {
	run kubectl api-resources --no-headers
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^pods +po +v1 +true +Pod$'
	echo "$output" | grep -E '^services +svc +v1 +true +Service$'
	echo "$output" | grep -E '^namespaces +ns +v1 +false +Namespace$'
	echo "$output" | grep -E '^configmaps +cm +v1 +true +ConfigMap$'
	echo "$output" | grep -E '^customresourcedefinitions +crd,crds +apiextensions.k8s.io/v1 +false'
	echo "$output" | grep -E '^leases +coordination.k8s.io/v1 +true +Lease$'
	echo "$output" | grep -E '^networkpolicies +netpol +networking.k8s.io/v1'
	run kubectl api-resources --api-group=rbac.authorization.k8s.io -o name
	[ "${#lines[@]}" -eq 4 ]
}

@test "the default namespaces exist" {
	run kubectl get ns -o name
	[ "$status" -eq 0 ]
	echo "$output" | grep -x namespace/default
	echo "$output" | grep -x namespace/kube-system
	echo "$output" | grep -x namespace/kube-public
}

@test "namespaces: create, get, delete" {
	kubectl create namespace e2e-ns
	run kubectl get ns e2e-ns -o json
	[ "$(echo "$output" | jq -r .status.phase)" = "Active" ]
	[ "$(echo "$output" | jq -r '.metadata.labels["kubernetes.io/metadata.name"]')" = "e2e-ns" ]
	[ "$(echo "$output" | jq -r '.spec.finalizers[0]')" = "kubernetes" ]
	kubectl create configmap inside -n e2e-ns --from-literal=a=b
	# kubectl delete waits until the namespace is gone.
	run kubectl delete ns e2e-ns --timeout=20s
	[ "$status" -eq 0 ]
	[ "$output" = 'namespace "e2e-ns" deleted' ]
	run kubectl get ns e2e-ns
	[ "$status" -ne 0 ]
	[[ "$output" == *'namespaces "e2e-ns" not found'* ]]
	run kubectl delete ns default
	[ "$status" -ne 0 ]
	[[ "$output" == *'this namespace may not be deleted'* ]]
}

@test "configmaps: create, get in every format, list, delete" {
	kubectl create configmap c1 --from-literal=k1=v1 --from-literal=k2=v2
	run kubectl get configmap c1 -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .data.k2)" = "v2" ]
	[ "$(echo "$output" | jq -r .kind)" = "ConfigMap" ]
	[ "$(echo "$output" | jq -r '.metadata.uid | length')" = "36" ]
	run kubectl get cm c1 -o yaml
	[[ "$output" == *"k1: v1"* ]]
	run kubectl get cm c1 -o name
	[ "$output" = "configmap/c1" ]
	run kubectl get cm c1 -o jsonpath='{.data.k1}'
	[ "$output" = "v1" ]
	run kubectl get cm
	[[ "${lines[0]}" =~ ^NAME\ +DATA\ +AGE$ ]]
	[[ "$output" == *c1* ]]
	run kubectl get cm -A -o name
	[[ "$output" == *configmap/c1* ]]
	run kubectl delete cm c1
	[ "$output" = 'configmap "c1" deleted' ]
	run kubectl get cm c1
	[ "$status" -ne 0 ]
	[[ "$output" == *'configmaps "c1" not found'* ]]
}

@test "selectors and dry runs" {
	kubectl create configmap sel-a --from-literal=x=1
	kubectl create configmap sel-b --from-literal=x=1
	kubectl label cm sel-a tier=db
	run kubectl get cm -l tier=db -o name
	[ "$output" = "configmap/sel-a" ]
	run kubectl get cm -l 'tier notin (db)' -o name
	[[ "$output" == *configmap/sel-b* ]]
	[[ "$output" != *configmap/sel-a* ]]
	run kubectl get cm --field-selector metadata.name=sel-b -o name
	[ "$output" = "configmap/sel-b" ]
	run kubectl get cm --field-selector spec.bogus=1
	[ "$status" -ne 0 ]
	[[ "$output" == *'field label not supported: spec.bogus'* ]]
	run kubectl create configmap dry --from-literal=a=b --dry-run=server -o name
	[ "$status" -eq 0 ]
	[ "$output" = "configmap/dry" ]
	run kubectl get cm dry
	[ "$status" -ne 0 ]
	run kubectl get cm --chunk-size=1 -o name
	[[ "$output" == *configmap/sel-a* ]]
	[[ "$output" == *configmap/sel-b* ]]
	kubectl delete cm -l tier=db
	run kubectl get cm sel-a
	[ "$status" -ne 0 ]
}

@test "apply a pod and a service" {
	cat >"$BATS_TEST_TMPDIR/app.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: main
    image: nginx:1.25
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 8080
EOF
	run kubectl apply -f "$BATS_TEST_TMPDIR/app.yaml"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pod/web created"* ]]
	[[ "$output" == *"service/web created"* ]]
	run kubectl apply -f "$BATS_TEST_TMPDIR/app.yaml"
	[[ "$output" == *"pod/web unchanged"* ]]
	[[ "$output" == *"service/web unchanged"* ]]
	run kubectl get pod web -o json
	[ "$(echo "$output" | jq -r .status.phase)" = "Pending" ]
	[ "$(echo "$output" | jq -r .status.qosClass)" = "BestEffort" ]
	[ "$(echo "$output" | jq -r .spec.restartPolicy)" = "Always" ]
	[ "$(echo "$output" | jq -r .spec.serviceAccountName)" = "default" ]
	[ "$(echo "$output" | jq -r '.spec.tolerations | length')" = "2" ]
	[ "$(echo "$output" | jq -r '.spec.containers[0].imagePullPolicy')" = "IfNotPresent" ]
	run kubectl get svc web -o json
	[[ "$(echo "$output" | jq -r .spec.clusterIP)" == 10.* ]]
	[ "$(echo "$output" | jq -r .spec.type)" = "ClusterIP" ]
	[ "$(echo "$output" | jq -r '.spec.ports[0].protocol')" = "TCP" ]
	[ "$(echo "$output" | jq -r '.spec.ports[0].targetPort')" = "8080" ]
	run kubectl get pods,svc -o wide
	[ "$status" -eq 0 ]
	[[ "$output" == *pod/web* ]]
	[[ "$output" == *service/web* ]]
	run kubectl get all -o name
	[[ "$output" == *pod/web* ]]
	[[ "$output" == *service/kubernetes* ]]
	kubectl wait --for=jsonpath='{.status.phase}'=Pending pod/web --timeout=10s
	# A changed manifest is a strategic merge patch.
	sed -i 's/nginx:1.25/nginx:1.26/' "$BATS_TEST_TMPDIR/app.yaml"
	run kubectl apply -f "$BATS_TEST_TMPDIR/app.yaml"
	[[ "$output" == *"pod/web configured"* ]]
	run kubectl get pod web -o jsonpath='{.spec.containers[0].image}'
	[ "$output" = "nginx:1.26" ]
	# Pod specs are immutable apart from images.
	run kubectl patch pod web -p '{"spec":{"restartPolicy":"Never"}}'
	[ "$status" -ne 0 ]
	[[ "$output" == *'pod updates may not change fields other than'* ]]
	run kubectl logs web
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "label, annotate and patch" {
	kubectl create configmap lp --from-literal=a=1
	run kubectl label cm lp team=blue
	[ "$output" = "configmap/lp labeled" ]
	kubectl annotate cm lp note=hello
	run kubectl get cm lp -o json
	[ "$(echo "$output" | jq -r .metadata.labels.team)" = "blue" ]
	[ "$(echo "$output" | jq -r .metadata.annotations.note)" = "hello" ]
	kubectl label cm lp team-
	run kubectl get cm lp -o jsonpath='{.metadata.labels}'
	[[ "$output" != *team* ]]
	run kubectl patch cm lp --type merge -p '{"data":{"b":"2"}}'
	[ "$output" = "configmap/lp patched" ]
	run kubectl patch cm lp --type json -p '[{"op":"replace","path":"/data/a","value":"9"}]'
	[ "$status" -eq 0 ]
	run kubectl get cm lp -o jsonpath='{.data.a}{.data.b}'
	[ "$output" = "92" ]
	run kubectl patch cm lp --type json -p '[{"op":"test","path":"/data/a","value":"0"}]'
	[ "$status" -ne 0 ]
	run kubectl patch cm lp --type merge -p '{"data":{"b":"2"}}'
	[ "$output" = "configmap/lp patched (no change)" ]
}

@test "get -w sees ADDED, MODIFIED and DELETED" {
	kubectl create configmap w0 --from-literal=a=1
	local out="$BATS_TEST_TMPDIR/watch.out"
	timeout 30 "$(type -P kubectl)" --cache-dir "$DC_DIR/cache" get cm -w \
	    --output-watch-events >"$out" 2>&1 3>&- &
	local wpid=$!
	wait_for_line "$out" 'w0'
	kubectl label cm w0 seen=yes
	kubectl create configmap w1 --from-literal=a=1
	kubectl delete cm w1
	wait_for_line "$out" '^DELETED +w1'
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	grep -E '^EVENT +NAME +DATA +AGE' "$out"
	grep -E '^ADDED +w0 ' "$out"
	grep -E '^MODIFIED +w0 ' "$out"
	grep -E '^ADDED +w1 ' "$out"
	grep -E '^DELETED +w1 ' "$out"
}

@test "a watch gets a burst of 200 events from one request, whole and in order" {
	kubectl create namespace burst
	# 200 ConfigMaps of 8 KiB: their DELETED events are 1.6 MiB queued in
	# one loop turn, more than one write and one writable callback carry.
	local pad i
	pad="$(head -c 8192 /dev/zero | tr '\0' x)"
	for i in $(seq 200); do
		printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b%03d\n' "$i"
		printf 'data:\n  pad: %s\n' "$pad"
	done >"$BATS_TEST_TMPDIR/burst.yaml"
	kubectl create -n burst -f "$BATS_TEST_TMPDIR/burst.yaml" >/dev/null
	local rv out="$BATS_TEST_TMPDIR/burst.json"
	rv="$(kubectl get --raw /api/v1/namespaces/burst/configmaps?limit=1 |
	    jq -r .metadata.resourceVersion)"
	kubectl get --raw "/api/v1/namespaces/burst/configmaps?watch=1&resourceVersion=$rv&timeoutSeconds=8" \
	    >"$out" 2>&1 3>&- &
	local wpid=$!
	sleep 1
	kubectl delete --raw /api/v1/namespaces/burst/configmaps >/dev/null
	# 200 newlines, 200 whole events: no need to wait for the watch's
	# timeout (a 201st event, even half written, still fails below).
	for i in $(seq 200); do
		[ "$(wc -l <"$out")" -ge 200 ] && break
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.05
	done
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" || true
	# Every event, each a whole object, resourceVersions rising.
	[ "$(jq -r .type "$out" | sort | uniq -c | awk '{ print $2 "=" $1 }')" = "DELETED=200" ]
	[ "$(jq -r .object.metadata.name "$out" | sort -u | wc -l)" -eq 200 ]
	[ "$(jq -r '.object.data.pad | length' "$out" | sort -u)" = "8192" ]
	jq -r .object.metadata.resourceVersion "$out" | sort -n -c
	[ "$(jq -r .object.metadata.resourceVersion "$out" | sort -u | wc -l)" -eq 200 ]
	kubectl delete namespace burst --wait=false
}

@test "delete with and without waiting, finalizers" {
	kubectl create configmap del1 --from-literal=a=1
	run kubectl delete cm del1 --wait=false
	[ "$status" -eq 0 ]
	run kubectl get cm del1
	[ "$status" -ne 0 ]
	cat >"$BATS_TEST_TMPDIR/fin.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers:
  - example.com/hold
EOF
	kubectl create -f "$BATS_TEST_TMPDIR/fin.yaml"
	run kubectl delete cm held --wait=false
	[ "$status" -eq 0 ]
	run kubectl get cm held -o jsonpath='{.metadata.deletionTimestamp}'
	[ -n "$output" ]
	kubectl patch cm held --type merge -p '{"metadata":{"finalizers":null}}'
	kubectl wait --for=delete cm/held --timeout=10s
	run kubectl delete cm nothing-here
	[ "$status" -ne 0 ]
	[[ "$output" == *'configmaps "nothing-here" not found'* ]]
	run kubectl delete cm nothing-here --ignore-not-found
	[ "$status" -eq 0 ]
}

@test "a pod on a node is deleted after its grace period" {
	cat >"$BATS_TEST_TMPDIR/bound.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: bound
spec:
  nodeName: node-1
  containers:
  - name: main
    image: busybox
EOF
	kubectl apply -f "$BATS_TEST_TMPDIR/bound.yaml"
	run kubectl delete pod bound --timeout=20s
	[ "$status" -eq 0 ]
	[ "$output" = 'pod "bound" deleted' ]
	run kubectl get pod bound
	[ "$status" -ne 0 ]
}

@test "replace with a stale copy conflicts" {
	kubectl create configmap stale --from-literal=a=1
	kubectl get cm stale -o yaml >"$BATS_TEST_TMPDIR/stale.yaml"
	kubectl label cm stale changed=yes
	sed -i 's/a: "1"/a: "2"/' "$BATS_TEST_TMPDIR/stale.yaml"
	run kubectl replace -f "$BATS_TEST_TMPDIR/stale.yaml"
	[ "$status" -ne 0 ]
	[[ "$output" == *'Operation cannot be fulfilled on configmaps "stale": '* ]]
	[[ "$output" == *'the object has been modified; please apply your changes to the'* ]]
	kubectl get cm stale -o yaml >"$BATS_TEST_TMPDIR/fresh.yaml"
	sed -i 's/a: "1"/a: "2"/' "$BATS_TEST_TMPDIR/fresh.yaml"
	run kubectl replace -f "$BATS_TEST_TMPDIR/fresh.yaml"
	[ "$status" -eq 0 ]
	run kubectl get cm stale -o jsonpath='{.data.a}'
	[ "$output" = "2" ]
}

@test "errors: unknown resource, invalid name, duplicate, bad token" {
	run kubectl get foos
	[ "$status" -ne 0 ]
	[[ "$output" == *'the server doesn'"'"'t have a resource type "foos"'* ]]
	run kubectl create configmap Bad_Name --from-literal=a=b
	[ "$status" -ne 0 ]
	[[ "$output" == *'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"'* ]]
	kubectl create configmap dup
	run kubectl create configmap dup
	[ "$status" -ne 0 ]
	[[ "$output" == *'configmaps "dup" already exists'* ]]
	run kubectl --token=not-a-token get ns
	[ "$status" -ne 0 ]
	[[ "$output" == *'You must be logged in to the server (Unauthorized)'* ]]
	run kubectl get cm -n no-such-ns
	[ "$status" -eq 0 ]
	run kubectl create configmap x -n no-such-ns
	[ "$status" -ne 0 ]
	[[ "$output" == *'namespaces "no-such-ns" not found'* ]]
}

@test "server-side apply creates and merges" {
	cat >"$BATS_TEST_TMPDIR/ssa.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
data:
  a: "1"
EOF
	run kubectl apply --server-side -f "$BATS_TEST_TMPDIR/ssa.yaml"
	[ "$status" -eq 0 ]
	[[ "$output" == *"configmap/ssa serverside-applied"* ]]
	run kubectl get cm ssa -o jsonpath='{.data.a}'
	[ "$output" = "1" ]
}

@test "other kubectl minors: discovery and reads" {
	local v dir
	# The oldest and the newest minor: 1.28 and 1.29 discover as 1.27 does
	# (apidiscovery v2beta1), 1.30 to 1.32 as 1.33 does (v2, then v2beta1);
	# dc_api.bats applies with 1.29 and 1.32 too.
	for v in 1.27 1.33; do
		dc_start_extra dir --kubernetes-version "$v"
		# The dispatcher runs the kubectl of the server's minor.
		local json
		json="$(kubectl_at "$dir" version -o json 2>/dev/null)"
		[ "$(echo "$json" | jq -r .serverVersion.gitVersion)" = "v$v.0" ]
		[ "$(echo "$json" | jq -r .clientVersion.minor)" = "${v#1.}" ]
		run kubectl_at "$dir" api-resources -o name
		[ "$status" -eq 0 ]
		[[ "$output" == *pods* ]]
		run kubectl_at "$dir" get ns -o name
		[[ "$output" == *namespace/default* ]]
		run kubectl_at "$dir" get svc kubernetes -o jsonpath='{.spec.clusterIP}'
		[ "$output" = "10.96.0.1" ]
		dc_stop_extra "$dir"
	done
}
