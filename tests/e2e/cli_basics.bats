#!/usr/bin/env bats
#
# cli_basics.bats: kubectl-trainyard as a kubectl plugin: found on PATH by
# the real kubectl, its help, flags every command takes, errors that say
# what to do, and its exit codes.

load cli

setup_file() {
	cli_setup_file
}

teardown_file() {
	cli_teardown_file
}

@test "kubectl finds the plugin: version prints the plugin's and the server's" {
	run command kubectl trainyard version
	[ "$status" -eq 0 ]
	[[ "$output" == *"Client Version: kubectl-trainyard "* ]]
	[[ "$output" == *"Server Version: v1."* ]]
	kt version -o json | jq -e '.clientVersion and .serverVersion.gitVersion'
	run kt version --client --kubeconfig /nonexistent
	[ "$status" -eq 0 ]
	command kubectl plugin list 2>/dev/null | grep -q kubectl-trainyard
}

@test "help and usage errors: every command lists, unknown flags and commands say what to do" {
	run kt --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Exit codes: 0 success"* ]]
	run kt version --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Examples:"* ]]
	run kt frobnicate
	[ "$status" -eq 5 ]
	[[ "$output" == *'unknown command "frobnicate"; "kubectl trainyard --help" lists them'* ]]
	run kt version --nope
	[ "$status" -eq 5 ]
	[[ "$output" == *"unknown flag --nope; see kubectl trainyard version --help"* ]]
	run kt version --kubeconfig /nonexistent
	[ "$status" -eq 5 ]
	[[ "$output" == *"kubeconfig"* ]]
	run kt -o xml version
	[ "$status" -eq 5 ]
	[[ "$output" == *'--output: "xml" is not one of json, yaml, name, wide'* ]]
}
