#!/usr/bin/env bats
#
# manifests.bats: what a platform team applies (manifests/, crds/,
# manifests/monitoring/, the example profiles and PriorityClasses), with
# the real kubectl against a trainyard-devcluster:
#
# - every file applies with --dry-run=server (the CRDs first, for real, so
#   custom resources dry-run too), one by one, as a directory with -f, and
#   as "kubectl kustomize" renders it;
# - the Deployment's shape (replicas, leader election, probes, restricted
#   security context, anti-affinity, resources) and its pod template as a
#   Pod; its flags and the ConfigMap's configuration are accepted by the
#   trainyard-controller binary;
# - the controller's ClusterRole and Roles grant exactly the set of verbs it
#   uses (parsed with jq, no wildcard, no secrets in the ClusterRole, one
#   Secret by name in its namespace), and its service account can do that
#   and nothing more (kubectl auth can-i);
# - the cert-manager Component renders the Certificates, the CRDs'
#   inject-ca-from annotation and the mounted Secret;
# - the aggregated roles: a user bound to edit manages runs and may exec, a
#   user bound to view reads runs, nobody but admins writes profiles;
# - the PrometheusRule's expressions parse and its alerts fire (promtool,
#   when installed), the dashboard queries only the controller's metrics;
# - the runtime package list covers what the binary links, and "make image"
#   says so when there is no container engine.
#
# The devcluster serves no apps/v1: the Deployment is applied through a
# stand-in CRD of the same kind in another group (it checks what a CRD
# with x-kubernetes-preserve-unknown-fields can: the object's metadata)
# and its pod template through a real Pod dry-run. The Prometheus
# operator's and cert-manager's kinds get minimal CRDs for the same reason.

load devcluster

MF="$DC_REPO/manifests"
CRDS="$DC_REPO/crds"
FIX="$DC_REPO/tests/fixtures/manifests"
SA=system:serviceaccount:trainyard-system:trainyard-controller

# What trainyard-controller calls, as "apiGroup resource verb" (core: "").
# Adding a verb here and to manifests/rbac.yaml is a decision: say why in
# both.
ALLOWED_CLUSTER='trainyard.dev runs get
trainyard.dev runs list
trainyard.dev runs watch
trainyard.dev resourceprofiles get
trainyard.dev resourceprofiles list
trainyard.dev resourceprofiles watch
trainyard.dev runs/status update
trainyard.dev runs/finalizers update
"" pods get
"" pods list
"" pods watch
"" pods create
"" pods delete
"" services get
"" services list
"" services watch
"" services create
"" services delete
networking.k8s.io networkpolicies get
networking.k8s.io networkpolicies list
networking.k8s.io networkpolicies watch
networking.k8s.io networkpolicies create
networking.k8s.io networkpolicies delete
scheduling.x-k8s.io podgroups get
scheduling.x-k8s.io podgroups list
scheduling.x-k8s.io podgroups watch
scheduling.x-k8s.io podgroups create
scheduling.x-k8s.io podgroups delete
scheduling.sigs.k8s.io podgroups get
scheduling.sigs.k8s.io podgroups list
scheduling.sigs.k8s.io podgroups watch
scheduling.sigs.k8s.io podgroups create
scheduling.sigs.k8s.io podgroups delete
"" events create
"" events patch
trainyard.dev projects get
trainyard.dev projects list
trainyard.dev projects watch
trainyard.dev projects patch
trainyard.dev projectmembers get
trainyard.dev projectmembers list
trainyard.dev projectmembers watch
trainyard.dev projectmembers patch
trainyard.dev projects/status update
trainyard.dev projectmembers/status update
"" namespaces get
"" namespaces list
"" namespaces watch
"" namespaces create
"" namespaces patch
"" namespaces delete
"" resourcequotas get
"" resourcequotas list
"" resourcequotas watch
"" resourcequotas create
"" resourcequotas update
"" resourcequotas delete
"" limitranges get
"" limitranges list
"" limitranges watch
"" limitranges create
"" limitranges update
"" limitranges delete
networking.k8s.io networkpolicies update
rbac.authorization.k8s.io rolebindings get
rbac.authorization.k8s.io rolebindings list
rbac.authorization.k8s.io rolebindings watch
rbac.authorization.k8s.io rolebindings create
rbac.authorization.k8s.io rolebindings update
rbac.authorization.k8s.io rolebindings delete
rbac.authorization.k8s.io clusterroles get
rbac.authorization.k8s.io clusterroles list
rbac.authorization.k8s.io clusterroles watch
rbac.authorization.k8s.io clusterroles create
rbac.authorization.k8s.io clusterroles update
rbac.authorization.k8s.io clusterroles delete
rbac.authorization.k8s.io clusterrolebindings get
rbac.authorization.k8s.io clusterrolebindings list
rbac.authorization.k8s.io clusterrolebindings watch
rbac.authorization.k8s.io clusterrolebindings create
rbac.authorization.k8s.io clusterrolebindings update
rbac.authorization.k8s.io clusterrolebindings delete
rbac.authorization.k8s.io clusterroles bind
apiextensions.k8s.io customresourcedefinitions get
apiextensions.k8s.io customresourcedefinitions patch
admissionregistration.k8s.io mutatingwebhookconfigurations get
admissionregistration.k8s.io mutatingwebhookconfigurations patch
admissionregistration.k8s.io validatingwebhookconfigurations get
admissionregistration.k8s.io validatingwebhookconfigurations patch
authentication.k8s.io tokenreviews create
authorization.k8s.io subjectaccessreviews create'
ALLOWED_LEASE='coordination.k8s.io leases get
coordination.k8s.io leases create
coordination.k8s.io leases update'
ALLOWED_CERTS='"" secrets get
"" secrets update
"" secrets patch
"" secrets create'

