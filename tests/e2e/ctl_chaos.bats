#!/usr/bin/env bats
#
# ctl_chaos.bats: the chaos suite's short fixed-seed subset (tests/chaos/,
# docs/reliability.md, "Chaos suite"): the controller killed in the middle
# of a session start and of a cleanup, the devcluster killed and restarted
# mid-start, a 503 storm on writes; then every invariant. "make chaos" runs
# all the scenarios.

@test "chaos subset: kills mid-start and mid-cleanup, an API server restart, an error storm" {
	run env CHAOS_SEED=1 "$BATS_TEST_DIRNAME/../chaos/chaos.sh" --quick
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "chaos: scenarios=4 passed=4 failed=0 duplicates=0 orphans=0 stuck=0" ]
}

@test "--exit-after-writes-for-testing wants a positive count" {
	local bin="${TRAINYARD_CONTROLLER:-$BATS_TEST_DIRNAME/../../build/san/bin/trainyard-controller}"
	if [ "${TRAINYARD_E2E_BUILT:-0}" != 1 ]; then
		make -C "$BATS_TEST_DIRNAME/../.." --no-print-directory build/san/bin/trainyard-controller >&2
	fi
	for v in 0 abc -1 18446744073709551616; do
		run "$bin" --exit-after-writes-for-testing "$v" --kubeconfig /nonexistent
		[ "$status" -eq 2 ]
		[ "$output" = "trainyard-controller: --exit-after-writes-for-testing: \"$v\" is not a positive count" ]
	done
}
