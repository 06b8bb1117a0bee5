#!/usr/bin/env bats
#
# cli_admin.bats: kubectl trainyard exec (pods/exec over WebSocket into a
# node's pod, the remote exit code, stdin), invite/members/remove as a
# project admin and as a researcher (impersonation), upgrade check and
# migrate, completion scripts and the controller's version, all through
# the real kubectl. The setup is the Projects suites' (the controller under
# its service account, the project roles), plus the plugin on PATH.

load cli
load projects

bats_require_minimum_version 1.5.0

setup_file() {
	projects_setup_file || return 1
	cli_build
}

teardown_file() {
	projects_teardown_file
}

setup() {
	ctl_ns
}

teardown() {
	projects_teardown
}

@test "exec runs a command on node 2 and returns its exit code; stdin with -i" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: ex}
spec:
  nodes: 3
  profile: cpu-small
  container: {image: busybox}
  template:
    metadata:
      annotations: {devcluster.trainyard.dev/run-seconds: "120"}
EOF
	# exec waits for the pod to run instead of failing.
	run kt exec ex --node 2 -n "$NS" -- hostname
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = ex-2 ]
	run kt exec ex -n "$NS" --node 2 -- printenv TRAINYARD_NODE_INDEX
	[ "$status" -eq 0 ]
	[ "$output" = 2 ]
	run kt exec ex --node 2 -n "$NS" -- sh -c 'exit 3'
	[ "$status" -eq 3 ]
	[ "$output" = "command terminated with exit code 3" ]
	run kt exec ex -n "$NS" -- false
	[ "$status" -eq 1 ]
	run bash -c "printf 'one\ntwo\n' | kubectl trainyard exec ex -i --node 1 -n $NS -- cat"
	[ "$status" -eq 0 ]
	[ "$output" = "one
two" ]
	# -it without a terminal: a warning, then as -i.
	run bash -c "echo hi | kubectl trainyard exec ex -it -n $NS -- cat"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Unable to use a TTY"* ]]
	[ "${lines[-1]}" = hi ]
	# -it on a terminal (script(1) gives it one): raw mode, the exit code still comes.
	run script -qec "kubectl trainyard exec ex -it -n $NS --node 2 -- hostname" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *ex-2* ]]
	run script -qec "kubectl trainyard exec ex -it -n $NS -- sh -c 'exit 4'" /dev/null
	[ "$status" -eq 4 ]
	# The runtime's error for a program that is not there, in words.
	run kt exec ex -n "$NS" -- nope
	[ "$status" -eq 5 ]
	[[ "$output" == *'executable file not found in $PATH'* ]]
}

@test "exec: errors in words: no such Run, a node it does not have, no command" {
	run kt exec missing -n "$NS" -- hostname
	[ "$status" -eq 4 ]
	[[ "$output" == *"run \"missing\" not found in namespace $NS"* ]]
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: two}
spec: {nodes: 2, profile: cpu-small, container: {image: busybox}}
EOF
	run kt exec two --node 5 -n "$NS" -- hostname
	[ "$status" -eq 5 ]
	[[ "$output" == *"--node 5: run two has 2 nodes (0 to 1)"* ]]
	run kt exec two -n "$NS" hostname
	[ "$status" -eq 5 ]
	[[ "$output" == *'the command after "--"'* ]]
	run kt exec two -n "$NS" -c sidecar --pod-running-timeout 2s -- hostname
	[ "$status" -eq 3 ]
	[[ "$output" == *"--pod-running-timeout"* ]]
}

