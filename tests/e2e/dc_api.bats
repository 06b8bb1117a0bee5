#!/usr/bin/env bats
#
# dc_api.bats: the real kubectl against what openapi.c, ssa.c and the
# Tables add to a trainyard-devcluster: apply, create -f and replace -f
# with client-side validation left on (OpenAPI v3 for 1.29-1.33, the
# protobuf v2 document for 1.27/1.28), protobuf request bodies from
# kubectl 1.32/1.33, server-side apply with ownership conflicts,
# managedFields, the built-in printers' columns, Table watch events,
# boolean query parameters as kube-apiserver reads them, and kubectl diff.
#
# The main devcluster reports 1.33 (protobuf bodies); the version test
# starts one devcluster per minor.

load devcluster

setup_file() {
	dc_start --kubernetes-version 1.33
}

teardown_file() {
	dc_stop
}

# manifests DIR: a pod, a service and a configmap in DIR/app.yaml.
manifests() {
	cat >"$1/app.yaml" <<'EOF'
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
    ports:
    - containerPort: 80
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
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  index: hello
EOF
}

@test "OpenAPI: the v3 root, a group version document and the protobuf v2 document" {
	run kubectl get --raw /openapi/v3
	[ "$status" -eq 0 ]
	local url
	url="$(echo "$output" | jq -r '.paths["api/v1"].serverRelativeURL')"
	[[ "$url" =~ ^/openapi/v3/api/v1\?hash=[0-9A-F]{16}$ ]]
	echo "$output" | jq -e '.paths["apis/rbac.authorization.k8s.io/v1"]'
	run kubectl get --raw "$url"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch
	    | (.["x-kubernetes-group-version-kind"].kind == "Pod")
	    and ([.parameters[].name] | index("fieldValidation") != null)'
	run kubectl get --raw /openapi/v3/apis/nope.example/v1
	[ "$status" -ne 0 ]
	[[ "$output" == *NotFound* || "$output" == *'could not find the requested resource'* ]]
}

@test "apply -f, create -f and replace -f validate on 1.27, 1.29, 1.32 and 1.33" {
	local v dir
	manifests "$BATS_TEST_TMPDIR"
	for v in 1.27 1.29 1.32 1.33; do
		dc_start_extra dir --kubernetes-version "$v"
		# The dispatcher runs the kubectl of the server's minor (its own for 1.32).
		[[ "$(kubectl_at "$dir" version -o json 2>/dev/null | jq -r .clientVersion.minor)" == \
		    "${v#1.}"* ]]
		run kubectl_at "$dir" apply -f "$BATS_TEST_TMPDIR/app.yaml"
		echo "$v: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"pod/web created"* ]]
		[[ "$output" == *"service/web created"* ]]
		[[ "$output" == *"configmap/web created"* ]]
		[[ "$output" != *"validat"* ]]
		run kubectl_at "$dir" apply -f "$BATS_TEST_TMPDIR/app.yaml"
		[ "$status" -eq 0 ]
		[[ "$output" == *"pod/web unchanged"* ]]
		[[ "$output" == *"configmap/web unchanged"* ]]
		kubectl_at "$dir" get cm web -o yaml >"$BATS_TEST_TMPDIR/cm.yaml"
		sed -i 's/index: hello/index: bye/' "$BATS_TEST_TMPDIR/cm.yaml"
		run kubectl_at "$dir" replace -f "$BATS_TEST_TMPDIR/cm.yaml"
		echo "$v: $output"
		[ "$status" -eq 0 ]
		[ "$output" = "configmap/web replaced" ]
		run kubectl_at "$dir" create -f "$BATS_TEST_TMPDIR/cm.yaml"
		[ "$status" -ne 0 ]
		[[ "$output" == *'configmaps "web" already exists'* ]]
		kubectl_at "$dir" delete cm web
		run kubectl_at "$dir" create -f "$BATS_TEST_TMPDIR/cm.yaml"
		[ "$status" -eq 0 ]
		[ "$output" = "configmap/web created" ]
		run kubectl_at "$dir" get cm web -o jsonpath='{.data.index}'
		[ "$output" = "bye" ]
		dc_stop_extra "$dir"
	done
}