# The metric names the dashboard and the alerts may use.
METRICS='trainyard_reconcile_total
trainyard_reconcile_duration_seconds_bucket
trainyard_runs
trainyard_sessions_ended_total
trainyard_pods_created_total
trainyard_leader
trainyard_api_requests_total
trainyard_workqueue_depth
trainyard_time_to_all_running_seconds_bucket
trainyard_webhook_conversion_reviews_total
trainyard_webhook_certificate_expiry_timestamp_seconds'

# A CRD that stands in for a kind the devcluster does not serve.
standin_crd() {
	local group="$1" plural="$2" kind="$3" version="$4"
	kubectl apply -f - <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $plural.$group}
spec:
  group: $group
  names: {plural: $plural, singular: $(echo "$kind" | tr A-Z a-z), kind: $kind}
  scope: Namespaced
  versions:
  - name: $version
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
	kubectl wait --for condition=established --timeout=20s "crd/$plural.$group"
}

# The Deployment (read from stdin) in the stand-in group.
standin() {
	sed 's#^apiVersion: apps/v1$#apiVersion: standin.trainyard.dev/v1#'
}

# rules_of FILE KIND NAME: the object's rules as "group resource verb"
# lines, sorted ("" for the core group), parsed by kubectl, not grepped.
rules_of() {
	kubectl apply --dry-run=client -o json -f "$1" |
	    jq -r --arg k "$2" --arg n "$3" '
		(if .kind == "List" then .items[] else . end)
		| select(.kind == $k and .metadata.name == $n) | .rules[]
		| .apiGroups[] as $g | .resources[] as $r | .verbs[] as $v
		| "\(if $g == "" then "\"\"" else $g end) \($r) \($v)"' | sort
}

# kubectl auth can-i without its warnings (cluster-scoped resources).
can_i() {
	kubectl auth can-i "$@" 2>/dev/null
}

controller_bin() {
	CTL_BIN="${CONTROLLER:-$DC_REPO/$DC_BUILD/san/bin/trainyard-controller}"
	if [ -z "${CONTROLLER:-}" ]; then
		dc_make "$DC_BUILD/san/bin/trainyard-controller" || return 1
	fi
	[ -x "$CTL_BIN" ]
}

# The ControllerConfig of manifests/config.yaml, as the pod sees it.
config_file() {
	kubectl create --dry-run=client -f "$MF/config.yaml" \
	    -o jsonpath='{.data.config\.yaml}' >"$1"
}

setup_file() {
	printf '%s\n' 'tok-alice,alice,u-alice' 'tok-bob,bob,u-bob' 'tok-carol,carol,u-carol' \
	    >"$BATS_FILE_TMPDIR/tokens"
	dc_start --kubernetes-version 1.32 --token-auth-file "$BATS_FILE_TMPDIR/tokens"
	kubectl apply -f "$CRDS/" -f "$CRDS/third-party/"
	kubectl wait --for condition=established --timeout=20s \
	    crd/runs.trainyard.dev crd/resourceprofiles.trainyard.dev \
	    crd/podgroups.scheduling.x-k8s.io crd/podgroups.scheduling.sigs.k8s.io
	standin_crd standin.trainyard.dev deployments Deployment v1
	standin_crd monitoring.coreos.com prometheusrules PrometheusRule v1
	standin_crd monitoring.coreos.com servicemonitors ServiceMonitor v1
	standin_crd cert-manager.io certificates Certificate v1
	standin_crd cert-manager.io issuers Issuer v1
	kubectl apply -f "$MF/namespace.yaml"
}

teardown_file() {
	dc_stop
}

@test "kubectl kustomize renders manifests/, with the CRDs, and monitoring/" {
	run kubectl kustomize "$MF"
	[ "$status" -eq 0 ]
	kinds="$(echo "$output" | grep -E '^kind: ' | sort | uniq -c | awk '{print $3 "=" $1}' |
	    tr '\n' ' ')"
	[ "$kinds" = "ClusterRole=7 ClusterRoleBinding=1 ConfigMap=1 CustomResourceDefinition=4 Deployment=1 MutatingWebhookConfiguration=1 Namespace=1 NetworkPolicy=1 PodDisruptionBudget=1 PriorityClass=2 Role=2 RoleBinding=2 Service=2 ServiceAccount=1 ValidatingWebhookConfiguration=1 " ]
	run kubectl kustomize "$MF/monitoring"
	[ "$status" -eq 0 ]
	echo "$output" | grep -x 'kind: PrometheusRule'
	echo "$output" | grep -x 'kind: ServiceMonitor'
	echo "$output" | grep -x '    grafana_dashboard: "1"'
	echo "$output" | grep -F '"uid": "trainyard-controller"'
	run kubectl kustomize "$CRDS"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -cx 'kind: CustomResourceDefinition')" -eq 4 ]
}

