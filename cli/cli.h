/*
 * cli.h: kubectl-trainyard, the kubectl plugin of Trainyard (docs/cli.md).
 *
 * kubectl finds "kubectl-trainyard" on PATH and runs it with every
 * argument after "trainyard". main.c holds the command table; each command
 * is a cmd_<name>.c with a struct cli_cmd. A command parses its arguments
 * with cli_parse(), which also takes the flags every command has (the
 * kubeconfig, context, namespace, impersonation, -o, --help), then calls
 * cli_connect() when it needs the cluster.
 *
 * Exit codes (stable, docs/cli.md): 0 success (a Run that Succeeded, or
 * started for "wait --for start"), 1 the Run Failed, 2 it was Stopped,
 * 3 a timeout, 4 no such Run (or it was deleted), 5 anything else (usage,
 * permission, connection): the message on stderr says what to do.
 */
#ifndef TY_CLI_H
#define TY_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/err.h>
#include <kc/kubeconfig.h>
#include <kc/macro.h>

enum cli_exit {
	CLI_OK = 0,
	CLI_FAILED = 1,
	CLI_STOPPED = 2,
	CLI_TIMEOUT = 3,
	CLI_NOT_FOUND = 4,
	CLI_ERROR = 5,
};

#define CLI_AS_GROUPS_MAX	32

struct cli {
	const char		*prog;		/* "kubectl trainyard" */
	/* The flags every command takes. */
	const char		*kubeconfig;	/* --kubeconfig */
	const char		*context;	/* --context */
	const char		*ns_flag;	/* -n, --namespace */
	bool			 all_ns;	/* -A, --all-namespaces */
	const char		*as;		/* --as */
	const char		*as_groups[CLI_AS_GROUPS_MAX + 1];	/* --as-group */
	size_t			 nas_groups;
	const char		*output;	/* -o: "" (for people), json, yaml, name, wide */
	uint64_t		 request_timeout_ms;	/* --request-timeout; 0: 60 s */
	/* After cli_connect(). */
	struct kc_rest_config	*rc;
	struct kc_client	*cl;
	const char		*ns;		/* -n, else the context's namespace */
	bool			 color;		/* stdout is a terminal and NO_COLOR unset */
};

struct cli_cmd {
	const char	*name;
	const char	*summary;	/* one line for the command list */
	const char	*help;		/* --help: usage, flags, examples */
	int		(*run)(struct cli *, int argc, char **argv);
};

/* A command's own flags, for cli_parse(). */
enum cli_flag_type {
	CLI_FLAG_BOOL,		/* bool *: --flag sets true */
	CLI_FLAG_STR,		/* const char **: --flag VALUE */
	CLI_FLAG_INT,		/* int64_t *: a non-negative integer */
	CLI_FLAG_DURATION,	/* uint64_t * (ms): a Go duration, or a number of days ("30d") */
	CLI_FLAG_LIST,		/* struct cli_list *: repeatable --flag VALUE */
};

#define CLI_LIST_MAX	64

struct cli_list {
	const char	*v[CLI_LIST_MAX];
	size_t		 n;
};

struct cli_flag {
	const char		*name;		/* "node" for --node */
	char			 short_name;	/* 'f' for -f, or 0 */
	enum cli_flag_type	 type;
	void			*dst;
	bool			*seen;		/* set when given; may be NULL */
};

/*
 * Parses argv (argv[0] is the command's name) with the global flags and
 * 'flags' (terminated by a zeroed entry): flags anywhere, "--" ends them.
 * The positional arguments are moved to the front of argv + 1 and counted
 * in *ret_nargs; *ret_dashdash is the index among them of the first one
 * after "--" (== *ret_nargs without "--"). --help prints cmd->help and
 * gives CLI_OK through *ret_done. CLI_OK to go on, or CLI_ERROR with the
 * message printed ("unknown flag --nodes; see kubectl trainyard logs --help").
 */
int	cli_parse(struct cli *, const struct cli_cmd *cmd, const struct cli_flag *flags,
	    int argc, char **argv, int *ret_nargs, int *ret_dashdash, bool *ret_done)
	    _must_check_;

/* Loads the rest config (kubeconfig, context, --as) and makes the client: CLI_OK or CLI_ERROR. */
int	cli_connect(struct cli *) _must_check_;
void	cli_release(struct cli *);

/* "error: <what>" on stderr; returns CLI_ERROR. */
int	cli_error(struct cli *, const char *fmt, ...) _printf_(2, 3);

/*
 * The error of a failed API call in words, with what to do, on stderr:
 * NotFound names what was looked for and where, Forbidden the verb and
 * resource as "kubectl auth can-i" puts it, a connection failure the
 * server. 'what' is "get run llama" (the verb and the object). Returns
 * CLI_NOT_FOUND for NotFound, else CLI_ERROR.
 */
int	cli_api_error(struct cli *, const char *what, int r, const struct kc_status *st);

/* The Run resource (trainyard.dev/v1beta1). */
extern const struct kc_resource cli_res_runs;

/*
 * The Run 'name' of cli->ns into *ret: CLI_OK, or the error printed
 * (CLI_NOT_FOUND: "run "x" not found in namespace y").
 */
int	cli_get_run(struct cli *, const char *name, struct json_object **ret) _must_check_;

/* Prints 'obj' as -o asks: json, yaml or name ("run.trainyard.dev/x"). CLI_OK or CLI_ERROR. */
int	cli_print_object(struct cli *, const struct json_object *obj, const char *kind_res);

/*
 * The exit code of a Run's last session from its status.phase: CLI_OK
 * (Succeeded), CLI_FAILED, CLI_STOPPED, or -1 while it has not ended
 * (Pending, Running, no status yet). NULL is -1.
 */
int	cli_run_result(const struct json_object *run);

/* The commands (main.c's table). */
extern const struct cli_cmd cli_cmd_version;
/* logs, submit, run (cmd_logs.c, cmd_submit.c) */
extern const struct cli_cmd cli_cmd_logs;
extern const struct cli_cmd cli_cmd_submit;
extern const struct cli_cmd cli_cmd_run;
/* wait, stop, resume, restart, describe, list (cmd_wait.c, cmd_control.c, ...) */
extern const struct cli_cmd cli_cmd_wait;
extern const struct cli_cmd cli_cmd_stop;
extern const struct cli_cmd cli_cmd_resume;
extern const struct cli_cmd cli_cmd_restart;
extern const struct cli_cmd cli_cmd_describe;
extern const struct cli_cmd cli_cmd_list;
/* cli-admin: exec, project members, upgrade, completion */
extern const struct cli_cmd cli_cmd_exec;
extern const struct cli_cmd cli_cmd_invite;
extern const struct cli_cmd cli_cmd_members;
extern const struct cli_cmd cli_cmd_remove;
extern const struct cli_cmd cli_cmd_upgrade;
extern const struct cli_cmd cli_cmd_completion;

#endif
