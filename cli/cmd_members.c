/*
 * cmd_members.c: a project admin's commands (docs/projects.md, "For
 * project admins"): "invite" creates a ProjectMember in the project's
 * home namespace, "members" lists them, "remove" deletes one. Each is a
 * plain API call as the user (or whom --as names), so RBAC decides: a
 * researcher gets the verb and resource that are not allowed in words.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "admin.h"
#include "cli.h"

#define MEMBERS_ROWS_MAX	10000	/* members listed */

static const struct kc_resource res_members = {
	.group = "trainyard.dev",
	.version = "v1beta1",
	.resource = "projectmembers",
	.kind = "ProjectMember",
	.namespaced = true,
};

/* "alice" for a User, "Group/leads", "ServiceAccount/ns/name". */
static void
subject_text(const struct json_object *m, char *buf, size_t size)
{
	const char *kind = kc_json_str(m, "spec", "subject", "kind");
	const char *name = kc_json_str(m, "spec", "subject", "name");
	const char *ns = kc_json_str(m, "spec", "subject", "namespace");

	if (kind == NULL || strcmp(kind, "User") == 0)
		(void)snprintf(buf, size, "%s", name != NULL ? name : "?");
	else
		(void)snprintf(buf, size, "%s/%s%s%s", kind, ns != NULL ? ns : "",
		    ns != NULL ? "/" : "", name != NULL ? name : "?");
}

static const char *
ready_of(const struct json_object *m)
{
	struct json_object *conds = kc_json_get(m, "status", "conditions");

	for (size_t i = 0; json_object_is_type(conds, json_type_array) &&
	    i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *type = kc_json_str(c, "type");

		if (type != NULL && strcmp(type, "Ready") == 0)
			return kc_json_str(c, "status") != NULL ? kc_json_str(c, "status") : "?";
	}
	return "-";
}

/* ---- invite --------------------------------------------------------------- */

static const char invite_help[] =
    "Invite someone into the project: create a ProjectMember in the project's home\n"
    "namespace, which binds the role in every namespace of the project (project\n"
    "admins only).\n"
    "\n"
    "Usage: kubectl trainyard invite USER --role researcher|viewer|admin [--expires 30d|DATE]\n"
    "           [--max-gpus N] [--group] [-n PROJECT-HOME-NAMESPACE] [-o json|yaml|name]\n"
    "\n"
    "  --role ROLE      viewer (reads), researcher (also Runs and exec), admin (also\n"
    "                   invites); required\n"
    "  --expires WHEN   a duration from now (30d, 720h), a date (2027-03-01, midnight\n"
    "                   UTC) or an RFC 3339 time; the membership ends then\n"
    "  --max-gpus N     the most GPUs this member's Runs may hold at once\n"
    "  --group          USER is a group (subject kind Group), not a user\n"
    "  -n NAMESPACE     the project's home namespace (else the context's)\n"
    "\n"
    "The ProjectMember is named after the user: the name as it is when it is a DNS\n"
    "label, else its letters and digits with a short hash (alice@example.com becomes\n"
    "alice-example-com-<hash>); groups get the prefix group-.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard invite alice --role researcher --expires 30d -n llm-pretrain\n"
    "  kubectl trainyard invite llm-interns --group --role viewer --expires 2027-03-01\n"
    "  kubectl trainyard invite bob@example.com --role researcher --max-gpus 16\n";