@test "the cert-manager Component: Certificates, the CRDs' annotation, the mounted Secret" {
	run kubectl kustomize "$DC_REPO/examples/cert-manager"
	[ "$status" -eq 0 ]
	local y="$BATS_TEST_TMPDIR/cm.yaml"
	echo "$output" >"$y"
	kinds="$(grep -E '^kind: (Certificate|Issuer)$' "$y" | sort | uniq -c | awk '{print $3 "=" $1}' |
	    tr '\n' ' ')"
	[ "$kinds" = "Certificate=2 Issuer=2 " ]
	kubectl apply --dry-run=server -o json -f - < <(standin <"$y") >"$BATS_TEST_TMPDIR/cm.json"
	# The CRDs of two versions (the Projects' have one), and the admission webhooks.
	jq -e '[.items[] | select(.kind == "CustomResourceDefinition" and
	    (.metadata.name | test("^(runs|resourceprofiles)[.]"))) |
	    .metadata.annotations["cert-manager.io/inject-ca-from"]] ==
		["trainyard-system/trainyard-webhook-cert", "trainyard-system/trainyard-webhook-cert"]' \
	    "$BATS_TEST_TMPDIR/cm.json"
	jq -e '[.items[] | select(.kind | test("WebhookConfiguration$")) |
	    .metadata.annotations["cert-manager.io/inject-ca-from"]] ==
		["trainyard-system/trainyard-webhook-cert", "trainyard-system/trainyard-webhook-cert"]' \
	    "$BATS_TEST_TMPDIR/cm.json"
	jq -e '.items[] | select(.kind == "Certificate" and .metadata.name ==
	    "trainyard-webhook-cert") | .spec.dnsNames ==
		["trainyard-webhook.trainyard-system.svc",
		 "trainyard-webhook.trainyard-system.svc.cluster.local"]
	    and .spec.secretName == "trainyard-webhook-tls"' "$BATS_TEST_TMPDIR/cm.json"
	jq -e '.items[] | select(.kind == "Deployment") | .spec.template.spec |
	    (.containers[0].args | index("--webhook-cert-mode=files") != null)
	    and (.containers[0].args | index("--webhook-cert-mode=self") == null)
	    and (.containers[0].volumeMounts | map(.mountPath) | sort ==
		["/etc/trainyard", "/tmp/k8s-webhook-server/serving-certs"])
	    and (.volumes[] | select(.name == "webhook-certs") | .secret.secretName ==
		"trainyard-webhook-tls")' "$BATS_TEST_TMPDIR/cm.json"
}