@test "kubectl 1.33 sends protobuf for create namespace, configmap, secret" {
	[ "$(kubectl version -o json 2>/dev/null | jq -r .clientVersion.minor)" = "33" ]
	run kubectl create namespace pb-ns
	[ "$status" -eq 0 ]
	[ "$output" = "namespace/pb-ns created" ]
	run kubectl create configmap pb-cm -n pb-ns --from-literal=a=1 --from-literal=b=2
	[ "$status" -eq 0 ]
	run kubectl create secret generic pb-s -n pb-ns --from-literal=user=admin
	[ "$status" -eq 0 ]
	run kubectl create serviceaccount pb-sa -n pb-ns
	[ "$status" -eq 0 ]
	run kubectl create role pb-r -n pb-ns --verb=get --resource=pods
	[ "$status" -eq 0 ]
	run kubectl get cm pb-cm -n pb-ns -o json --show-managed-fields
	[ "$(echo "$output" | jq -r .data.b)" = "2" ]
	[ "$(echo "$output" | jq -r '.metadata.managedFields[0].manager')" = "kubectl-create" ]
	run kubectl get secret pb-s -n pb-ns -o jsonpath='{.data.user}'
	[ "$(echo "$output" | base64 -d)" = "admin" ]
	run kubectl get ns pb-ns -o jsonpath='{.status.phase}'
	[ "$output" = "Active" ]
	run kubectl create configmap pb-cm -n pb-ns
	[ "$status" -ne 0 ]
	[[ "$output" == *'configmaps "pb-cm" already exists'* ]]
}

