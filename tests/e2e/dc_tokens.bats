#!/usr/bin/env bats
# Service-account tokens with the real kubectl: kubectl create token (1.27
# sends JSON, 1.33 protobuf), a kubeconfig holding the token (whoami, RBAC
# naming the SA user), revocation with the service account and the bound
# pod, tokens across a restart with --data-dir, the OIDC discovery
# documents, TokenReview (audiences, user.extra); and kubectl 1.33's protobuf bodies for create quota,
# priorityclass and pdb. Expiry is tested in the unit suite (the shortest
# allowed token lives ten minutes).

load devcluster

K127=/usr/lib/google-cloud-sdk/bin/kubectl.1.27

setup_file() { dc_start --kubernetes-version 1.33; }
teardown_file() { dc_stop; }

# The JSON of segment N (0: header, 1: claims) of a JWT.
jwt_part() {
	local s
	s="$(cut -d. -f$(($2 + 1)) <<<"$1" | tr '_-' '/+')"
	while [ $((${#s} % 4)) -ne 0 ]; do s="$s="; done
	base64 -d <<<"$s"
}

kubectl127() {
	"$K127" --kubeconfig "$KUBECONFIG" --cache-dir "$DC_DIR/cache127" \
	    --request-timeout=20s "$@"
}

@test "kubectl 1.33 create token: a signed JWT for the service account" {
	kubectl create namespace tok
	kubectl -n tok create serviceaccount robot
	uid="$(kubectl -n tok get sa robot -o jsonpath='{.metadata.uid}')"
	t="$(kubectl -n tok create token robot)"
	[ "$(jwt_part "$t" 0 | jq -r .alg)" = RS256 ]
	c="$(jwt_part "$t" 1)"
	[ "$(jq -r .iss <<<"$c")" = https://kubernetes.default.svc.cluster.local ]
	[ "$(jq -r .sub <<<"$c")" = system:serviceaccount:tok:robot ]
	[ "$(jq -c .aud <<<"$c")" = '["https://kubernetes.default.svc.cluster.local"]' ]
	[ "$(jq '.exp - .iat' <<<"$c")" -eq 3600 ]
	[ "$(jq -r '."kubernetes.io".serviceaccount.uid' <<<"$c")" = "$uid" ]
	[ "$(jq -r '."kubernetes.io".namespace' <<<"$c")" = tok ]
}

@test "kubectl 1.27 create token with --duration and --audience" {
	t="$(kubectl127 -n tok create token robot --duration 20m --audience a --audience b)"
	c="$(jwt_part "$t" 1)"
	[ "$(jq '.exp - .iat' <<<"$c")" -eq 1200 ]
	[ "$(jq -c .aud <<<"$c")" = '["a","b"]' ]
	run kubectl -n tok create token robot --duration 5m
	[ "$status" -ne 0 ]
	[[ "$output" == *'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes'* ]]
	run kubectl -n tok create token ghost
	[ "$status" -ne 0 ]
	[[ "$output" == *'serviceaccounts "ghost" not found'* ]]
}

@test "a kubeconfig with the token: whoami, 403 naming the SA, then a RoleBinding" {
	t="$(kubectl -n tok create token robot)"
	kc="$BATS_TEST_TMPDIR/robot.kubeconfig"
	cp "$KUBECONFIG" "$kc"
	kubectl --kubeconfig "$kc" config set-credentials robot --token="$t"
	kubectl --kubeconfig "$kc" config set-context --current --user=robot --namespace=tok
	run kubectl --kubeconfig "$kc" auth whoami -o json
	[ "$status" -eq 0 ]
	[ "$(jq -r .status.userInfo.username <<<"$output")" = system:serviceaccount:tok:robot ]
	[ "$(jq -c .status.userInfo.groups <<<"$output")" = \
	    '["system:serviceaccounts","system:serviceaccounts:tok","system:authenticated"]' ]
	run kubectl --kubeconfig "$kc" get pods
	[ "$status" -ne 0 ]
	[[ "$output" == *'pods is forbidden: User "system:serviceaccount:tok:robot" cannot list resource "pods" in API group "" in the namespace "tok"'* ]]
	kubectl -n tok create rolebinding robot-view --clusterrole=view \
	    --serviceaccount=tok:robot
	run kubectl --kubeconfig "$kc" get pods
	[ "$status" -eq 0 ]
	run kubectl --kubeconfig "$kc" auth can-i list pods
	[ "$output" = yes ]
	run kubectl --kubeconfig "$kc" auth can-i create pods
	[ "$output" = no ]
	# The discovery documents are open to service accounts.
	run kubectl --kubeconfig "$kc" get --raw /.well-known/openid-configuration
	[ "$status" -eq 0 ]
	[ "$(jq -r .issuer <<<"$output")" = https://kubernetes.default.svc.cluster.local ]
}

@test "deleting the bound pod, then the service account, makes tokens 401" {
	kubectl -n tok create serviceaccount bot
	kubectl -n tok run p --image=busybox --restart=Never \
	    --overrides='{"spec":{"serviceAccountName":"bot"}}'
	pt="$(kubectl -n tok create token bot --bound-object-kind Pod --bound-object-name p)"
	st="$(kubectl -n tok create token bot)"
	[ "$(jwt_part "$pt" 1 | jq -r '."kubernetes.io".pod.name')" = p ]
	run kubectl --token="$pt" auth whoami -o jsonpath='{.status.userInfo.username}'
	[ "$output" = system:serviceaccount:tok:bot ]
	kubectl -n tok delete pod p --grace-period=0 --force
	kubectl -n tok wait --for=delete pod/p --timeout=20s
	run kubectl --token="$pt" auth whoami
	[ "$status" -ne 0 ]
	[[ "$output" == *Unauthorized* ]]
	run kubectl --token="$st" auth whoami -o jsonpath='{.status.userInfo.username}'
	[ "$output" = system:serviceaccount:tok:bot ]
	kubectl -n tok delete serviceaccount bot
	run kubectl --token="$st" auth whoami
	[ "$status" -ne 0 ]
	[[ "$output" == *Unauthorized* ]]
	# A new service account of the same name does not revive it.
	kubectl -n tok create serviceaccount bot
	run kubectl --token="$st" get --raw /api
	[ "$status" -ne 0 ]
	# Garbage is 401 too, and the server keeps serving.
	run kubectl --token="eyJhbGciOiJSUzI1NiJ9.e30.AAAA" get --raw /api
	[ "$status" -ne 0 ]
	[[ "$output" == *Unauthorized* ]]
	kubectl get --raw /readyz
}

@test "OIDC discovery: the issuer's configuration and its key set" {
	t="$(kubectl -n tok create token robot)"
	cfg="$(kubectl get --raw /.well-known/openid-configuration)"
	[ "$(jq -r .issuer <<<"$cfg")" = https://kubernetes.default.svc.cluster.local ]
	[[ "$(jq -r .jwks_uri <<<"$cfg")" == https://127.0.0.1:*/openid/v1/jwks ]]
	[ "$(jq -c .id_token_signing_alg_values_supported <<<"$cfg")" = '["RS256"]' ]
	keys="$(kubectl get --raw /openid/v1/jwks)"
	[ "$(jq -r '.keys[0].kid' <<<"$keys")" = "$(jwt_part "$t" 0 | jq -r .kid)" ]
	[ "$(jq -r '.keys[0].kty + " " + .keys[0].alg + " " + .keys[0].e' <<<"$keys")" = \
	    "RSA RS256 AQAB" ]
	run kubectl get clusterrolebinding system:service-account-issuer-discovery \
	    -o jsonpath='{.subjects[0].name}'
	[ "$output" = system:serviceaccounts ]
}

@test "a service-account-token Secret gets a legacy token, ca.crt and namespace" {
	kubectl -n tok apply -f - <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: robot-secret
  annotations: {kubernetes.io/service-account.name: robot}
type: kubernetes.io/service-account-token
YAML
	t="$(kubectl -n tok get secret robot-secret -o jsonpath='{.data.token}' | base64 -d)"
	[ "$(jwt_part "$t" 1 | jq -r .iss)" = kubernetes/serviceaccount ]
	[ "$(kubectl -n tok get secret robot-secret -o jsonpath='{.data.namespace}' |
	    base64 -d)" = tok ]
	[ "$(kubectl -n tok get secret robot-secret -o jsonpath='{.data.ca\.crt}')" = \
	    "$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')" ]
	run kubectl --token="$t" auth whoami -o jsonpath='{.status.userInfo.username}'
	[ "$output" = system:serviceaccount:tok:robot ]
	kubectl -n tok delete secret robot-secret
	run kubectl --token="$t" get --raw /api
	[ "$status" -ne 0 ]
	[[ "$output" == *Unauthorized* ]]
}

@test "kubectl 1.33 create quota, priorityclass and pdb (protobuf bodies)" {
	kubectl -n tok create quota q --hard=pods=4,requests.nvidia.com/gpu=8 --scopes=NotBestEffort
	run kubectl -n tok get quota q -o jsonpath='{.spec.hard.pods} {.spec.scopes[0]}'
	[ "$output" = "4 NotBestEffort" ]
	kubectl create priorityclass urgent --value=100000 --description="for tests" \
	    --preemption-policy=Never
	run kubectl get priorityclass urgent -o jsonpath='{.value} {.description} {.preemptionPolicy}'
	[ "$output" = "100000 for tests Never" ]
	kubectl create priorityclass below --value=-10
	run kubectl get priorityclass below -o jsonpath='{.value}'
	[ "$output" = "-10" ]
	if kubectl api-resources --api-group=policy -o name | grep -qx poddisruptionbudgets.policy
	then
		kubectl -n tok create pdb budget --selector=app=x --min-available=50%
		run kubectl -n tok get pdb budget -o jsonpath='{.spec.minAvailable}'
		[ "$output" = "50%" ]
	fi
}

@test "kubectl 1.33 create service: every type (protobuf bodies); a node port held once" {
	kubectl -n tok create service clusterip web --tcp=80:8080
	run kubectl -n tok get svc web -o jsonpath='{.spec.type} {.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.selector.app} {.metadata.managedFields[0].manager}'
	[ "$output" = "ClusterIP 80-8080 80 8080 web kubectl-create" ]
	kubectl -n tok create service clusterip headless --clusterip=None
	[ "$(kubectl -n tok get svc headless -o jsonpath='{.spec.clusterIP}')" = None ]
	kubectl -n tok create service nodeport np --tcp=5678:8080 --node-port=30080
	[ "$(kubectl -n tok get svc np -o jsonpath='{.spec.type} {.spec.ports[0].nodePort}')" = \
	    "NodePort 30080" ]
	run kubectl -n tok create service nodeport np2 --tcp=81:8080 --node-port=30080
	[ "$status" -ne 0 ]
	[[ "$output" == *'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated'* ]]
	kubectl -n tok create service loadbalancer lb --tcp=80:8080,443:8443
	run kubectl -n tok get svc lb -o jsonpath='{.spec.type} {.spec.ports[*].port} {.spec.ports[*].targetPort}'
	[ "$output" = "LoadBalancer 80 443 8080 8443" ]
	kubectl -n tok create service externalname ext --external-name=example.com
	[ "$(kubectl -n tok get svc ext -o jsonpath='{.spec.type} {.spec.externalName}')" = \
	    "ExternalName example.com" ]
	run kubectl -n tok create service clusterip web --tcp=80:8080
	[ "$status" -ne 0 ]
	[[ "$output" == *'services "web" already exists'* ]]
}

@test "--data-dir: tokens survive a restart (sa.key, mode 0600)" {
	dc_start_extra P --kubernetes-version 1.33
	[ "$(stat -c %a "$P/data/sa.key")" = 600 ]
	kubectl_at "$P" create serviceaccount keeper
	t="$(kubectl_at "$P" create token keeper)"
	pid="$(cat "$P/pid")"
	kill -TERM "$pid"
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	rm -f "$P/kubeconfig"
	_dc_launch "$P" --kubernetes-version 1.33
	run kubectl_at "$P" --token="$t" auth whoami -o jsonpath='{.status.userInfo.username}'
	[ "$status" -eq 0 ]
	[ "$output" = system:serviceaccount:default:keeper ]
	dc_stop_extra "$P"
}

@test "TokenReview: audiences meet the token's; a pod-bound token's extra, in whoami too" {
	kubectl get namespace tok >/dev/null 2>&1 || kubectl create namespace tok
	kubectl -n tok create serviceaccount rev
	kubectl -n tok run rp --image=busybox --restart=Never \
	    --overrides='{"spec":{"serviceAccountName":"rev"}}'
	t="$(kubectl -n tok create token rev --audience metrics --bound-object-kind Pod \
	    --bound-object-name rp)"
	review() {
		kubectl create -o json -f - <<JSON
{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
 "spec": {"token": "$1"$2}}
JSON
	}
	run review "$t" ', "audiences": ["x", "metrics"]'
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r .status.authenticated)" = true ]
	[ "$(echo "$output" | jq -c .status.audiences)" = '["metrics"]' ]
	[ "$(echo "$output" | jq -r '.status.user.extra["authentication.kubernetes.io/pod-name"][0]')" = rp ]
	uid="$(kubectl -n tok get pod rp -o jsonpath='{.metadata.uid}')"
	[ "$(echo "$output" | jq -r '.status.user.extra["authentication.kubernetes.io/pod-uid"][0]')" = "$uid" ]
	[[ "$(echo "$output" | jq -r '.status.user.extra["authentication.kubernetes.io/credential-id"][0]')" == JTI=* ]]
	# Not asked for metrics: not authenticated, with upstream's reason.
	run review "$t" ''
	[ "$(echo "$output" | jq -r .status.authenticated)" = false ]
	[ "$(echo "$output" | jq -r .status.error)" = 'token audiences ["metrics"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]' ]
	# kubectl auth whoami shows the same extra.
	t="$(kubectl -n tok create token rev --bound-object-kind Pod --bound-object-name rp)"
	run kubectl --token="$t" auth whoami -o json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '.status.userInfo.extra["authentication.kubernetes.io/pod-name"][0]')" = rp ]
	kubectl -n tok delete pod rp --grace-period=0 --force
}