@test "every manifest and CRD applies with --dry-run=server, file by file" {
	local f
	for f in "$CRDS"/*.yaml "$MF"/*.yaml "$MF"/monitoring/*.yaml \
	    "$DC_REPO/examples/profiles.yaml" "$DC_REPO/examples/priorityclasses.yaml"; do
		if [ "$f" = "$MF/deployment.yaml" ]; then
			run kubectl apply --dry-run=server -f - < <(standin <"$f")
		else
			run kubectl apply --dry-run=server -f "$f"
		fi
		if [ "$status" -ne 0 ]; then
			echo "$f: $output" >&2
			return 1
		fi
		echo "$output" | grep -vE '^Warning:' | grep -qE ' (created|configured|unchanged) \(server dry run\)$'
	done
}

@test "kubectl apply -f of the directories and -k's rendering dry-run on the server" {
	local d="$BATS_TEST_TMPDIR/m"
	mkdir -p "$d"
	# The same directory, the Deployment in its stand-in group.
	cp -r "$MF/." "$d/"
	standin <"$MF/deployment.yaml" >"$d/deployment.yaml"
	run kubectl apply --dry-run=server -f "$CRDS/" -f "$d/"
	[ "$status" -eq 0 ]
	echo "$output" | grep -x 'deployment.standin.trainyard.dev/trainyard-controller created (server dry run)'
	echo "$output" | grep -x 'clusterrole.rbac.authorization.k8s.io/trainyard-controller created (server dry run)'
	! echo "$output" | grep -i kustomization
	run kubectl apply --dry-run=server -f "$MF/monitoring/"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c 'created (server dry run)')" -eq 2 ]
	run kubectl apply --dry-run=server -f - < <(kubectl kustomize "$MF" | standin)
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '(server dry run)$')" -eq 28 ]
	run kubectl apply --dry-run=server -k "$MF/monitoring"
	[ "$status" -eq 0 ]
	echo "$output" | grep -x 'configmap/trainyard-controller-dashboard created (server dry run)'
}

@test "the NetworkPolicy: the webhook open, metrics only from the monitoring namespace" {
	local y="$BATS_TEST_TMPDIR/np.json" o="$BATS_TEST_TMPDIR/overlay"
	kubectl kustomize "$MF" >"$BATS_TEST_TMPDIR/all.yaml"
	kubectl apply --dry-run=server -o json -f - < <(standin <"$BATS_TEST_TMPDIR/all.yaml") |
	    jq '.items[] | select(.kind == "NetworkPolicy")' >"$y"
	jq -e '.metadata.namespace == "trainyard-system"
	    and .spec.podSelector.matchLabels == {"app.kubernetes.io/name": "trainyard-controller"}
	    and .spec.policyTypes == ["Ingress"]
	    and .spec.ingress == [
		{"ports": [{"port": "webhook", "protocol": "TCP"}]},
		{"from": [{"namespaceSelector": {"matchLabels":
		    {"kubernetes.io/metadata.name": "monitoring"}}}],
		 "ports": [{"port": "metrics", "protocol": "TCP"}]}]' "$y"
	# The ports it names are the Deployment's; the probes' is not among them.
	grep -qx '        - name: webhook' "$MF/deployment.yaml"
	grep -qx '        - name: metrics' "$MF/deployment.yaml"
	# An overlay names another namespace, as the Kustomization's patch does.
	mkdir -p "$o"
	cp -r "$MF" "$o/base"
	printf '%s\n' 'resources: [base]' 'patches:' \
	    '- target: {kind: NetworkPolicy, name: trainyard-controller}' \
	    '  patch: |-' '    - op: replace' \
	    '      path: /spec/ingress/1/from/0/namespaceSelector/matchLabels/kubernetes.io~1metadata.name' \
	    '      value: prometheus' >"$o/kustomization.yaml"
	cp -r "$CRDS" "$o/crds"
	run kubectl kustomize "$o"
	[ "$status" -eq 0 ]
	echo "$output" | grep -x '          kubernetes.io/metadata.name: prometheus'
}

@test "the Deployment: two leader-electing replicas, probes, restricted pods" {
	local d="$BATS_TEST_TMPDIR/d.json"
	kubectl apply --dry-run=server -o json -f - < <(standin <"$MF/deployment.yaml") >"$d"
	[ "$(jq '.spec.replicas' "$d")" -eq 2 ]
	jq -e '.spec.template.spec.containers | length == 1' "$d"
	jq -e '.spec.template.spec.containers[0].args | index("--leader-elect") != null' "$d"
	jq -e '.spec.template.spec.containers[0].args | index("--config=/etc/trainyard/config.yaml") != null' "$d"
	jq -e '.spec.template.spec.serviceAccountName == "trainyard-controller"' "$d"
	jq -e '.spec.template.spec.terminationGracePeriodSeconds == 30' "$d"
	# Both probes on the health port, which nothing else shares; readiness
	# is the conversion webhook's, which its Service's endpoints follow.
	jq -e '.spec.template.spec.containers[0] |
	    (.ports | map({(.name): .containerPort}) | add) ==
		{"metrics": 8080, "health": 8081, "webhook": 9443}
	    and .livenessProbe.httpGet == {"path": "/healthz", "port": "health"}
	    and .readinessProbe.httpGet == {"path": "/readyz/webhook", "port": "health"}' "$d"
	# Self-managed webhook certificates, in the pod's own namespace.
	jq -e '.spec.template.spec.containers[0] |
	    (.args | index("--webhook-cert-mode=self") != null)
	    and (.args | index("--metrics-secure") != null)
	    and (.env[] | select(.name == "POD_NAMESPACE") |
		.valueFrom.fieldRef.fieldPath == "metadata.namespace")' "$d"
	# The restricted Pod Security profile, at pod and container level.
	jq -e '.spec.template.spec.securityContext |
	    .runAsNonRoot == true and .seccompProfile.type == "RuntimeDefault"
	    and .runAsUser > 0' "$d"
	jq -e '.spec.template.spec.containers[0].securityContext |
	    .runAsNonRoot == true and .readOnlyRootFilesystem == true
	    and .allowPrivilegeEscalation == false and .capabilities.drop == ["ALL"]
	    and .seccompProfile.type == "RuntimeDefault" and (.capabilities.add == null)' "$d"
	jq -e '.spec.template.spec.containers[0].resources |
	    .requests.cpu and .requests.memory and .limits.memory' "$d"
	jq -e '.spec.template.spec.affinity.podAntiAffinity
	    .preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm |
	    .topologyKey == "kubernetes.io/hostname"
	    and .labelSelector.matchLabels["app.kubernetes.io/name"] == "trainyard-controller"' "$d"
	# The selector matches the pods; the PDB and the Service select them too.
	jq -e '.spec.selector.matchLabels as $s | .spec.template.metadata.labels |
	    contains($s)' "$d"
	kubectl apply --dry-run=server -o json -f "$MF/pdb.yaml" |
	    jq -e '.spec.minAvailable == 1 and .spec.selector.matchLabels ==
		{"app.kubernetes.io/name": "trainyard-controller"}'
	kubectl apply --dry-run=server -o json -f "$MF/service.yaml" |
	    jq -e '[.items[] | {(.metadata.name): {sel: .spec.selector,
		port: .spec.ports[0] | [.port, .targetPort]}}] | add ==
		{"trainyard-controller": {sel: {"app.kubernetes.io/name": "trainyard-controller"},
		    port: [8080, "metrics"]},
		 "trainyard-webhook": {sel: {"app.kubernetes.io/name": "trainyard-controller"},
		    port: [443, "webhook"]}}'
	# The controller's own pods must not look managed by Trainyard (its
	# informers select app.kubernetes.io/managed-by=trainyard).
	jq -e '.spec.template.metadata.labels["app.kubernetes.io/managed-by"] == null' "$d"
	# The mounted ConfigMap is the one config.yaml defines.
	jq -e '.spec.template.spec.volumes[] | select(.name == "config") |
	    .configMap.name == "trainyard-controller-config"' "$d"

	# The pod template is a valid Pod of the restricted namespace.
	kubectl apply -f "$MF/rbac.yaml" -f "$MF/config.yaml"
	jq '{apiVersion: "v1", kind: "Pod",
	    metadata: (.spec.template.metadata + {name: "template-check",
		namespace: .metadata.namespace}),
	    spec: .spec.template.spec}' "$d" >"$BATS_TEST_TMPDIR/pod.json"
	run kubectl create --dry-run=server -f "$BATS_TEST_TMPDIR/pod.json"
	[ "$status" -eq 0 ]
	[ "$output" = 'pod/template-check created (server dry run)' ]
	kubectl get ns trainyard-system -o jsonpath='{.metadata.labels}' |
	    jq -e '.["pod-security.kubernetes.io/enforce"] == "restricted"'
}

@test "the ConfigMap's configuration is one the controller accepts" {
	controller_bin
	config_file "$BATS_TEST_TMPDIR/config.yaml"
	grep -x 'kind: ControllerConfig' "$BATS_TEST_TMPDIR/config.yaml"
	# A good file: the start gets past the configuration and stops at the
	# missing kubeconfig.
	run "$CTL_BIN" --config "$BATS_TEST_TMPDIR/config.yaml" \
	    --kubeconfig "$BATS_TEST_TMPDIR/none"
	[ "$status" -eq 2 ]
	[ "$output" = "trainyard-controller: $BATS_TEST_TMPDIR/none: No such file or directory" ]
	# The same file with a misspelt key stops at the configuration: the
	# check above would see a broken ConfigMap.
	sed 's/^workers:/wrokers:/' "$BATS_TEST_TMPDIR/config.yaml" >"$BATS_TEST_TMPDIR/bad.yaml"
	run "$CTL_BIN" --config "$BATS_TEST_TMPDIR/bad.yaml" --kubeconfig "$BATS_TEST_TMPDIR/none"
	[ "$status" -eq 2 ]
	[ "$output" = "trainyard-controller: $BATS_TEST_TMPDIR/bad.yaml: wrokers: unknown key" ]
	# The configuration agrees with the RBAC and the PriorityClasses.
	grep -x '  namespace: trainyard-system' "$BATS_TEST_TMPDIR/config.yaml"
	grep -x '  id: trainyard-controller' "$BATS_TEST_TMPDIR/config.yaml"
	grep -x 'defaultPriorityClassName: trainyard-default' "$BATS_TEST_TMPDIR/config.yaml"
	grep -x 'preemptiblePriorityClassName: trainyard-preemptible' "$BATS_TEST_TMPDIR/config.yaml"
	grep -x 'healthProbeBindAddress: ":8081"' "$BATS_TEST_TMPDIR/config.yaml"
	grep -x 'metricsBindAddress: ":8080"' "$BATS_TEST_TMPDIR/config.yaml"
}

@test "the controller accepts the Deployment's flags" {
	controller_bin
	config_file "$BATS_TEST_TMPDIR/config.yaml"
	local args=()
	mapfile -t args < <(kubectl apply --dry-run=server -o json \
	    -f - < <(standin <"$MF/deployment.yaml") |
	    jq -r '.spec.template.spec.containers[0].args[]' |
	    sed "s#^--config=/etc/trainyard/config.yaml\$#--config=$BATS_TEST_TMPDIR/config.yaml#")
	[ "${#args[@]}" -ge 2 ]
	run "$CTL_BIN" "${args[@]}" --kubeconfig "$BATS_TEST_TMPDIR/none"
	[ "$status" -eq 2 ]
	[ "$output" = "trainyard-controller: $BATS_TEST_TMPDIR/none: No such file or directory" ]
}

@test "the controller's ClusterRole and Role grant exactly the verbs it uses" {
	run rules_of "$MF/rbac.yaml" ClusterRole trainyard-controller
	[ "$status" -eq 0 ]
	diff -u <(echo "$ALLOWED_CLUSTER" | sort) <(echo "$output")
	run rules_of "$MF/rbac.yaml" Role trainyard-controller-leader-election
	[ "$status" -eq 0 ]
	diff -u <(echo "$ALLOWED_LEASE" | sort) <(echo "$output")
	run rules_of "$MF/rbac.yaml" Role trainyard-controller-webhook-certs
	[ "$status" -eq 0 ]
	diff -u <(echo "$ALLOWED_CERTS" | sort) <(echo "$output")
	# The forbidden grants, said again on their own so the failure is plain.
	local rbac all
	rbac="$(kubectl apply --dry-run=client -o json -f "$MF/rbac.yaml")"
	all="$(echo "$rbac" | jq -c '[.items[] | select((.kind == "ClusterRole" or
	    .kind == "Role") and .metadata.name != "trainyard-metrics-reader") | .rules[]]')"
	echo "$all" | jq -e 'all(.[]; (.verbs + .resources + .apiGroups) | index("*") == null)'
	echo "$all" | jq -e 'all(.[]; .nonResourceURLs == null and
	    (.verbs | map(select(test("escalate|impersonate|deletecollection"))) == []))'
	# bind: on exactly the three project roles, in a rule of its own.
	echo "$all" | jq -e '[.[] | select(.verbs | index("bind"))] ==
		[{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
		  "resourceNames": ["trainyard-project-viewer", "trainyard-project-researcher",
		  "trainyard-project-admin"], "verbs": ["bind"]}]'
	# No secrets or configmaps cluster-wide; in its namespace, one Secret by
	# name (create cannot be limited by name, and is the only verb without).
	echo "$rbac" | jq -e '[.items[] | select(.kind == "ClusterRole") | .rules[] |
	    .resources // [] | .[] | select(test("secrets|configmaps"))] == []'
	echo "$rbac" | jq -e '[.items[] | select(.kind == "Role") | .rules[] |
	    select(.resources | index("secrets"))] ==
		[{"apiGroups": [""], "resources": ["secrets"],
		  "resourceNames": ["trainyard-webhook-certs"],
		  "verbs": ["get", "update", "patch"]},
		 {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]'
	# CRDs: only the two Trainyard ones, by name.
	echo "$rbac" | jq -e '[.items[] | select(.kind == "ClusterRole") | .rules[] |
	    select(.apiGroups == ["apiextensions.k8s.io"]) | .resourceNames] ==
		[["runs.trainyard.dev", "resourceprofiles.trainyard.dev"]]'
	# Prometheus's reader: GET /metrics and nothing else.
	echo "$rbac" | jq -e '.items[] | select(.kind == "ClusterRole" and
	    .metadata.name == "trainyard-metrics-reader") | .rules ==
		[{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]'
	# Roles only in the controller's namespace, bound to its account.
	echo "$rbac" | jq -e '
	    [.items[] | select(.kind == "Role" or .kind == "RoleBinding") | .metadata.namespace]
		== ["trainyard-system", "trainyard-system", "trainyard-system", "trainyard-system"]
	    and ([.items[] | select(.kind | test("Binding$")) | .subjects] ==
		[[{"kind": "ServiceAccount", "name": "trainyard-controller",
		   "namespace": "trainyard-system"}],
		 [{"kind": "ServiceAccount", "name": "trainyard-controller",
		   "namespace": "trainyard-system"}],
		 [{"kind": "ServiceAccount", "name": "trainyard-controller",
		   "namespace": "trainyard-system"}]])'
}

@test "the controller's service account may do that and nothing more" {
	kubectl apply -f "$MF/rbac.yaml"
	local q
	while read -r q; do
		[ -n "$q" ] || continue
		run can_i $q --as "$SA"
		[ "$output" = yes ] || { echo "can-i $q: $output" >&2; return 1; }
	done <<'EOF'
list runs.trainyard.dev -A
watch runs.trainyard.dev -A
get resourceprofiles.trainyard.dev
update runs.trainyard.dev --subresource=status -n team
create pods -n team
delete pods -n team
watch pods -A
create services -n team
create networkpolicies.networking.k8s.io -n team
delete podgroups.scheduling.x-k8s.io -n team
create podgroups.scheduling.sigs.k8s.io -n team
create events -n team
patch events -n team
create leases.coordination.k8s.io -n trainyard-system
update leases.coordination.k8s.io/trainyard-controller -n trainyard-system
get secrets/trainyard-webhook-certs -n trainyard-system
update secrets/trainyard-webhook-certs -n trainyard-system
create secrets -n trainyard-system
get customresourcedefinitions.apiextensions.k8s.io/runs.trainyard.dev
patch customresourcedefinitions.apiextensions.k8s.io/resourceprofiles.trainyard.dev
list projects.trainyard.dev
patch projectmembers.trainyard.dev -n team
update projects.trainyard.dev --subresource=status
create namespaces
create resourcequotas -n team
create limitranges -n team
update rolebindings.rbac.authorization.k8s.io -n team
create clusterroles.rbac.authorization.k8s.io
bind clusterroles.rbac.authorization.k8s.io/trainyard-project-admin
bind clusterroles.rbac.authorization.k8s.io/trainyard-project-viewer
EOF
	while read -r q; do
		[ -n "$q" ] || continue
		run can_i $q --as "$SA"
		[ "$output" = no ] || { echo "can-i $q: $output" >&2; return 1; }
	done <<'EOF'
get secrets -n team
list secrets -A
list secrets -n trainyard-system
get secrets/other -n trainyard-system
update secrets/other -n trainyard-system
create secrets -n team
patch customresourcedefinitions.apiextensions.k8s.io/other.example.com
list customresourcedefinitions.apiextensions.k8s.io
get configmaps -n trainyard-system
update runs.trainyard.dev -n team
patch runs.trainyard.dev -n team
delete runs.trainyard.dev -n team
create resourceprofiles.trainyard.dev
update pods -n team
patch pods -n team
create pods --subresource=exec -n team
update services -n team
create leases.coordination.k8s.io -n kube-system
delete leases.coordination.k8s.io/trainyard-controller -n trainyard-system
bind clusterroles.rbac.authorization.k8s.io/cluster-admin
bind clusterroles.rbac.authorization.k8s.io/admin
escalate clusterroles.rbac.authorization.k8s.io
create projects.trainyard.dev
update projects.trainyard.dev
delete projectmembers.trainyard.dev -n team
update namespaces
EOF
}

@test "aggregated roles: edit manages runs and execs, view reads, profiles stay admin's" {
	kubectl create namespace team
	kubectl create rolebinding alice-edit --clusterrole=edit --user=alice -n team
	kubectl create rolebinding bob-view --clusterrole=view --user=bob -n team
	kubectl create rolebinding carol-ty --clusterrole=trainyard-edit --user=carol -n team
	# Before the roles exist, edit knows nothing of runs.
	run can_i create runs.trainyard.dev -n team --as alice
	[ "$output" = no ]
	kubectl apply -f "$MF/rbac-users.yaml"
	run kubectl get clusterrole edit -o json
	echo "$output" | jq -e '[.rules[] | select(.apiGroups == ["trainyard.dev"])] | length > 0'
	local u v
	for u in alice carol; do
		for v in "create runs.trainyard.dev" "delete runs.trainyard.dev" \
		    "patch runs.trainyard.dev" "list runs.trainyard.dev" \
		    "create pods --subresource=exec" "get pods --subresource=exec" \
		    "get pods --subresource=log" "list pods" "list events"; do
			run can_i $v -n team --as "$u"
			[ "$output" = yes ] || { echo "$u can-i $v: $output" >&2; return 1; }
		done
		for v in "update runs.trainyard.dev --subresource=status" \
		    "create resourceprofiles.trainyard.dev" "delete resourceprofiles.trainyard.dev"; do
			run can_i $v -n team --as "$u"
			[ "$output" = no ] || { echo "$u can-i $v: $output" >&2; return 1; }
		done
		run can_i create runs.trainyard.dev -n default --as "$u"
		[ "$output" = no ]
	done
	# trainyard-edit alone is not edit.
	run can_i create configmaps -n team --as carol
	[ "$output" = no ]
	for v in "get runs.trainyard.dev" "list runs.trainyard.dev" "watch runs.trainyard.dev"; do
		run can_i $v -n team --as bob
		[ "$output" = yes ]
	done
	for v in "create runs.trainyard.dev" "delete runs.trainyard.dev" \
	    "create pods --subresource=exec"; do
		run can_i $v -n team --as bob
		[ "$output" = no ]
	done

	# For real, with the users' own tokens.
	kubectl --token=tok-alice apply -n team -f - <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: r1}
spec:
  nodes: 2
  container: {image: busybox, resources: {limits: {cpu: "1"}}}
EOF
	run kubectl --token=tok-bob get runs -n team -o name
	[ "$status" -eq 0 ]
	[ "$output" = run.trainyard.dev/r1 ]
	run kubectl --token=tok-bob delete run r1 -n team
	[ "$status" -ne 0 ]
	echo "$output" | grep -F 'runs.trainyard.dev "r1" is forbidden: User "bob" cannot delete resource "runs" in API group "trainyard.dev" in the namespace "team"'
	kubectl --token=tok-carol delete run r1 -n team
}

@test "PriorityClasses: manifests/ and examples/ hold the same file" {
	cmp "$MF/priorityclasses.yaml" "$DC_REPO/examples/priorityclasses.yaml"
	kubectl apply --dry-run=server -o json -f "$MF/priorityclasses.yaml" | jq -e '
	    ([.items[] | {(.metadata.name): .value}] | add) ==
		{"trainyard-default": 1000, "trainyard-preemptible": 100}
	    and all(.items[]; .globalDefault == false)'
}

@test "alerts: the PrometheusRule parses and fires as expected (promtool)" {
	local d="$BATS_TEST_TMPDIR/rules"
	mkdir -p "$d"
	kubectl apply --dry-run=server -o json -f "$MF/monitoring/prometheusrule.yaml" >"$d/rule.json"
	# The four alerts docs/operations.md names.
	jq -e '[.spec.groups[].rules[].alert] | contains(["TrainyardControllerDown",
	    "TrainyardReconcileErrors", "TrainyardRunsUnschedulable",
	    "TrainyardCleanupFailing", "TrainyardConversionFailures",
	    "TrainyardWebhookCertificateExpiring"])' "$d/rule.json"
	jq -e 'all(.spec.groups[].rules[]; .labels.severity and .annotations.summary
	    and .annotations.description)' "$d/rule.json"
	run bash -c "jq -r '.spec.groups[].rules[].expr' '$d/rule.json' |
	    grep -oE '\\b(trainyard_[a-z_]+|up)\\{' | tr -d '{' | sort -u"
	[ "$status" -eq 0 ]
	local m
	for m in $output; do
		[ "$m" = up ] || echo "$METRICS" | grep -qx "$m" ||
		    { echo "unknown metric $m" >&2; return 1; }
	done
	command -v promtool >/dev/null || skip "promtool is not installed (Debian: prometheus)"
	jq '.spec' "$d/rule.json" >"$d/check.json"
	promtool check rules "$d/check.json"
	jq '.spec | del(.groups[].rules[].annotations)' "$d/rule.json" >"$d/rules.json"
	cp "$FIX/alerts-test.yaml" "$d/"
	(cd "$d" && promtool test rules alerts-test.yaml)
}

@test "the Grafana dashboard is valid JSON built from the controller's metrics" {
	local f="$MF/monitoring/dashboards/trainyard-controller.json"
	jq -e '.uid == "trainyard-controller" and (.panels | length) > 10' "$f"
	# Unique panel ids; every query uses the data source variable.
	jq -e '[.panels[].id] | length == (unique | length)' "$f"
	jq -e 'all(.panels[] | select(.type != "row") | .targets[];
	    .datasource.uid == "${datasource}")' "$f"
	local used m
	used="$(jq -r '.panels[].targets[]?.expr' "$f" | grep -oE '\b(trainyard_[a-z_]+|up)\{' |
	    tr -d '{' | sort -u)"
	for m in $used; do
		[ "$m" = up ] || echo "$METRICS" | grep -qx "$m" ||
		    { echo "unknown metric $m" >&2; return 1; }
	done
	# And every metric is on the dashboard.
	for m in $METRICS; do
		echo "$used" | grep -qx "$m" || { echo "$m is not on the dashboard" >&2; return 1; }
	done
}

@test "scripts/runtime-deps.txt names a package for every library the controller links" {
	# The release build, as the Containerfile makes it (the sanitizer build
	# links more).
	local bin="$DC_REPO/$DC_BUILD/bin/trainyard-controller"
	dc_make "$DC_BUILD/bin/trainyard-controller"
	local pkgs have lib path pkg libs=() files=() owners i
	pkgs="$(grep -v '^[[:space:]]*#' "$DC_REPO/scripts/runtime-deps.txt" | awk 'NF {print $1}')"
	# What apt installs with them: the list and its packages' dependencies
	# (one apt-cache and one dpkg for all: each loads its whole database).
	# shellcheck disable=SC2086
	have="$(echo "$pkgs"; apt-cache depends $pkgs | awk '/Depends:/ {print $NF}')"
	for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case "$lib" in
		libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.*)
			continue ;;		# libc6, in every Debian image
		esac
		path="$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')"
		[ -n "$path" ]
		libs+=("$lib")
		files+=("$(basename "$(readlink -f "$path")")")
	done
	[ "${#libs[@]}" -gt 0 ]
	# Any directory: with merged /usr, dpkg knows /lib/x86_64-linux-gnu/...
	owners="$(dpkg -S "${files[@]/#/*/}")" || true
	for i in "${!libs[@]}"; do
		pkg="$(awk -v f="/${files[$i]}" 'substr($0, length($0) - length(f) + 1) == f' \
		    <<<"$owners" | head -1 | cut -d: -f1)"
		echo "$have" | grep -qx "$pkg" ||
		    { echo "${libs[$i]} comes from '$pkg', not in runtime-deps.txt" >&2; return 1; }
	done
	# The Containerfile's runtime stage installs that list and nothing else.
	grep -x 'RUN /tmp/deps/install-deps --runtime && rm -rf /var/lib/apt/lists/\* /tmp/deps' \
	    "$DC_REPO/Containerfile"
	[ "$(grep -c 'apt-get' "$DC_REPO/Containerfile")" -eq 0 ]
	grep -x 'USER 65532:65532' "$DC_REPO/Containerfile"
}

@test "make image: a clear message and status 1 without docker or podman" {
	local bin="$BATS_TEST_TMPDIR/bin"
	mkdir -p "$bin"
	# A client without a daemon, as docker is on a machine without one.
	printf '#!/bin/sh\necho "Cannot connect to the Docker daemon" >&2\nexit 1\n' >"$bin/docker"
	cp "$bin/docker" "$bin/podman"
	chmod +x "$bin/docker" "$bin/podman"
	PATH="$bin:$PATH" run "$DC_REPO/scripts/build-image"
	[ "$status" -eq 1 ]
	echo "$output" | grep -F 'make image: needs a working docker or podman, and there is none here'
	# A working one is called with the Containerfile and the version's tag.
	printf '#!/bin/sh\necho "podman $*"\n' >"$bin/podman"
	PATH="$bin:$PATH" run "$DC_REPO/scripts/build-image"
	[ "$status" -eq 0 ]
	echo "$output" | grep -x "podman build -f $DC_REPO/Containerfile -t trainyard-controller:$(awk '$1 == "VERSION" {print $3}' "$DC_REPO/Makefile") $DC_REPO"
}