@test "server-side apply: create, update, conflict, force, managedFields" {
	cat >"$BATS_TEST_TMPDIR/ssa.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
  labels:
    owner: first
data:
  a: "1"
  b: "1"
EOF
	run kubectl apply --server-side -f "$BATS_TEST_TMPDIR/ssa.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "configmap/ssa serverside-applied" ]
	run kubectl get cm ssa -o json --show-managed-fields
	[ "$(echo "$output" | jq -r '.metadata.managedFields[0].manager')" = "kubectl" ]
	[ "$(echo "$output" | jq -r '.metadata.managedFields[0].operation')" = "Apply" ]
	[ "$(echo "$output" | jq -c '.metadata.managedFields[0].fieldsV1')" = \
	    '{"f:data":{"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{"f:owner":{}}}}' ]
	# Update by the same manager; b no longer applied is removed.
	sed -i 's/a: "1"/a: "2"/; /b: "1"/d' "$BATS_TEST_TMPDIR/ssa.yaml"
	run kubectl apply --server-side -f "$BATS_TEST_TMPDIR/ssa.yaml"
	[ "$status" -eq 0 ]
	run kubectl get cm ssa -o json
	[ "$(echo "$output" | jq -c .data)" = '{"a":"2"}' ]
	# A second manager changing a: 409 with kubectl's conflict report.
	cat >"$BATS_TEST_TMPDIR/other.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
data:
  a: "3"
  c: "1"
EOF
	run kubectl apply --server-side --field-manager=other -f "$BATS_TEST_TMPDIR/other.yaml"
	[ "$status" -ne 0 ]
	[[ "$output" == *'Apply failed with 1 conflict: conflict with "kubectl": .data.a'* ]]
	[[ "$output" == *'--force-conflicts'* ]]
	run kubectl get cm ssa -o jsonpath='{.data.a}'
	[ "$output" = "2" ]
	# Server dry run, then the forced apply.
	run kubectl apply --server-side --field-manager=other --force-conflicts \
	    --dry-run=server -o jsonpath='{.data.a}' -f "$BATS_TEST_TMPDIR/other.yaml"
	[ "$status" -eq 0 ]
	[ "$output" = "3" ]
	run kubectl get cm ssa -o jsonpath='{.data.a}'
	[ "$output" = "2" ]
	run kubectl apply --server-side --field-manager=other --force-conflicts \
	    -f "$BATS_TEST_TMPDIR/other.yaml"
	[ "$status" -eq 0 ]
	run kubectl get cm ssa -o json --show-managed-fields
	[ "$(echo "$output" | jq -c .data)" = '{"a":"3","c":"1"}' ]
	[ "$(echo "$output" | jq -r '[.metadata.managedFields[].manager] | sort | join(",")')" = \
	    "kubectl,other" ]
	[ "$(echo "$output" | jq -c '.metadata.managedFields[] | select(.manager == "kubectl")
	    | .fieldsV1')" = '{"f:metadata":{"f:labels":{"f:owner":{}}}}' ]
	# managedFields are shown only when asked for.
	run kubectl get cm ssa -o yaml
	[[ "$output" != *managedFields* ]]
	run kubectl get cm ssa -o yaml --show-managed-fields
	[[ "$output" == *"manager: other"* ]]
	[[ "$output" == *"operation: Apply"* ]]
	# Ordinary writes are recorded as Update entries of their managers.
	kubectl label cm ssa extra=yes
	run kubectl get cm ssa -o json --show-managed-fields
	[ "$(echo "$output" | jq -r '.metadata.managedFields[]
	    | select(.manager == "kubectl-label") | .operation')" = "Update" ]
}

@test "client-side apply upgrades to server-side apply" {
	cat >"$BATS_TEST_TMPDIR/up.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: upgrade
data:
  a: "1"
EOF
	kubectl apply -f "$BATS_TEST_TMPDIR/up.yaml"
	run kubectl get cm upgrade --show-managed-fields \
	    -o jsonpath='{.metadata.managedFields[0].manager}'
	[ "$output" = "kubectl-client-side-apply" ]
	sed -i 's/a: "1"/a: "2"/' "$BATS_TEST_TMPDIR/up.yaml"
	run kubectl apply --server-side -f "$BATS_TEST_TMPDIR/up.yaml"
	[ "$status" -eq 0 ]
	run kubectl get cm upgrade -o json --show-managed-fields
	[ "$(echo "$output" | jq -r .data.a)" = "2" ]
	echo "$output" | jq -e '.metadata.managedFields[]
	    | select(.manager == "kubectl" and .operation == "Apply")'
}

@test "get pods, services: the built-in printers' columns, -o wide" {
	manifests "$BATS_TEST_TMPDIR"
	kubectl apply -f "$BATS_TEST_TMPDIR/app.yaml"
	run kubectl get pods
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^NAME\ +READY\ +STATUS\ +RESTARTS\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^web\ +0/1\ +Pending\ +0\ +[0-9]+s$ ]]
	run kubectl get pods -o wide
	local wide='^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES$'
	[[ "${lines[0]}" =~ $wide ]]
	wide='^web +0/1 +Pending +0 +[0-9]+s +<none> +<none> +<none> +<none>$'
	[[ "${lines[1]}" =~ $wide ]]
	run kubectl get svc web
	[[ "${lines[0]}" =~ ^NAME\ +TYPE\ +CLUSTER-IP\ +EXTERNAL-IP\ +PORT\(S\)\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^web\ +ClusterIP\ +10\.[0-9.]+\ +\<none\>\ +80/TCP\ +[0-9]+s$ ]]
	run kubectl get svc web -o wide
	[[ "${lines[0]}" =~ \ +SELECTOR$ ]]
	[[ "${lines[1]}" =~ \ +app=web$ ]]
	run kubectl get cm web
	[[ "${lines[0]}" =~ ^NAME\ +DATA\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^web\ +1\ +[0-9]+s$ ]]
	run kubectl get ns default
	[[ "${lines[0]}" =~ ^NAME\ +STATUS\ +AGE$ ]]
	[[ "${lines[1]}" =~ ^default\ +Active\ + ]]
	run kubectl get pods -A
	[[ "${lines[0]}" =~ ^NAMESPACE\ +NAME\ +READY\ +STATUS ]]
	run kubectl get pods --no-headers -o custom-columns=N:.metadata.name
	[ "$output" = "web" ]
}

