# projects.bash: what the Projects suites (ctl_projects.bats,
# ctl_project_quota.bats) share: a devcluster with the GPU cluster, the
# CRDs, the project roles and the controller under its manifests' service
# account and ClusterRole (RBAC and its escalation prevention enforced),
# serving its webhooks behind their Service; and helpers for the people
# involved (impersonation with --as, --as-group).

load devcluster
load controller

projects_setup_file() {
	dc_start --nodes "$DC_REPO/examples/devcluster/gpu-cluster.yaml" \
	    --pod-start-delay 100ms || return 1
	ctl_build || return 1
	ctl_install || return 1
	ctl_install_projects "$DC_REPO/manifests/rbac.yaml" || return 1
	ctl_config
	ctl_sa_kubeconfig "$DC_DIR/sa.kubeconfig" || return 1
	kubectl delete --raw /devcluster/stats >/dev/null
	projects_controller p
}

# projects_controller NAME: starts the controller NAME under the service
# account, serving the webhooks behind their Service with self-managed
# certificates; returns once it started.
projects_controller() {
	POD_NAMESPACE=trainyard-system ctl_proc_launch "$1" \
	    --kubeconfig "$DC_DIR/sa.kubeconfig" --webhook-cert-mode=self || return 1
	ctl_proc_wait "$1" 'conversion webhook on port' || return 1
	ctl_webhook_endpoints "$(grep -o 'conversion webhook on port [0-9]*' \
	    "$DC_DIR/ctl-$1.log" | tail -1 | awk '{print $NF}')" || return 1
	ctl_proc_wait "$1" '(msg=started|"msg":"started")'
}

projects_teardown_file() {
	local status=0
	ctl_proc_stop_all || status=1
	if [ "$status" -ne 0 ]; then
		cp "$DC_DIR/ctl-p.log" "${DC_DIR}.ctl-p.log" 2>/dev/null
		echo "controller log kept in ${DC_DIR}.ctl-p.log" >&2
	fi
	dc_stop || status=1
	return "$status"
}

projects_teardown() {
	ctl_proc_sanitizer
}

W=20s

# can AS... -- VERB RESOURCE [ARGS]: kubectl auth can-i's answer.
can() {
	kubectl auth can-i "$@" 2>/dev/null
}

# project NAME [SPEC LINES]: applies Project NAME with its home namespace
# NAME and NAME-eval, owned by the group NAME-leads; PROJECT_QUOTA replaces
# its quota (16 GPUs, 64 pods, at most 8 GPUs per Run).
project() {
	local name="$1"
	shift
	kubectl apply -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Project
metadata: {name: $name}
spec:
  owners: [{kind: Group, name: $name-leads}]
  namespaces: [{name: $name}, {name: $name-eval}]
  quota: ${PROJECT_QUOTA:-{hard: {requests.nvidia.com/gpu: '16', pods: '64'\}, maxGPUsPerRun: 8\}}
  memberPolicy: {subjectKinds: [User, Group], maxInvitationTTL: 2160h}
  isolation: {allowIngressFromNamespaces: [monitoring]}
$(printf '  %s\n' "$@")
EOF
}

# member NS NAME USER ROLE [EXPIRES]: a ProjectMember of user USER.
member() {
	kubectl apply -n "$1" -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: $2}
spec:
  subject: {kind: User, name: $3}
  role: $4
${5:+  expiresAt: "$5"}
EOF
}

# pm NS NAME JSONPATH
pm() {
	kubectl get projectmember "$2" -n "$1" -o jsonpath="$3"
}

# prun NS NAME PROFILE SECONDS [ANNOTATION]: a 1-node Run of PROFILE ("" for
# none) whose pods run SECONDS, with ANNOTATION ("key: value") if given.
prun() {
	kubectl apply -n "$1" -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata:
  name: $2
${5:+  annotations: {$5\}}
spec:
  nodes: 1
${3:+  profile: $3}
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "$4"}
EOF
}

# quota NS RUN FIELD: a field of the Run's QuotaReserved condition.
quota() {
	kubectl get run "$2" -n "$1" \
	    -o jsonpath="{.status.conditions[?(@.type==\"QuotaReserved\")].$3}"
}

# quota_wait NS RUN STATUS REASON: both read by one kubectl a time.
quota_wait() {
	local i c='.status.conditions[?(@.type=="QuotaReserved")]'
	for i in $(seq 200); do
		[ "$(kubectl get run "$2" -n "$1" -o jsonpath="{$c.status}/{$c.reason}")" = "$3/$4" ] &&
		    return 0
		sleep 0.1
	done
	echo "run $1/$2: QuotaReserved $(quota "$1" "$2" status)/$(quota "$1" "$2" reason):" \
	    "$(quota "$1" "$2" message)" >&2
	return 1
}

# pods_of NS RUN: the names of the Run's pods.
pods_of() {
	kubectl get pods -n "$1" -l trainyard.dev/run="$2" -o name
}

# projects_no_refusals: no request of the suite was refused (403), no write
# loop (a handful of updates of the objects a Project keeps), and no
# "forbidden" in the controllers' logs.
projects_no_refusals() {
	local stats n
	stats="$(kubectl get --raw /devcluster/stats)"
	echo "$stats" | jq -c '.byCode, (.requests[] | select(.code == 403))'
	[ "$(jq '.byCode["403"] // 0' <<<"$stats")" = 0 ] || return 1
	# No write loops: a handful of updates (drift, adoption, status) in the whole file.
	jq -c '[.requests[] | select(.verb == "update" or .verb == "patch") |
	    {verb, resource, code, count}]' <<<"$stats" >&3
	n="$(jq '[.requests[] | select(.verb == "update" and
	    (.resource | test("^(rolebindings|clusterrolebindings|clusterroles|resourcequotas|networkpolicies)"))) |
	    .count] | add // 0' <<<"$stats")"
	echo "object updates: $n" >&3
	[ "$n" -le 20 ] || return 1
	! cat "$DC_DIR"/ctl-*.log | grep -qi forbidden
}
