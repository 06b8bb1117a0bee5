#!/usr/bin/env bats
#
# ctl_project_quota.bats: Runs admitted against their project's quota, with
# the real kubectl and the controller under its manifests' service account
# (tests/e2e/projects.bash):
#
# - a Run that does not fit waits with no pods (QuotaReserved=False,
#   QuotaExceeded, how much is free), first come first served over all the
#   project's namespaces, and starts once quota frees; the Project's status
#   shows what is held and how many wait;
# - maxGPUsPerRun, the allowed profiles and a demand beyond the whole quota
#   make a Run invalid with the reason; a bigger quota lets it start;
# - a LimitRange gives the requests the quota counts to containers naming
#   none (and the admission counts them); a limit the quota counts must be
#   named;
# - a member's maxGPUs caps what their Runs hold, without holding up others;
# - suspend Hold admits no new session, Drain stops running ones, None
#   resumes them;
# - deletionPolicy.runs Cancel stops a Project's Runs through their cleanup;
# - a removed member's running Runs keep running;
# - after a restart, what each project holds and who waits are rebuilt from
#   the Runs' status;
# - not one request of the controller was refused (403).

load projects

setup_file() {
	projects_setup_file
}

teardown_file() {
	projects_teardown_file
}

teardown() {
	projects_teardown
}

@test "quota: a Run that does not fit waits with no pods, first come first served, and starts when quota frees" {
	project q "resourceProfiles: {allowed: [gpu-8, gpu-2], default: gpu-8}"
	kubectl wait --for=condition=Ready project/q --timeout=$W
	prun q a gpu-8 600
	prun q-eval b gpu-8 600
	quota_wait q a True QuotaReserved
	quota_wait q-eval b True QuotaReserved
	[ "$(kubectl get run a -n q -o jsonpath='{.status.quota.reserved.requests\.nvidia\.com/gpu}')" = 8 ]
	# 16 of 16 GPUs held, over both namespaces: c (the default profile, 8)
	# waits, and d (2 GPUs, submitted after c) waits behind it.
	prun q c "" 600
	quota_wait q c False QuotaExceeded
	prun q d gpu-2 600
	quota_wait q d False QuotaExceeded
	quota q c message | grep -F 'needs 8 requests.nvidia.com/gpu; 0 of 16 are free'
	quota q d message | grep -F 'behind 1 earlier Run (first: q/c)'
	[ "$(kubectl get run c -n q -o jsonpath='{.status.phase}/{.status.reason}')" = \
	    Pending/QuotaExceeded ]
	[ -z "$(pods_of q c)" ]
	[ -z "$(pods_of q d)" ]
	kubectl wait --for=jsonpath='{.status.usage.gpus}'=16/16 project/q --timeout=$W
	kubectl wait --for=jsonpath='{.status.runs.waiting}'=2 project/q --timeout=$W
	[ "$(kubectl get project q -o jsonpath='{.status.runs.active}')" = 2 ]
	# a ends (stopped: a timed end would race the checks above on a busy
	# machine) and is cleaned up: c, first in line, starts; d still waits.
	kubectl patch rn a -n q --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
	kubectl wait -n q --for=jsonpath='{.status.phase}'=Stopped rn/a --timeout=$W
	quota_wait q c True QuotaReserved
	quota_wait q a False Released
	kubectl wait -n q --for=jsonpath='{.status.phase}'=Running rn/c --timeout=$W
	[ "$(quota q d reason)" = QuotaExceeded ]
	[ -z "$(pods_of q d)" ]
	# Deleting b frees 8: d starts.
	kubectl delete run b -n q-eval --wait=false
	quota_wait q d True QuotaReserved
	kubectl wait --for=jsonpath='{.status.usage.gpus}'=10/16 project/q --timeout=$W
	kubectl delete runs --all -n q --wait=false
}

@test "quota: maxGPUsPerRun, allowed profiles, a quota it can never fit: invalid with the reason" {
	project qv "resourceProfiles: {allowed: [gpu-8, gpu-2]}"
	kubectl wait --for=condition=Ready project/qv --timeout=$W
	kubectl apply -n qv -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: big}
spec:
  nodes: 2
  profile: gpu-8
  container: {image: busybox}
EOF
	prun qv cpu cpu-small 600
	kubectl wait -n qv --for=jsonpath='{.status.reason}'=InvalidSpec rn/big rn/cpu --timeout=$W
	kubectl get run big -n qv -o jsonpath='{.status.message}' |
	    grep -F 'the Run asks for 16 GPUs (2 nodes of 8); project qv allows at most 8 per Run'
	kubectl get run cpu -n qv -o jsonpath='{.status.message}' |
	    grep -F 'ResourceProfile "cpu-small" is not allowed in project qv (allowed: gpu-8, gpu-2)'
	[ -z "$(pods_of qv big)$(pods_of qv cpu)" ]
	# More than the whole quota: can never start.
	kubectl patch project qv --type merge -p '{"spec":{"quota":{"hard":{"requests.nvidia.com/gpu":"4"}}}}'
	prun qv eight gpu-8 600
	kubectl wait -n qv --for=jsonpath='{.status.reason}'=InvalidSpec rn/eight --timeout=$W
	kubectl get run eight -n qv -o jsonpath='{.status.message}' |
	    grep -F 'needs 8 requests.nvidia.com/gpu, more than the quota of 4 in project qv'
	# The quota grows: the same Run starts.
	kubectl patch project qv --type merge -p '{"spec":{"quota":{"hard":{"requests.nvidia.com/gpu":"16"}}}}'
	quota_wait qv eight True QuotaReserved
	kubectl delete runs --all -n qv --wait=false
}