static int
invite_run(struct cli *c, int argc, char **argv)
{
	const char *role = NULL, *expires = NULL;
	int64_t max_gpus = 0;
	bool group = false, has_max = false, done;
	const struct cli_flag flags[] = {
		{ "role", 0, CLI_FLAG_STR, &role, NULL },
		{ "expires", 0, CLI_FLAG_STR, &expires, NULL },
		{ "max-gpus", 0, CLI_FLAG_INT, &max_gpus, &has_max },
		{ "group", 0, CLI_FLAG_BOOL, &group, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	_cleanup_(kc_json_putp) struct json_object *pm = NULL, *created = NULL;
	struct json_object *md, *spec, *subj;
	struct kc_status st = { 0 };
	char name[MEMBER_NAME_MAX + 1], when[KC_TIME_MAX] = "", what[320];
	time_t at = 0;
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_invite, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "invite takes one USER (or GROUP with --group); see %s invite "
		    "--help", c->prog);
	if (role == NULL || (strcmp(role, "researcher") != 0 && strcmp(role, "viewer") != 0 &&
	    strcmp(role, "admin") != 0))
		return cli_error(c, "--role: one of researcher, viewer, admin is required%s%s%s",
		    role != NULL ? " (got \"" : "", role != NULL ? role : "",
		    role != NULL ? "\")" : "");
	if (strlen(argv[1]) > 253)
		return cli_error(c, "a subject name has at most 253 characters");
	if (expires != NULL) {
		r = member_parse_expiry(expires, kc_clock_wall(), &at);
		if (r == -ERANGE)
			return cli_error(c, "--expires: \"%s\" is not in the future", expires);
		if (r < 0 || kc_time_format(at, when, sizeof(when)) < 0)
			return cli_error(c, "--expires: \"%s\" is neither a duration (30d, 720h) nor "
			    "a date (2027-03-01) nor an RFC 3339 time", expires);
	}
	if (member_name(argv[1], group, name) < 0)
		return cli_error(c, "the subject's name is empty");
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	if ((pm = json_object_new_object()) == NULL ||
	    kc_json_set_str(pm, "apiVersion", "trainyard.dev/v1beta1") < 0 ||
	    kc_json_set_str(pm, "kind", "ProjectMember") < 0 ||
	    (md = kc_json_ensure_obj(pm, "metadata")) == NULL ||
	    kc_json_set_str(md, "name", name) < 0 ||
	    kc_json_set_str(md, "namespace", c->ns) < 0 ||
	    (spec = kc_json_ensure_obj(pm, "spec")) == NULL ||
	    (subj = kc_json_ensure_obj(spec, "subject")) == NULL ||
	    kc_json_set_str(subj, "kind", group ? "Group" : "User") < 0 ||
	    kc_json_set_str(subj, "name", argv[1]) < 0 ||
	    kc_json_set_str(spec, "role", role) < 0 ||
	    (expires != NULL && kc_json_set_str(spec, "expiresAt", when) < 0) ||
	    (has_max && kc_json_set_int(spec, "maxGPUs", max_gpus) < 0))
		return cli_error(c, "out of memory");
	r = kc_client_create(c->cl, &(struct kc_create_opts){ .res = &res_members, .ns = c->ns,
	    .field_manager = "kubectl-trainyard" }, pm, &created, &st);
	if (r == KC_EEXISTS)
		return cli_error(c, "%s is already a member of the project in namespace %s "
		    "(projectmember %s): \"%s members -n %s\" lists them, \"%s remove %s\" "
		    "removes it", argv[1], c->ns, name, c->prog, c->ns, c->prog, argv[1]);
	if (r < 0) {
		(void)snprintf(what, sizeof(what), "create projectmembers.trainyard.dev %s", name);
		return cli_api_error(c, what, r, &st);
	}
	if (c->output != NULL && strcmp(c->output, "wide") != 0)
		return cli_print_object(c, created, "projectmember.trainyard.dev");
	(void)printf("projectmember.trainyard.dev/%s created: %s %s is a %s in the project of "
	    "namespace %s%s%s", name, group ? "group" : "user", argv[1], role, c->ns,
	    expires != NULL ? " until " : "", when);
	if (has_max)
		(void)printf(", at most %" PRId64 " GPUs", max_gpus);
	(void)printf("\n");
	return CLI_OK;
}

const struct cli_cmd cli_cmd_invite = {
	.name = "invite",
	.summary = "invite a user or group into the project (project admins)",
	.help = invite_help,
	.run = invite_run,
};

/* ---- members -------------------------------------------------------------- */

static const char members_help[] =
    "List the project's members: the ProjectMembers of its home namespace.\n"
    "\n"
    "Usage: kubectl trainyard members [-n PROJECT-HOME-NAMESPACE] [-A] [-o json|yaml|name]\n"
    "\n"
    "  -n NAMESPACE     the project's home namespace (else the context's)\n"
    "  -A               the members of every project\n"
    "\n"
    "Columns: NAME, SUBJECT (a user, or Group/NAME), ROLE, READY (the binding is in\n"
    "place; False once expired), EXPIRES, INVITED-BY (who created it, recorded by the\n"
    "admission webhook), AGE.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard members -n llm-pretrain\n"
    "  kubectl trainyard members -A -o yaml\n";

struct row {
	char	cell[8][256];
};

static int
members_run(struct cli *c, int argc, char **argv)
{
	static const char *const head[] = {
		"NAMESPACE", "NAME", "SUBJECT", "ROLE", "READY", "EXPIRES", "INVITED-BY", "AGE",
	};
	_cleanup_(kc_json_putp) struct json_object *list = NULL;
	_cleanup_(kc_freep) struct row *rows = NULL;
	struct json_object *items;
	struct kc_status st = { 0 };
	size_t n, width[8] = { 0 }, first;
	time_t now = kc_clock_wall();
	int nargs, dd, r;
	bool done;

	if ((r = cli_parse(c, &cli_cmd_members, NULL, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs > 0)
		return cli_error(c, "members takes no arguments; -n names the project's home "
		    "namespace");
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	r = kc_client_list_all(c->cl, &(struct kc_list_opts){ .res = &res_members,
	    .ns = c->all_ns ? NULL : c->ns, .max_items = MEMBERS_ROWS_MAX }, &list, &st);
	if (r < 0)
		return cli_api_error(c, "list projectmembers.trainyard.dev", r, &st);
	if (c->output != NULL && strcmp(c->output, "wide") != 0) {
		if (strcmp(c->output, "name") != 0)
			return cli_print_object(c, list, "projectmember.trainyard.dev");
		items = kc_json_arr_of(list, "items");
		for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++)
			(void)cli_print_object(c, json_object_array_get_idx(items, i),
			    "projectmember.trainyard.dev");
		return CLI_OK;
	}
	items = kc_json_arr_of(list, "items");
	n = items != NULL ? json_object_array_length(items) : 0;
	if (n == 0) {
		if (c->all_ns)
			(void)fprintf(stderr, "No project members found.\n");
		else
			(void)fprintf(stderr, "No project members found in namespace %s (is it a "
			    "project's home namespace? \"kubectl get projects\" shows them).\n",
			    c->ns);
		return CLI_OK;
	}
	if ((rows = kc_calloc(n + 1, sizeof(*rows))) == NULL)
		return cli_error(c, "out of memory");
	for (size_t k = 0; k < 8; k++)
		(void)kc_strlcpy(rows[0].cell[k], head[k], sizeof(rows[0].cell[k]));
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(items, i);
		struct row *w = &rows[i + 1];
		const char *ts = kc_json_str(m, "metadata", "creationTimestamp");
		const char *s;
		time_t t;

#define CELL(k, v)	(void)kc_strlcpy(w->cell[k], (v) != NULL ? (v) : "-", sizeof(w->cell[k]))
		s = kc_json_str(m, "metadata", "namespace");
		CELL(0, s);
		s = kc_json_str(m, "metadata", "name");
		CELL(1, s);
		subject_text(m, w->cell[2], sizeof(w->cell[2]));
		s = kc_json_str(m, "spec", "role");
		CELL(3, s);
		s = ready_of(m);
		CELL(4, s);
		s = kc_json_str(m, "spec", "expiresAt");
		CELL(5, s);
		s = kc_json_str(m, "status", "invitedBy");
		CELL(6, s);
#undef CELL
		if (ts != NULL && kc_time_parse(ts, &t) == 0)
			kc_duration_human((int64_t)(now - t), w->cell[7], sizeof(w->cell[7]));
		else
			(void)kc_strlcpy(w->cell[7], "-", sizeof(w->cell[7]));
	}
	first = c->all_ns ? 0 : 1;
	for (size_t i = 0; i <= n; i++)
		for (size_t k = first; k < 8; k++)
			width[k] = KC_MAX(width[k], strlen(rows[i].cell[k]));
	for (size_t i = 0; i <= n; i++) {
		for (size_t k = first; k < 8; k++) {
			if (k < 7)
				(void)printf("%-*s   ", (int)width[k], rows[i].cell[k]);
			else
				(void)printf("%s\n", rows[i].cell[k]);
		}
	}
	return CLI_OK;
}

const struct cli_cmd cli_cmd_members = {
	.name = "members",
	.summary = "list the project's members",
	.help = members_help,
	.run = members_run,
};

/* ---- remove --------------------------------------------------------------- */

static const char remove_help[] =
    "Remove someone from the project: delete their ProjectMember. Their bindings go\n"
    "in every namespace of the project; Runs they submitted keep running.\n"
    "\n"
    "Usage: kubectl trainyard remove USER [--group] [-n PROJECT-HOME-NAMESPACE]\n"
    "\n"
    "  --group          USER is a group\n"
    "  -n NAMESPACE     the project's home namespace (else the context's)\n"
    "\n"
    "USER is the subject (as given to invite) or the ProjectMember's name.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard remove alice -n llm-pretrain\n"
    "  kubectl trainyard remove llm-interns --group\n";

/* The name of the member of 'subject' in c->ns into 'name', or KC_ENOTFOUND. */
static int
find_member(struct cli *c, const char *subject, bool group, char *name, size_t size,
    struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *list = NULL;
	struct json_object *items;
	char derived[MEMBER_NAME_MAX + 1];
	const char *kind = group ? "Group" : "User", *by_name = NULL;
	int r;

	r = kc_client_list_all(c->cl, &(struct kc_list_opts){ .res = &res_members,
	    .ns = c->ns, .max_items = MEMBERS_ROWS_MAX }, &list, st);
	if (r < 0)
		return r;
	items = kc_json_arr_of(list, "items");
	if (member_name(subject, group, derived) < 0)
		derived[0] = '\0';
	for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
		struct json_object *m = json_object_array_get_idx(items, i);
		const char *k = kc_json_str(m, "spec", "subject", "kind");
		const char *s = kc_json_str(m, "spec", "subject", "name");
		const char *n = kc_json_str(m, "metadata", "name");

		if (n == NULL)
			continue;
		if (k != NULL && s != NULL && strcmp(k, kind) == 0 && strcmp(s, subject) == 0) {
			(void)kc_strlcpy(name, n, size);
			return 0;
		}
		if (strcmp(n, subject) == 0 || strcmp(n, derived) == 0)
			by_name = n;
	}
	if (by_name == NULL)
		return KC_ENOTFOUND;
	(void)kc_strlcpy(name, by_name, size);
	return 0;
}

