#!/usr/bin/env bats
#
# py_client.bats: the official Python client (Debian's python3-kubernetes)
# against a trainyard-devcluster, through tests/e2e/python/test_client.py:
# kubeconfig loading, list paging, query parameters, watch, the four patch
# types, delete propagation, pod logs, exec over a websocket, Runs through
# CustomObjectsApi and DynamicClient. One devcluster and one run of the
# script (a Python start costs more than most checks); each test reports
# one check's line of it. Skipped, with a message, where no python3 can
# import kubernetes.

load devcluster

# The first python3 that imports kubernetes: the one on PATH, else
# Debian's (a pyenv or virtualenv python3 does not see dist-packages).
py_find() {
	local py
	for py in python3 /usr/bin/python3; do
		if "$py" -c 'import kubernetes' 2>/dev/null; then
			command -v "$py"
			return 0
		fi
	done
	return 1
}

setup_file() {
	PY="$(py_find)" || PY=""
	export PY
	[ -n "$PY" ] || return 0
	dc_start --nodes "$DC_REPO/tests/fixtures/devcluster/kubelet-nodes.yaml" \
	    --pod-start-delay 50ms
	PY_OUT="$BATS_FILE_TMPDIR/checks"
	export PY_OUT
	PYTHONDONTWRITEBYTECODE=1 CRDS_DIR="$DC_REPO/crds" timeout 120 "$PY" \
	    "$DC_REPO/tests/e2e/python/test_client.py" >"$PY_OUT" 2>&1 || true
}

teardown_file() {
	[ -z "$PY" ] || dc_stop
}

setup() {
	[ -n "$PY" ] || skip "python3-kubernetes is not installed (scripts/deps.txt)"
}

# check NAME: the check passed; its output (a traceback) otherwise.
check() {
	if ! grep -q "^ok $1 " "$PY_OUT"; then
		sed -n "/^FAIL $1: /,/^\(ok\|FAIL\) /p" "$PY_OUT"
		grep -q "^\(ok\|FAIL\) $1[: ]" "$PY_OUT" || { echo "no result for $1:"; cat "$PY_OUT"; }
		return 1
	fi
}

@test "python: kubeconfig, version, namespaces" { check config_and_version; }
@test "python: list with limit and continue" { check list_paging; }
@test "python: query parameters as apimachinery converts them" { check query_parameters; }
@test "python: Watch().stream with resourceVersion and timeoutSeconds" { check watch_stream; }
@test "python: watch bookmarks and a future resourceVersion" { check watch_bookmarks_and_expiry; }
@test "python: JSON, merge, strategic merge patch and apply" { check patch_types; }
@test "python: delete with Orphan, Background, Foreground" { check delete_propagation; }
@test "python: pod logs, tail_lines, timestamps, follow" { check pod_logs; }
@test "python: exec over a websocket (kubernetes.stream)" { check exec; }
@test "python: Runs through CustomObjectsApi, status subresource" { check custom_objects; }
@test "python: DynamicClient discovery, utils.create_from_dict" { check dynamic_client; }
@test "python: every check ran, none failed" {
	cat "$PY_OUT"
	! grep -q '^FAIL ' "$PY_OUT"
	[ "$(grep -c '^ok ' "$PY_OUT")" -eq 11 ]
}