@test "quota: a LimitRange gives default requests the quota counts; a limit it counts must be named" {
	PROJECT_QUOTA="{hard: {requests.nvidia.com/gpu: '16', requests.cpu: '2', limits.memory: 64Gi}}" \
	    project ql
	kubectl wait --for=condition=Ready project/ql --timeout=$W
	for ns in ql ql-eval; do
		[ "$(kubectl get limitrange trainyard-project-defaults -n "$ns" \
		    -o jsonpath='{.spec.limits[0].type} {.spec.limits[0].defaultRequest.cpu}')" = \
		    "Container 100m" ]
	done
	# Deleted: it comes back.
	kubectl delete limitrange trainyard-project-defaults -n ql-eval
	kubectl wait -n ql-eval --for=jsonpath='{.spec.limits[0].defaultRequest.cpu}'=100m \
	    limitrange/trainyard-project-defaults --timeout=$W
	# No memory limit, which the quota counts: invalid, with what to do.
	kubectl apply -n ql -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: nolimit}
spec:
  nodes: 1
  container: {image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
EOF
	kubectl wait -n ql --for=jsonpath='{.status.reason}'=InvalidSpec rn/nolimit --timeout=$W
	kubectl get run nolimit -n ql -o jsonpath='{.status.message}' |
	    grep -F "spec.resources.limits[memory]: project ql's quota counts limits.memory"
	# Named, and no cpu request: admitted with the LimitRange's request,
	# which its pods get too.
	kubectl apply -n ql -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: Run
metadata: {name: nocpu}
spec:
  nodes: 2
  container: {image: busybox, resources: {limits: {nvidia.com/gpu: 1, memory: 1Gi}}}
  template:
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
EOF
	quota_wait ql nocpu True QuotaReserved
	[ "$(kubectl get run nocpu -n ql -o jsonpath='{.status.quota.reserved.requests\.cpu}')" = 200m ]
	kubectl wait -n ql --for=jsonpath='{.status.phase}'=Running rn/nocpu --timeout=$W
	[ "$(kubectl get pod nocpu-0 -n ql -o jsonpath='{.spec.containers[0].resources.requests.cpu}')" = 100m ]
	kubectl delete runs --all -n ql --wait=false
}

@test "quota: a member's maxGPUs caps what their Runs hold; others are not held up" {
	project qm
	kubectl wait --for=condition=Ready project/qm --timeout=$W
	kubectl apply -n qm -f - >/dev/null <<EOF
apiVersion: trainyard.dev/v1beta1
kind: ProjectMember
metadata: {name: carol}
spec: {subject: {kind: User, name: carol}, role: researcher, maxGPUs: 8}
EOF
	kubectl wait -n qm --for=condition=Ready projectmember/carol --timeout=$W
	# Without the mutating webhook the annotation is the client's (the
	# webhooks' test shows it cannot be forged once they are installed).
	prun qm c1 gpu-8 600 'trainyard.dev/submitted-by: carol'
	quota_wait qm c1 True QuotaReserved
	prun qm c2 gpu-2 600 'trainyard.dev/submitted-by: carol'
	quota_wait qm c2 False MemberQuotaExceeded
	quota qm c2 message |
	    grep -F "waiting for carol's GPUs in project qm: this Run needs 2, their Runs hold 8 of 8"
	[ -z "$(pods_of qm c2)" ]
	# Someone else's Run, submitted after c2, is not held up behind it.
	prun qm d1 gpu-2 600 'trainyard.dev/submitted-by: dave'
	quota_wait qm d1 True QuotaReserved
	# Asking more than the cap at all: invalid.
	kubectl patch projectmember carol -n qm --type merge -p '{"spec":{"maxGPUs":1}}'
	kubectl delete run c1 -n qm --wait=false
	kubectl wait -n qm --for=jsonpath='{.status.reason}'=InvalidSpec rn/c2 --timeout=$W
	kubectl get run c2 -n qm -o jsonpath='{.status.message}' |
	    grep -F 'the Run asks for 2 GPUs; its submitter carol may hold at most 1 in project qm'
	kubectl delete runs --all -n qm --wait=false
}