static int
remove_run(struct cli *c, int argc, char **argv)
{
	bool group = false, done;
	const struct cli_flag flags[] = {
		{ "group", 0, CLI_FLAG_BOOL, &group, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct kc_status st = { 0 };
	char name[256], what[320];
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_remove, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "remove takes one USER (or GROUP with --group); see %s remove "
		    "--help", c->prog);
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	r = find_member(c, argv[1], group, name, sizeof(name), &st);
	if (r == KC_ENOTFOUND) {
		(void)fprintf(stderr, "error: %s %s is not a member in namespace %s (\"%s members "
		    "-n %s\" lists them)\n", group ? "group" : "user", argv[1], c->ns, c->prog,
		    c->ns);
		return CLI_NOT_FOUND;
	}
	if (r < 0)
		return cli_api_error(c, "list projectmembers.trainyard.dev", r, &st);
	r = kc_client_delete(c->cl, &(struct kc_delete_opts){ .res = &res_members, .ns = c->ns,
	    .name = name }, NULL, &st);
	if (r < 0 && r != KC_ENOTFOUND) {
		(void)snprintf(what, sizeof(what), "delete projectmembers.trainyard.dev %s", name);
		return cli_api_error(c, what, r, &st);
	}
	(void)printf("projectmember.trainyard.dev/%s deleted: %s %s is no longer a member of "
	    "the project of namespace %s\n", name, group ? "group" : "user", argv[1], c->ns);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_remove = {
	.name = "remove",
	.summary = "remove a member from the project (project admins)",
	.help = remove_help,
	.run = remove_run,
};