@test "invite, members and remove as a project admin; a researcher is told what is not allowed" {
	project adm
	kubectl wait --for=condition=Ready project/adm --timeout=$W
	admin=(--as ann --as-group adm-leads)
	run kt invite alice --role researcher --expires 30d --max-gpus 8 -n adm "${admin[@]}"
	[ "$status" -eq 0 ]
	[[ "$output" == "projectmember.trainyard.dev/alice created: user alice is a researcher in the project of namespace adm until "*", at most 8 GPUs" ]]
	[ "$(pm adm alice '{.spec.subject.kind}/{.spec.subject.name}/{.spec.role}/{.spec.maxGPUs}')" = User/alice/researcher/8 ]
	exp="$(pm adm alice '{.spec.expiresAt}')"
	[ "$(( $(date -d "$exp" +%s) - $(date +%s) ))" -gt $(( 29 * 86400 )) ]
	run kt invite bob@example.com --role viewer -n adm "${admin[@]}" -o name
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^projectmember.trainyard.dev/bob-example-com-[0-9a-f]{8}$ ]]
	run kt invite interns --group --role viewer --expires 2099-01-01 -n adm "${admin[@]}"
	[ "$status" -eq 0 ]
	[ "$(pm adm group-interns '{.spec.subject.kind} {.spec.expiresAt}')" = "Group 2099-01-01T00:00:00Z" ]
	run kt invite alice --role admin -n adm "${admin[@]}"
	[ "$status" -eq 5 ]
	[[ "$output" == *"alice is already a member of the project in namespace adm"* ]]
	run kt invite carol --role boss -n adm "${admin[@]}"
	[ "$status" -eq 5 ]
	[[ "$output" == *"--role: one of researcher, viewer, admin"* ]]
	run kt invite carol --role viewer --expires yesterday -n adm "${admin[@]}"
	[ "$status" -eq 5 ]
	kubectl wait -n adm --for=condition=Ready projectmember/alice --timeout=$W
	run kt members -n adm "${admin[@]}"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^NAME\ +SUBJECT\ +ROLE\ +READY\ +EXPIRES\ +INVITED-BY\ +AGE$ ]]
	echo "$output" | grep -E '^alice +alice +researcher +True +20[0-9-]+T[0-9:]+Z +'
	echo "$output" | grep -E '^group-interns +Group/interns +viewer '
	[ "${#lines[@]}" -eq 4 ]
	# A researcher: reads members, may not invite or remove; told which verb on what.
	kubectl wait -n adm --for=condition=Ready projectmember/alice --timeout=$W
	run kt members -n adm --as alice
	[ "$status" -eq 0 ]
	run kt invite mallory --role admin -n adm --as alice
	[ "$status" -eq 5 ]
	[[ "$output" == *"create projectmembers.trainyard.dev mallory: not allowed"* ]]
	[[ "$output" == *'User "alice" cannot create resource "projectmembers" in API group "trainyard.dev" in the namespace "adm"'* ]]
	[[ "$output" == *"ask your project admin"* ]]
	run kt remove interns --group -n adm --as alice
	[ "$status" -eq 5 ]
	[[ "$output" == *'cannot delete resource "projectmembers"'* ]]
	# The admin removes by subject, as invited.
	run kt remove bob@example.com -n adm "${admin[@]}"
	[ "$status" -eq 0 ]
	[[ "$output" == "projectmember.trainyard.dev/bob-example-com-"*" deleted: user bob@example.com is no longer a member of the project of namespace adm" ]]
	run kt remove bob@example.com -n adm "${admin[@]}"
	[ "$status" -eq 4 ]
	[[ "$output" == *"user bob@example.com is not a member in namespace adm"* ]]
	kt remove interns --group -n adm "${admin[@]}"
	run kt members -n adm -o name "${admin[@]}"
	[ "$output" = "projectmember.trainyard.dev/alice" ]
}

@test "exec as project members (impersonation on the WebSocket): a researcher may, a viewer may not" {
	project ex
	kubectl wait --for=condition=Ready project/ex --timeout=$W
	member ex rita rita researcher
	member ex vic vic viewer
	kubectl wait -n ex --for=condition=Ready projectmember/rita projectmember/vic --timeout=$W
	prun ex pr cpu-small 120
	run kt exec pr -n ex --as rita -- hostname
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = pr-0 ]
	run kt exec pr -n ex --as vic -- hostname
	[ "$status" -eq 5 ]
	[[ "$output" == *'exec into pod pr-0: not allowed: pods "pr-0" is forbidden: User "vic" cannot create resource "pods/exec" in API group "" in the namespace "ex"'* ]]
	[[ "$output" == *'kubectl auth can-i create pods --subresource=exec -n ex'* ]]
}

@test "upgrade check prints the served and stored versions, counts, and the next step" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: conv}
spec: {nodes: 1, profile: cpu-small, container: {image: busybox}, suspend: true}
EOF
	run kt upgrade check
	[ "$status" -eq 0 ]
	echo "$output" | grep -Fx "runs.trainyard.dev"
	echo "$output" | grep -Fx "  versions:       v1beta1 (served, storage), v1alpha1 (served)"
	echo "$output" | grep -Fx "  storedVersions: [v1beta1]"
	echo "$output" | grep -Fx "  conversion:     Webhook"
	echo "$output" | grep -E '^  read at v1alpha1: ok, [0-9]+ objects?$'
	echo "$output" | grep -Fx "  webhook:        answers (objects read at every served version)"
	echo "$output" | grep -E '^  next step:      step 6: '
	echo "$output" | grep -Fx "projectmembers.trainyard.dev"
	run kt upgrade check -o json
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.crds[] | select(.name == "runs.trainyard.dev") |
	    .storageVersion == "v1beta1" and .storedVersions == ["v1beta1"] and
	    (.served | index("v1alpha1")) != null and .reads.v1alpha1.ok'
	echo "$output" | jq -e '.crds[] | select(.name == "resourceprofiles.trainyard.dev") |
	    .objects > 0'
	# The webhook down (its Endpoints at a closed port): reads at v1alpha1 fail, and say so.
	port="$(grep -o 'conversion webhook on port [0-9]*' "$DC_DIR/ctl-p.log" | tail -1 |
	    awk '{print $NF}')"
	ctl_webhook_endpoints 1
	run kt upgrade check
	ctl_webhook_endpoints "$port"
	[ "$status" -eq 5 ]
	echo "$output" | grep -E '^  read at v1alpha1: FAILED: .*conversion webhook'
	echo "$output" | grep -F "  webhook:        NOT ANSWERING"
	run kt upgrade frob
	[ "$status" -eq 5 ]
	[[ "$output" == *"upgrade takes check or migrate"* ]]
}

