/*
 * common.c: what every kubectl-trainyard command shares (cli.h): the
 * flags, the connection, errors in words, the Run, -o output.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "cli.h"
#include "ops.h"

const struct kc_resource cli_res_runs = {
	.group = "trainyard.dev",
	.version = "v1beta1",
	.resource = "runs",
	.kind = "Run",
	.namespaced = true,
};

int
cli_error(struct cli *c, const char *fmt, ...)
{
	va_list ap;

	(void)c;
	(void)fputs("error: ", stderr);
	va_start(ap, fmt);
	(void)vfprintf(stderr, fmt, ap);
	va_end(ap);
	(void)fputc('\n', stderr);
	return CLI_ERROR;
}

/* ---- flags ------------------------------------------------------------ */

enum global_flag {
	G_KUBECONFIG = 1, G_CONTEXT, G_NAMESPACE, G_ALL_NS, G_AS, G_AS_GROUP, G_OUTPUT,
	G_REQUEST_TIMEOUT, G_HELP,
};

static const struct {
	const char	*name;
	char		 short_name;
	bool		 value;
	enum global_flag id;
} globals[] = {
	{ "kubeconfig", 0, true, G_KUBECONFIG },
	{ "context", 0, true, G_CONTEXT },
	{ "namespace", 'n', true, G_NAMESPACE },
	{ "all-namespaces", 'A', false, G_ALL_NS },
	{ "as", 0, true, G_AS },
	{ "as-group", 0, true, G_AS_GROUP },
	{ "output", 'o', true, G_OUTPUT },
	{ "request-timeout", 0, true, G_REQUEST_TIMEOUT },
	{ "help", 'h', false, G_HELP },
};

/* A Go duration, or a whole number of days ("30d"), in ms. */
static int
parse_duration(const char *s, uint64_t *ret)
{
	size_t n = strlen(s);
	uint64_t days = 0;

	if (n >= 2 && s[n - 1] == 'd') {
		for (size_t i = 0; i + 1 < n; i++) {
			if (s[i] < '0' || s[i] > '9' || days > UINT64_MAX / 864000000ULL / 10)
				return -EINVAL;
			days = days * 10 + (uint64_t)(s[i] - '0');
		}
		*ret = days * 86400000ULL;
		return 0;
	}
	if (strcmp(s, "0") == 0) {
		*ret = 0;
		return 0;
	}
	return kc_parse_duration_ms(s, ret);
}

static int
set_global(struct cli *c, enum global_flag id, const char *v)
{
	switch (id) {
	case G_KUBECONFIG:
		c->kubeconfig = v;
		break;
	case G_CONTEXT:
		c->context = v;
		break;
	case G_NAMESPACE:
		c->ns_flag = v;
		break;
	case G_ALL_NS:
		c->all_ns = true;
		break;
	case G_AS:
		c->as = v;
		break;
	case G_AS_GROUP:
		if (c->nas_groups == CLI_AS_GROUPS_MAX)
			return cli_error(c, "at most %d --as-group flags", CLI_AS_GROUPS_MAX);
		c->as_groups[c->nas_groups++] = v;
		break;
	case G_OUTPUT:
		if (strcmp(v, "json") != 0 && strcmp(v, "yaml") != 0 && strcmp(v, "name") != 0 &&
		    strcmp(v, "wide") != 0)
			return cli_error(c, "--output: \"%s\" is not one of json, yaml, name, wide",
			    v);
		c->output = v;
		break;
	case G_REQUEST_TIMEOUT:
		if (parse_duration(v, &c->request_timeout_ms) < 0)
			return cli_error(c, "--request-timeout: \"%s\" is not a duration (30s, "
			    "2m)", v);
		break;
	case G_HELP:
	default:
		break;
	}
	return CLI_OK;
}

static int
set_flag(struct cli *c, const struct cli_cmd *cmd, const struct cli_flag *f, const char *v)
{
	char *end;

	if (f->seen != NULL)
		*f->seen = true;
	switch (f->type) {
	case CLI_FLAG_BOOL:
		*(bool *)f->dst = true;
		return CLI_OK;
	case CLI_FLAG_STR:
		*(const char **)f->dst = v;
		return CLI_OK;
	case CLI_FLAG_INT:
		errno = 0;
		if (v[0] < '0' || v[0] > '9' ||
		    ((*(int64_t *)f->dst = strtoll(v, &end, 10)), errno != 0) || *end != '\0')
			return cli_error(c, "--%s: \"%s\" is not a non-negative integer; see %s %s "
			    "--help", f->name, v, c->prog, cmd->name);
		return CLI_OK;
	case CLI_FLAG_DURATION:
		if (parse_duration(v, (uint64_t *)f->dst) < 0)
			return cli_error(c, "--%s: \"%s\" is not a duration (90s, 10m, 2h, 30d); "
			    "see %s %s --help", f->name, v, c->prog, cmd->name);
		return CLI_OK;
	case CLI_FLAG_LIST: {
		struct cli_list *l = f->dst;

		if (l->n == CLI_LIST_MAX)
			return cli_error(c, "--%s: at most %d", f->name, CLI_LIST_MAX);
		l->v[l->n++] = v;
		return CLI_OK;
	}
	default:
		return CLI_ERROR;
	}
}