@test "get -w prints Table events under one header" {
	kubectl create configmap tw0 --from-literal=a=1
	local out="$BATS_TEST_TMPDIR/watch.out"
	timeout 30 "$(type -P kubectl)" --cache-dir "$DC_DIR/cache" get cm -w \
	    >"$out" 2>&1 3>&- &
	local wpid=$!
	wait_for_line "$out" '^tw0 '
	kubectl create configmap tw1 --from-literal=a=1 --from-literal=b=2
	wait_for_line "$out" '^tw1 +2 '
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	[ "$(grep -cE '^NAME +DATA +AGE$' "$out")" -eq 1 ]
	grep -E '^tw0 +1 +[0-9]+s$' "$out"
	grep -E '^tw1 +2 +[0-9]+s$' "$out"
}

@test "watch=True is a watch, as the official Python client sends it; watch=False a list" {
	kubectl create configmap pywatch --from-literal=a=1
	local q="/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dpywatch"
	run kubectl get --raw "$q&watch=True&timeoutSeconds=1"
	[ "$status" -eq 0 ]
	echo "$output" | grep -F '{"type":"ADDED","object":{'
	echo "$output" | grep -F '"name":"pywatch"'
	! echo "$output" | grep -F '"kind":"ConfigMapList"'
	run kubectl get --raw "$q&watch=TRUE&allowWatchBookmarks=True&timeoutSeconds=1"
	[ "$status" -eq 0 ]
	echo "$output" | grep -F '{"type":"ADDED"'
	for v in False false 0; do
		run kubectl get --raw "$q&watch=$v"
		[ "$status" -eq 0 ]
		echo "$output" | grep -F '"kind":"ConfigMapList"'
	done
}

@test "kubectl diff sends a dry-run patch" {
	cat >"$BATS_TEST_TMPDIR/d.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: differ
data:
  a: "1"
EOF
	kubectl apply -f "$BATS_TEST_TMPDIR/d.yaml"
	run kubectl diff -f "$BATS_TEST_TMPDIR/d.yaml"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	sed -i 's/a: "1"/a: "2"/' "$BATS_TEST_TMPDIR/d.yaml"
	run kubectl diff -f "$BATS_TEST_TMPDIR/d.yaml"
	[ "$status" -eq 1 ]
	[[ "$output" == *'-  a: "1"'* ]]
	[[ "$output" == *'+  a: "2"'* ]]
	run kubectl get cm differ -o jsonpath='{.data.a}'
	[ "$output" = "1" ]
}

# crd DIR: the runs.trainyard.dev CRD in DIR/crd.yaml and a Run in DIR/run.yaml.
crd_manifests() {
	cat >"$1/crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: runs.trainyard.dev
spec:
  group: trainyard.dev
  scope: Namespaced
  names:
    plural: runs
    singular: run
    kind: Run
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Image
      type: string
      jsonPath: .spec.image
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        description: A training run.
        properties:
          spec:
            type: object
            description: What the run should do.
            properties:
              image:
                type: string
                description: The trainer image.
              env:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    value: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
EOF
	cat >"$1/run.yaml" <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata:
  name: r1
spec:
  image: trainer:1
  env:
  - name: A
    value: "1"
EOF
}