@test "upgrade migrate rewrites every object and trims storedVersions" {
	ctl_apply <<'EOF'
apiVersion: trainyard.dev/v1alpha1
kind: Run
metadata: {name: old}
spec: {nodes: 1, profile: cpu-small, image: busybox, suspend: true}
EOF
	# As after step 4 of the runbook: both versions recorded as stored.
	kubectl patch crd runs.trainyard.dev --subresource=status --type=merge \
	    -p '{"status":{"storedVersions":["v1alpha1","v1beta1"]}}'
	run kt upgrade check
	echo "$output" | grep -E '^  next step:      step 5: '
	run kt upgrade migrate --dry-run
	[ "$status" -eq 0 ]
	[[ "$output" == *"runs.trainyard.dev: status.storedVersions would be [v1beta1]"* ]]
	[ "$(kubectl get crd runs.trainyard.dev -o jsonpath='{.status.storedVersions}')" = '["v1alpha1","v1beta1"]' ]
	rv="$(rn old '{.metadata.resourceVersion}')"
	run kt upgrade migrate
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^runs.trainyard.dev: [1-9][0-9]* rewritten, 0 skipped \(gone\), 0 failed$'
	echo "$output" | grep -Fx "runs.trainyard.dev: status.storedVersions set to [v1beta1]"
	echo "$output" | grep -Fx "every object is stored at its storage version"
	[ "$(kubectl get crd runs.trainyard.dev -o jsonpath='{.status.storedVersions}')" = '["v1beta1"]' ]
	[ "$(rn old '{.metadata.resourceVersion}')" != "$rv" ]
	# As a researcher: not allowed, in words.
	run kt upgrade migrate --as alice
	[ "$status" -eq 5 ]
	[[ "$output" == *"not allowed"* ]]
}

@test "completion scripts load in bash; version prints the controller's" {
	run bash -c 'source <(kubectl trainyard completion bash) && complete -p kubectl'
	[ "$status" -eq 0 ]
	[ "$output" = "complete -o default -F _kubectl_trainyard_wrap kubectl" ]
	run bash -c 'source <(kubectl trainyard completion bash)
	    COMP_WORDS=(kubectl trainyard inv); COMP_CWORD=2; _kubectl_trainyard_wrap
	    echo "${COMPREPLY[*]}"
	    COMP_WORDS=(kubectl trainyard invite bob --ro); COMP_CWORD=4; _kubectl_trainyard_wrap
	    echo "${COMPREPLY[*]}"
	    COMP_WORDS=(kubectl trainyard upgrade ""); COMP_CWORD=3; _kubectl_trainyard_wrap
	    echo "${COMPREPLY[*]}"'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = invite ]
	[ "${lines[1]}" = --role ]
	[ "${lines[2]}" = "check migrate" ]
	run kt completion zsh
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "#compdef kubectl-trainyard" ]
	run kt completion fish
	[ "$status" -eq 5 ]
	# The controller runs on the host here: no Deployment, so "unknown".
	run kt version
	[ "$status" -eq 0 ]
	echo "$output" | grep -Fx "Controller Version: unknown (no Deployment trainyard-system/trainyard-controller)"
	kubectl apply -f "$DC_REPO/manifests/deployment.yaml" >/dev/null
	run kt version -o json
	[ "$(echo "$output" | jq -r .controllerVersion)" = 0.1.0-dev ]
	kubectl label deployment trainyard-controller -n trainyard-system \
	    app.kubernetes.io/version=1.2.3
	run kt version
	echo "$output" | grep -E '^Controller Version: 1\.2\.3 \(Deployment trainyard-system/trainyard-controller, [0-9]+/2 ready\)$'
	kubectl delete -f "$DC_REPO/manifests/deployment.yaml" >/dev/null
}