/*
 * Finds the flag spelled 'arg' ("--name", "--name=v", "-n", "-nV"); sets
 * *value to an inline value or NULL. A global's index is returned in
 * *global (>= 0), a command flag in *flag.
 */
static bool
find_flag(const char *arg, const struct cli_flag *flags, int *global,
    const struct cli_flag **flag, const char **value)
{
	const char *name = arg + (arg[1] == '-' ? 2 : 1), *eq;
	size_t len;

	*global = -1;
	*flag = NULL;
	*value = NULL;
	if (arg[1] == '-') {
		eq = strchr(name, '=');
		len = eq != NULL ? (size_t)(eq - name) : strlen(name);
		if (eq != NULL)
			*value = eq + 1;
		for (size_t i = 0; i < KC_ARRAY_SIZE(globals); i++)
			if (strlen(globals[i].name) == len && strncmp(globals[i].name, name, len) == 0) {
				*global = (int)i;
				return true;
			}
		for (size_t i = 0; flags != NULL && flags[i].name != NULL; i++)
			if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0) {
				*flag = &flags[i];
				return true;
			}
		return false;
	}
	if (name[1] != '\0')
		*value = name + 1;
	for (size_t i = 0; i < KC_ARRAY_SIZE(globals); i++)
		if (globals[i].short_name != 0 && globals[i].short_name == name[0]) {
			*global = (int)i;
			return true;
		}
	for (size_t i = 0; flags != NULL && flags[i].name != NULL; i++)
		if (flags[i].short_name != 0 && flags[i].short_name == name[0]) {
			*flag = &flags[i];
			return true;
		}
	return false;
}

int
cli_parse(struct cli *c, const struct cli_cmd *cmd, const struct cli_flag *flags,
    int argc, char **argv, int *ret_nargs, int *ret_dashdash, bool *ret_done)
{
	int nargs = 0, dashdash = -1, r;

	*ret_done = false;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value;
		const struct cli_flag *f;
		bool takes;
		int g;

		if (dashdash >= 0 || arg[0] != '-' || arg[1] == '\0') {
			argv[1 + nargs++] = argv[i];
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			dashdash = nargs;
			continue;
		}
		if (!find_flag(arg, flags, &g, &f, &value))
			return cli_error(c, "unknown flag %s; see %s %s --help", arg, c->prog,
			    cmd->name);
		takes = g >= 0 ? globals[g].value : f->type != CLI_FLAG_BOOL;
		if (!takes && value != NULL) {
			if (arg[1] != '-')
				return cli_error(c, "flag -%c takes no value (got %s); see %s %s "
				    "--help", arg[1], arg, c->prog, cmd->name);
			if (strcmp(value, "true") != 0)
				return cli_error(c, "flag %s: a switch is set by its name alone", arg);
			value = NULL;
		}
		if (takes && value == NULL) {
			if (i + 1 >= argc)
				return cli_error(c, "flag %s needs a value; see %s %s --help", arg,
				    c->prog, cmd->name);
			value = argv[++i];
		}
		if (g >= 0 && globals[g].id == G_HELP) {
			(void)fputs(cmd->help, stdout);
			*ret_done = true;
			return CLI_OK;
		}
		r = g >= 0 ? set_global(c, globals[g].id, value) : set_flag(c, cmd, f, value);
		if (r != CLI_OK)
			return r;
	}
	*ret_nargs = nargs;
	*ret_dashdash = dashdash >= 0 ? dashdash : nargs;
	return CLI_OK;
}

/* ---- the connection ----------------------------------------------------- */

