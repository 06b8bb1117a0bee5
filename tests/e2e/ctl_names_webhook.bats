#!/usr/bin/env bats
#
# ctl_names_webhook.bats: in a project's namespace, the validating webhook
# refuses at kubectl apply time a new Run whose Service or NetworkPolicy
# name the controller's caches show held by someone else's object; what
# the caches do not hold (objects without Trainyard's managed-by label)
# the controller still finds at create time (NameConflict).

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

@test "the webhook refuses a Run whose Service name a cached foreign Service holds" {
	project nw
	kubectl wait --for=condition=Ready project/nw --timeout=$W
	# Labelled as Trainyard labels its objects (so cached), but another Run's name.
	kubectl apply -n nw -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app.kubernetes.io/managed-by: trainyard, trainyard.dev/run: other}
spec:
  ports: [{port: 80}]
EOF2
	kubectl apply -n nw -f - >/dev/null <<'EOF2'
apiVersion: v1
kind: Service
metadata: {name: plain}
spec:
  ports: [{port: 80}]
EOF2
	kubectl apply -f "$DC_REPO/manifests/webhooks.yaml" >/dev/null
	kubectl wait --for=jsonpath='{.webhooks[0].clientConfig.caBundle}' --timeout=$W \
	    validatingwebhookconfiguration/trainyard-projects >/dev/null
	run prun nw web gpu-2 30
	[ "$status" -ne 0 ]
	[[ "$output" == *'admission webhook "policy.projects.trainyard.dev" denied the request: metadata.name: service nw/web exists and is not owned by a Run named web'* ]]
	run kubectl get rn web -n nw
	[ "$status" -ne 0 ]
	# Not cached: admitted, and the controller says it at create time.
	prun nw plain gpu-2 30
	kubectl wait -n nw --for=jsonpath='{.status.reason}'=NameConflict rn/plain \
	    --timeout=$W >/dev/null
	[ "$(kubectl get rn plain -n nw -o jsonpath='{.status.message}')" = \
	    "service nw/plain exists and is not owned by this Run" ]
	# A free name passes.
	prun nw free gpu-2 30
	kubectl delete -f "$DC_REPO/manifests/webhooks.yaml" >/dev/null
	kubectl delete project nw --wait --timeout=$W >/dev/null
}
