/*
 * admin.h: the pure parts of kubectl-trainyard's exec, invite/members/
 * remove, upgrade and completion commands, for their unit tests
 * (tests/unit/test_cli_admin.c).
 */
#ifndef TY_CLI_ADMIN_H
#define TY_CLI_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/macro.h>

#include "cli.h"

/* ---- cmd_members.c ------------------------------------------------------ */

#define MEMBER_NAME_MAX	63

/*
 * The ProjectMember name of a subject ('group': a Group, else a User), a
 * DNS-1123 label into buf[MEMBER_NAME_MAX + 1]: the name lowercased when
 * it already is one ("alice"); otherwise every run of other characters
 * becomes one '-', and a short hash of the exact subject makes names of
 * different subjects differ ("alice@example.com" ->
 * "alice-example-com-1a2b3c4d"). Groups are prefixed "group-". -EINVAL
 * for an empty subject.
 */
int	member_name(const char *subject, bool group, char buf[MEMBER_NAME_MAX + 1])
	    _must_check_;

/*
 * --expires: a duration from 'now' ("30d", "720h", "90m"), a date
 * ("2027-03-01", midnight UTC) or an RFC 3339 time. The time into *ret,
 * or -EINVAL (not one of those) or -ERANGE (not after 'now').
 */
int	member_parse_expiry(const char *s, time_t now, time_t *ret) _must_check_;


/* ---- cmd_exec.c --------------------------------------------------------- */

/* The remote command's outcome, from the error channel's Status. */
struct exec_result {
	int	exit_code;		/* 0..255; -1 when the Status is not an exit code */
	char	message[512];		/* the Status's message when it failed otherwise */
	bool	forbidden;		/* the Status is a 403 (reason Forbidden) */
};

/*
 * Decodes the error channel's metav1.Status (v4/v5.channel.k8s.io):
 * Success is exit code 0; Failure with reason NonZeroExitCode carries the
 * code in details.causes[reason=ExitCode].message; any other Failure is
 * exit_code -1 and its message. -EINVAL for bytes that are no Status.
 */
int	exec_parse_status(const char *data, size_t len, struct exec_result *ret)
	    _must_check_;

/* The resize message (channel 4's body): {"Width":W,"Height":H}, its length. */
size_t	exec_resize_msg(unsigned width, unsigned height, char *buf, size_t size);

/*
 * The pods/exec request path with its query (command words, container,
 * stdin, stdout, stderr, tty), percent-encoded, into a new string; NULL
 * on no memory or when longer than 'max'.
 */
char	*exec_path(const char *ns, const char *pod, const char *container,
	    char *const *cmd, size_t ncmd, bool in, bool tty, size_t max) _must_check_;

/* ---- cmd_upgrade.c ------------------------------------------------------ */

#define UPGRADE_VERSIONS_MAX	16

/* What a CRD says of its versions. */
struct crd_versions {
	size_t		 n;
	const char	*name[UPGRADE_VERSIONS_MAX];	/* borrowed from the CRD */
	bool		 served[UPGRADE_VERSIONS_MAX];
	const char	*storage;			/* NULL: none or several */
	size_t		 nstored;			/* status.storedVersions */
	const char	*stored[UPGRADE_VERSIONS_MAX];
};

/* Reads spec.versions and status.storedVersions; -EINVAL when absent or too many. */
int	crd_versions_read(const struct json_object *crd, struct crd_versions *ret)
	    _must_check_;

/*
 * The runbook's next step (docs/upgrade.md) for a CRD in state 'v', in
 * words, into buf.
 */
void	upgrade_next_step(const struct crd_versions *v, char *buf, size_t size);

/* ---- cmd_completion.c --------------------------------------------------- */

/*
 * Writes the completion script for 'shell' ("bash" or "zsh") of the
 * commands 'cmds' (NULL-terminated): their names, the long flags their
 * help texts name, and Run names from "kubectl trainyard list -o name".
 * 0, or -EINVAL for another shell.
 */
int	completion_script(FILE *f, const char *shell, const struct cli_cmd *const *cmds)
	    _must_check_;

/* The command table (main.c), NULL-terminated. */
extern const struct cli_cmd *const *const cli_commands;

#endif