int
cli_connect(struct cli *c)
{
	struct kc_status st = { 0 };
	const char *nc;
	int r;

	if ((r = kc_rest_config_load_default(c->kubeconfig, c->context, &c->rc, &st)) < 0)
		return cli_error(c, "kubeconfig: %s",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
	if (c->as != NULL) {
		kc_free(c->rc->impersonate_user);
		if ((c->rc->impersonate_user = kc_strdup(c->as)) == NULL)
			return cli_error(c, "out of memory");
	}
	if (c->nas_groups > 0) {
		char **g = kc_calloc(c->nas_groups + 1, sizeof(*g));

		if (g == NULL)
			return cli_error(c, "out of memory");
		for (char **p = c->rc->impersonate_groups; p != NULL && *p != NULL; p++)
			kc_free(*p);
		kc_free(c->rc->impersonate_groups);
		c->rc->impersonate_groups = g;
		for (size_t i = 0; i < c->nas_groups; i++)
			if ((g[i] = kc_strdup(c->as_groups[i])) == NULL)
				return cli_error(c, "out of memory");
	}
	c->ns = c->ns_flag != NULL ? c->ns_flag :
	    c->rc->namespace != NULL ? c->rc->namespace : "default";
	if ((r = kc_client_check_namespace(c->ns, &st)) < 0)
		return cli_error(c, "namespace: %s", st.message);
	r = kc_client_new(&(struct kc_client_opts){
		.rc = c->rc,
		.max_retries = 3,
		.timeout_ms = (uint32_t)KC_MIN(c->request_timeout_ms, UINT32_MAX),
		.user_agent = "kubectl-trainyard/" KC_VERSION,
	}, &c->cl, &st);
	if (r < 0)
		return cli_error(c, "connecting to %s: %s", c->rc->server,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
	nc = getenv("NO_COLOR");
	c->color = isatty(STDOUT_FILENO) && (nc == NULL || nc[0] == '\0');
	return CLI_OK;
}

void
cli_release(struct cli *c)
{
	c->cl = kc_client_free(c->cl);
	c->rc = kc_rest_config_free(c->rc);
}

int
cli_api_error(struct cli *c, const char *what, int r, const struct kc_status *st)
{
	const char *msg = st != NULL && st->message[0] != '\0' ? st->message : kc_strerror(r);

	switch (r) {
	case KC_ENOTFOUND:
		(void)fprintf(stderr, "error: %s: not found in namespace %s (%s)\n", what, c->ns,
		    msg);
		return CLI_NOT_FOUND;
	case KC_EFORBIDDEN:
		(void)fprintf(stderr, "error: %s: not allowed: %s\n  (ask your project admin; "
		    "\"kubectl auth can-i --list -n %s\" shows what you may do)\n", what, msg,
		    c->ns);
		return CLI_ERROR;
	case KC_EUNAUTHORIZED:
		(void)fprintf(stderr, "error: %s: the server does not accept your credentials "
		    "(%s): log in again or check the kubeconfig's user\n", what, msg);
		return CLI_ERROR;
	default:
		break;
	}
	if (r == KC_ETRANSPORT || r == KC_ETLS || r == KC_ETIMEOUT)
		(void)fprintf(stderr, "error: %s: cannot reach the API server %s: %s\n", what,
		    c->rc != NULL ? c->rc->server : "", msg);
	else
		(void)fprintf(stderr, "error: %s: %s\n", what, msg);
	return CLI_ERROR;
}

int
cli_get_run(struct cli *c, const char *name, struct json_object **ret)
{
	struct kc_status st = { 0 };
	char what[320];
	int r;

	if ((r = kc_client_check_name(name, &st)) < 0)
		return cli_error(c, "run name \"%s\": %s", name, st.message);
	r = kc_client_get(c->cl, &(struct kc_get_opts){ .res = &cli_res_runs, .ns = c->ns,
	    .name = name }, ret, &st);
	if (r == KC_ENOTFOUND) {
		(void)fprintf(stderr, "error: run \"%s\" not found in namespace %s (\"%s list "
		    "-A\" lists every namespace's)\n", name, c->ns, c->prog);
		return CLI_NOT_FOUND;
	}
	if (r < 0) {
		(void)snprintf(what, sizeof(what), "get run %s", name);
		return cli_api_error(c, what, r, &st);
	}
	return CLI_OK;
}

int
cli_print_object(struct cli *c, const struct json_object *obj, const char *kind_res)
{
	char *text = NULL;

	if (c->output == NULL || strcmp(c->output, "name") == 0) {
		(void)printf("%s/%s\n", kind_res, kc_json_str(obj, "metadata", "name") != NULL ?
		    kc_json_str(obj, "metadata", "name") : "");
		return CLI_OK;
	}
	if (strcmp(c->output, "yaml") == 0)
		text = kc_yaml_dump(obj, NULL);
	else
		text = kc_json_dump(obj, NULL);
	if (text == NULL)
		return cli_error(c, "out of memory");
	(void)fputs(text, stdout);
	if (strcmp(c->output, "yaml") != 0)
		(void)fputc('\n', stdout);
	kc_free(text);
	return CLI_OK;
}

/* ---- a Run's result -------------------------------------------------------- */

int
cli_run_result(const struct json_object *run)
{
	return ops_phase_result(kc_json_str(run, "status", "phase"));
}