@test "suspend: Hold admits no new session, Drain stops running ones, None resumes both" {
	project hold
	kubectl wait --for=condition=Ready project/hold --timeout=$W
	prun hold a gpu-2 600
	kubectl wait -n hold --for=jsonpath='{.status.phase}'=Running rn/a --timeout=$W
	kubectl patch project hold --type merge -p '{"spec":{"suspend":"Hold"}}'
	kubectl wait --for=jsonpath='{.status.phase}'=Suspended project/hold --timeout=$W
	prun hold b gpu-2 600
	quota_wait hold b False ProjectSuspended
	quota hold b message | grep -F 'project hold is suspended (suspend: Hold): no new sessions start'
	[ -z "$(pods_of hold b)" ]
	[ "$(kubectl get run a -n hold -o jsonpath='{.status.phase}')" = Running ]
	kubectl patch project hold --type merge -p '{"spec":{"suspend":"Drain"}}'
	kubectl wait -n hold --for=jsonpath='{.status.reason}'=ProjectSuspended rn/a --timeout=$W
	[ "$(kubectl get run a -n hold -o jsonpath='{.status.phase}')" = Stopped ]
	kubectl wait -n hold --for=delete pod/a-0 --timeout=$W
	quota_wait hold a False ProjectSuspended
	kubectl patch project hold --type merge -p '{"spec":{"suspend":"None"}}'
	kubectl wait -n hold --for=jsonpath='{.status.phase}'=Running rn/a rn/b --timeout=$W
	[ "$(kubectl get run a -n hold -o jsonpath='{.status.session}')" = 2 ]
	kubectl delete runs --all -n hold --wait=false
}

@test "deletionPolicy.runs Cancel: deleting the Project stops its Runs through their cleanup, then goes" {
	project cancel
	kubectl wait --for=condition=Ready project/cancel --timeout=$W
	prun cancel-eval r gpu-2 600
	kubectl wait -n cancel-eval --for=jsonpath='{.status.phase}'=Running rn/r --timeout=$W
	kubectl delete project cancel --wait=false
	kubectl wait -n cancel-eval --for=jsonpath='{.status.reason}'=ProjectDeleted rn/r --timeout=$W
	[ "$(kubectl get run r -n cancel-eval -o jsonpath='{.status.phase}')" = Stopped ]
	kubectl wait --for=delete project/cancel --timeout=$W
	[ -z "$(pods_of cancel-eval r)" ]
	# The namespaces stay (Retain), and so does the Run, for the record.
	kubectl get ns cancel cancel-eval >/dev/null
	kubectl get run r -n cancel-eval >/dev/null
	kubectl delete ns cancel cancel-eval --wait=false
}

@test "a removed member's running Runs keep running" {
	project keep
	kubectl wait --for=condition=Ready project/keep --timeout=$W
	member keep erin erin researcher
	kubectl wait -n keep --for=condition=Ready projectmember/erin --timeout=$W
	prun keep e gpu-2 600 'trainyard.dev/submitted-by: erin'
	kubectl wait -n keep --for=jsonpath='{.status.phase}'=Running rn/e --timeout=$W
	uid="$(kubectl get pod e-0 -n keep -o jsonpath='{.metadata.uid}')"
	kubectl delete projectmember erin -n keep --wait --timeout=$W
	[ "$(can create runs.trainyard.dev -n keep --as erin)" = no ]
	sleep 1
	[ "$(kubectl get run e -n keep -o jsonpath='{.status.phase}/{.status.session}')" = Running/1 ]
	[ "$(kubectl get pod e-0 -n keep -o jsonpath='{.metadata.uid}')" = "$uid" ]
	kubectl delete runs --all -n keep --wait=false
}

@test "quota after a restart: rebuilt from the Runs' status, nothing counted twice or forgotten" {
	project qr
	kubectl wait --for=condition=Ready project/qr --timeout=$W
	prun qr a gpu-8 600
	prun qr-eval b gpu-8 600
	quota_wait qr a True QuotaReserved
	quota_wait qr-eval b True QuotaReserved
	prun qr c gpu-2 600
	quota_wait qr c False QuotaExceeded
	ctl_proc_term p
	# While it is down, c's line and a's reservation stand in their status.
	prun qr d gpu-2 600
	projects_controller p2
	quota_wait qr d False QuotaExceeded
	quota qr d message | grep -F 'behind 1 earlier Run (first: qr/c)'
	[ "$(quota qr c reason)" = QuotaExceeded ]
	[ -z "$(pods_of qr c)$(pods_of qr d)" ]
	kubectl wait --for=jsonpath='{.status.runs.waiting}'=2 project/qr --timeout=$W
	[ "$(kubectl get project qr -o jsonpath='{.status.usage.gpus}')" = 16/16 ]
	[ "$(kubectl get run a -n qr -o jsonpath='{.status.session}')" = 1 ]
	# a goes: c then d start, in that order, within the quota.
	kubectl delete run a -n qr --wait=false
	quota_wait qr c True QuotaReserved
	quota_wait qr d True QuotaReserved
	kubectl wait --for=jsonpath='{.status.usage.gpus}'=12/16 project/qr --timeout=$W
	kubectl delete runs --all -n qr --wait=false
	kubectl delete runs --all -n qr-eval --wait=false
}

@test "not one request of the controller was refused" {
	projects_no_refusals
}