@test "custom resources: apply, create, replace and explain on 1.27 and 1.33" {
	local v dir
	crd_manifests "$BATS_TEST_TMPDIR"
	for v in 1.27 1.33; do
		dc_start_extra dir --kubernetes-version "$v"
		run kubectl_at "$dir" apply -f "$BATS_TEST_TMPDIR/crd.yaml"
		echo "$v: $output"
		[ "$status" -eq 0 ]
		kubectl_at "$dir" wait --for=condition=Established crd/runs.trainyard.dev \
		    --timeout=10s
		run kubectl_at "$dir" apply -f "$BATS_TEST_TMPDIR/run.yaml"
		echo "$v: $output"
		[ "$status" -eq 0 ]
		[ "$output" = "run.trainyard.dev/r1 created" ]
		# The document of the new group version carries the CRD's schema.
		run kubectl_at "$dir" explain runs.spec.image
		echo "$v: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"The trainer image."* ]]
		run kubectl_at "$dir" get runs
		[[ "${lines[0]}" =~ ^NAME\ +IMAGE\ +AGE$ ]]
		[[ "${lines[1]}" =~ ^r1\ +trainer:1\ + ]]
		sed 's/trainer:1/trainer:2/' "$BATS_TEST_TMPDIR/run.yaml" >"$BATS_TEST_TMPDIR/run2.yaml"
		run kubectl_at "$dir" apply -f "$BATS_TEST_TMPDIR/run2.yaml"
		[ "$output" = "run.trainyard.dev/r1 configured" ]
		run kubectl_at "$dir" create -f "$BATS_TEST_TMPDIR/run2.yaml"
		[ "$status" -ne 0 ]
		[[ "$output" == *'runs.trainyard.dev "r1" already exists'* ]]
		kubectl_at "$dir" get run r1 -o yaml >"$BATS_TEST_TMPDIR/run3.yaml"
		sed -i 's/trainer:2/trainer:3/' "$BATS_TEST_TMPDIR/run3.yaml"
		run kubectl_at "$dir" replace -f "$BATS_TEST_TMPDIR/run3.yaml"
		[ "$output" = "run.trainyard.dev/r1 replaced" ]
		# Strict field validation is the server's now.
		sed 's/image: trainer:1/image: trainer:1\n  bogus: 1/' "$BATS_TEST_TMPDIR/run.yaml" \
		    >"$BATS_TEST_TMPDIR/bad.yaml"
		run kubectl_at "$dir" create -f "$BATS_TEST_TMPDIR/bad.yaml"
		[ "$status" -ne 0 ]
		[[ "$output" == *'unknown field "spec.bogus"'* ]]
		dc_stop_extra "$dir"
	done
}

@test "custom resources: server-side apply merges list-type maps by key" {
	crd_manifests "$BATS_TEST_TMPDIR"
	kubectl apply -f "$BATS_TEST_TMPDIR/crd.yaml"
	kubectl wait --for=condition=Established crd/runs.trainyard.dev --timeout=10s
	run kubectl apply --server-side -f "$BATS_TEST_TMPDIR/run.yaml"
	[ "$status" -eq 0 ]
	cat >"$BATS_TEST_TMPDIR/env-b.yaml" <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata:
  name: r1
spec:
  env:
  - name: B
    value: "2"
EOF
	run kubectl apply --server-side --field-manager=tuner -f "$BATS_TEST_TMPDIR/env-b.yaml"
	[ "$status" -eq 0 ]
	run kubectl get run r1 -o json --show-managed-fields
	[ "$(echo "$output" | jq -c .spec.env)" = \
	    '[{"name":"A","value":"1"},{"name":"B","value":"2"}]' ]
	[ "$(echo "$output" | jq -c '.metadata.managedFields[] | select(.manager == "tuner")
	    | .fieldsV1["f:spec"]["f:env"] | keys')" = '["k:{\"name\":\"B\"}"]' ]
	# Changing A's value is a conflict with kubectl's field.
	sed -i 's/name: B/name: A/' "$BATS_TEST_TMPDIR/env-b.yaml"
	run kubectl apply --server-side --field-manager=tuner -f "$BATS_TEST_TMPDIR/env-b.yaml"
	[ "$status" -ne 0 ]
	[[ "$output" == *'conflict with "kubectl": .spec.env[name="A"].value'* ]]
}
