/*
 * admin.c: the pure parts of exec, invite/members/remove, upgrade and
 * completion (admin.h): no network, for the unit tests.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "admin.h"

/* ---- members ------------------------------------------------------------- */

static bool
alnum_lower(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

int
member_name(const char *subject, bool group, char buf[MEMBER_NAME_MAX + 1])
{
	const char *prefix = group ? "group-" : "";
	char hash[16];
	size_t n = 0, keep;
	bool exact = true, dash = false;

	if (subject == NULL || subject[0] == '\0')
		return -EINVAL;
	(void)kc_strlcpy(buf, prefix, MEMBER_NAME_MAX + 1);
	n = strlen(buf);
	for (const char *p = subject; *p != '\0'; p++) {
		char ch = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;

		if (ch != *p)
			exact = false;
		if (!alnum_lower(ch)) {
			if (ch != '-')
				exact = false;
			if (n == 0 || dash)
				continue;
			ch = '-';
		}
		dash = ch == '-';
		if (n == MEMBER_NAME_MAX) {
			exact = false;
			break;
		}
		buf[n++] = ch;
	}
	while (n > 0 && buf[n - 1] == '-') {
		exact = false;
		n--;
	}
	buf[n] = '\0';
	if (exact && n > 0 && kc_valid_is_dns1123_label(kc_str_from(buf)))
		return 0;
	/* Not the subject as it is: a hash of it keeps different subjects apart. */
	(void)snprintf(hash, sizeof(hash), "%08" PRIx32,
	    kc_fnv1a32_str(kc_fnv1a32_str(KC_FNV1A32_INIT, prefix), subject));
	keep = KC_MIN(n, (size_t)MEMBER_NAME_MAX - 1 - strlen(hash));
	while (keep > 0 && buf[keep - 1] == '-')
		keep--;
	(void)snprintf(buf + keep, MEMBER_NAME_MAX + 1 - keep, "%s%s", keep > 0 ? "-" : "",
	    hash);
	return 0;
}

int
member_parse_expiry(const char *s, time_t now, time_t *ret)
{
	uint64_t ms;
	size_t n = strlen(s);
	char full[KC_TIME_MAX];

	if (n >= 2 && s[n - 1] == 'd') {
		uint64_t days;
		char num[24];

		if (n - 1 >= sizeof(num))
			return -EINVAL;
		memcpy(num, s, n - 1);
		num[n - 1] = '\0';
		if (kc_parse_u64(num, &days) < 0 || days > 36500)
			return -EINVAL;
		ms = days * 86400000ULL;
	} else if (n == 10 && s[4] == '-' && s[7] == '-') {
		(void)snprintf(full, sizeof(full), "%sT00:00:00Z", s);
		if (kc_time_parse(full, ret) < 0)
			return -EINVAL;
		return *ret > now ? 0 : -ERANGE;
	} else if (strchr(s, 'T') != NULL) {
		if (kc_time_parse(s, ret) < 0)
			return -EINVAL;
		return *ret > now ? 0 : -ERANGE;
	} else if (kc_parse_duration_ms(s, &ms) < 0 || ms > 36500ULL * 86400000ULL) {
		return -EINVAL;
	}
	if (ms < 1000)
		return -ERANGE;
	*ret = now + (time_t)(ms / 1000);
	return 0;
}

/* ---- exec ---------------------------------------------------------------- */

int
exec_parse_status(const char *data, size_t len, struct exec_result *ret)
{
	_cleanup_(kc_json_putp) struct json_object *st = NULL;
	struct json_object *causes;
	struct kc_status pst = { 0 };
	const char *status, *reason, *msg;
	int code;

	ret->exit_code = -1;
	ret->message[0] = '\0';
	ret->forbidden = false;
	if (kc_json_parse(data, len, &st, &pst) < 0 ||
	    !json_object_is_type(st, json_type_object) ||
	    (status = kc_json_str(st, "status")) == NULL)
		return -EINVAL;
	if (strcmp(status, "Success") == 0) {
		ret->exit_code = 0;
		return 0;
	}
	reason = kc_json_str(st, "reason");
	causes = kc_json_get(st, "details");
	causes = causes != NULL ? kc_json_arr_of(causes, "causes") : NULL;
	if (reason != NULL && strcmp(reason, "NonZeroExitCode") == 0 && causes != NULL) {
		for (size_t i = 0; i < json_object_array_length(causes); i++) {
			struct json_object *c = json_object_array_get_idx(causes, i);
			const char *cr = kc_json_str(c, "reason"), *cm = kc_json_str(c, "message");

			if (cr != NULL && strcmp(cr, "ExitCode") == 0 && cm != NULL &&
			    kc_parse_int(cm, &code) == 0 && code >= 0 && code <= 255) {
				ret->exit_code = code;
				return 0;
			}
		}
	}
	msg = kc_json_str(st, "message");
	ret->forbidden = (reason != NULL && strcmp(reason, "Forbidden") == 0) ||
	    kc_json_int(st, 0, "code") == 403;
	(void)kc_strlcpy(ret->message, msg != NULL && msg[0] != '\0' ? msg :
	    "the command failed, and the server said nothing more", sizeof(ret->message));
	return 0;
}

size_t
exec_resize_msg(unsigned width, unsigned height, char *buf, size_t size)
{
	int n = snprintf(buf, size, "{\"Width\":%u,\"Height\":%u}", width, height);

	return n < 0 ? 0 : (size_t)n;
}

char *
exec_path(const char *ns, const char *pod, const char *container, char *const *cmd,
    size_t ncmd, bool in, bool tty, size_t max)
{
	struct kc_buf b;
	int r = 0;

	kc_buf_init(&b, max);
	r = kc_buf_printf(&b, "/api/v1/namespaces/%s/pods/%s/exec", ns, pod);
	for (size_t i = 0; r == 0 && i < ncmd; i++)
		r = kc_client_query_add(&b, "command", cmd[i]);
	if (r == 0)
		r = kc_client_query_add(&b, "container", container);
	if (r == 0 && in)
		r = kc_client_query_add(&b, "stdin", "true");
	if (r == 0)
		r = kc_client_query_add(&b, "stdout", "true");
	/* A terminal merges stderr into stdout, as kubectl asks. */
	if (r == 0 && !tty)
		r = kc_client_query_add(&b, "stderr", "true");
	if (r == 0 && tty)
		r = kc_client_query_add(&b, "tty", "true");
	if (r < 0) {
		kc_buf_free(&b);
		return NULL;
	}
	return kc_buf_take(&b, NULL);
}

/* ---- upgrade ------------------------------------------------------------- */

int
crd_versions_read(const struct json_object *crd, struct crd_versions *ret)
{
	struct json_object *vs = kc_json_get(crd, "spec", "versions");
	struct json_object *sv = kc_json_get(crd, "status", "storedVersions");
	size_t nstorage = 0;

	memset(ret, 0, sizeof(*ret));
	if (!json_object_is_type(vs, json_type_array) || json_object_array_length(vs) == 0 ||
	    json_object_array_length(vs) > UPGRADE_VERSIONS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < json_object_array_length(vs); i++) {
		struct json_object *v = json_object_array_get_idx(vs, i);
		const char *name = kc_json_str(v, "name");

		if (name == NULL)
			return -EINVAL;
		ret->name[ret->n] = name;
		ret->served[ret->n++] = kc_json_bool(v, false, "served");
		if (kc_json_bool(v, false, "storage")) {
			ret->storage = name;
			nstorage++;
		}
	}
	if (nstorage != 1)
		ret->storage = NULL;
	if (json_object_is_type(sv, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(sv) &&
		    ret->nstored < UPGRADE_VERSIONS_MAX; i++) {
			const char *s = json_object_get_string(json_object_array_get_idx(sv, i));

			if (s != NULL)
				ret->stored[ret->nstored++] = s;
		}
	}
	return 0;
}

void
upgrade_next_step(const struct crd_versions *v, char *buf, size_t size)
{
	size_t nserved = 0, nold_stored = 0, nold_unserved = 0;

	for (size_t i = 0; i < v->n; i++) {
		if (v->served[i])
			nserved++;
		else
			nold_unserved++;
	}
	for (size_t i = 0; i < v->nstored; i++)
		if (v->storage == NULL || strcmp(v->stored[i], v->storage) != 0)
			nold_stored++;
	if (v->storage == NULL) {
		(void)snprintf(buf, size, "the CRD has no single storage version: restore it from "
		    "your backup (docs/upgrade.md, step 1)");
	} else if (strcmp(v->storage, "v1beta1") != 0) {
		size_t k;

		for (k = 0; k < v->n && strcmp(v->name[k], "v1beta1") != 0; k++)
			;
		if (k == v->n)
			(void)snprintf(buf, size, "steps 1 and 2: back up, install the controller "
			    "that serves the conversion webhook; then step 3: serve v1beta1 "
			    "(kubectl apply -k manifests/upgrade-steps/serve-v1beta1)");
		else if (!v->served[k])
			(void)snprintf(buf, size, "step 3: serve v1beta1 (kubectl apply -k "
			    "manifests/upgrade-steps/serve-v1beta1)");
		else
			(void)snprintf(buf, size, "step 4: store v1beta1 (kubectl apply -f crds/), "
			    "once reads at v1beta1 succeed through the webhook");
	} else if (nold_stored > 0) {
		(void)snprintf(buf, size, "step 5: migrate the stored objects (kubectl "
		    "trainyard upgrade migrate), then check status.storedVersions is [%s]",
		    v->storage);
	} else if (nserved > 1) {
		(void)snprintf(buf, size, "step 6: once no client requests the old version, "
		    "stop serving it (kubectl apply -k manifests/upgrade-steps/unserve-v1alpha1)");
	} else if (nold_unserved > 0) {
		(void)snprintf(buf, size, "step 7: remove the old version (kubectl apply -k "
		    "manifests/upgrade-steps/remove-v1alpha1)");
	} else {
		(void)snprintf(buf, size, "nothing to do: %s alone, served and stored",
		    v->storage);
	}
}

/* ---- completion ---------------------------------------------------------- */

/* The long flags a help text names ("--role"), each once, space-separated. */
static void
help_flags(const char *help, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (const char *p = help; *p != '\0'; p++) {
		size_t len = 0;
		char word[64];

		if (p[0] != '-' || p[1] != '-' || (p > help && p[-1] != ' ' && p[-1] != '[' &&
		    p[-1] != '\n' && p[-1] != '|'))
			continue;
		while ((p[2 + len] >= 'a' && p[2 + len] <= 'z') || p[2 + len] == '-' ||
		    (p[2 + len] >= '0' && p[2 + len] <= '9'))
			len++;
		if (len == 0 || len + 3 > sizeof(word))
			continue;
		(void)snprintf(word, sizeof(word), "--%.*s", (int)len, p + 2);
		/* Each once. */
		{
			const char *q = buf;
			bool seen = false;
			size_t wl = strlen(word);

			while ((q = strstr(q, word)) != NULL) {
				if ((q == buf || q[-1] == ' ') && (q[wl] == ' ' || q[wl] == '\0')) {
					seen = true;
					break;
				}
				q += wl;
			}
			if (seen)
				continue;
		}
		if (n + strlen(word) + 2 > size)
			break;
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n > 0 ? " " : "", word);
	}
}

static const char global_flags[] =
    "--kubeconfig --context --namespace -n --all-namespaces -A --as --as-group --output -o "
    "--request-timeout --help -h";

/* Commands whose first argument is a Run. */
static bool
takes_run(const char *name)
{
	static const char *const run_cmds[] = {
		"logs", "wait", "exec", "stop", "resume", "restart", "describe", "delete",
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(run_cmds); i++)
		if (strcmp(name, run_cmds[i]) == 0)
			return true;
	return false;
}

static void
bash_script(FILE *f, const struct cli_cmd *const *cmds)
{
	char flags[2048];

	(void)fputs("# bash completion for kubectl trainyard (kubectl-trainyard completion bash)\n"
	    "# Load it with: source <(kubectl trainyard completion bash)\n"
	    "\n"
	    "_kubectl_trainyard_runs()\n"
	    "{\n"
	    "    local ns=() i\n"
	    "    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do\n"
	    "        case \"${COMP_WORDS[i]}\" in\n"
	    "        -n|--namespace) ns=(-n \"${COMP_WORDS[i+1]}\") ;;\n"
	    "        esac\n"
	    "    done\n"
	    "    kubectl trainyard list \"${ns[@]}\" -o name 2>/dev/null | sed 's|^[^/]*/||'\n"
	    "}\n"
	    "\n"
	    "_kubectl_trainyard()\n"
	    "{\n"
	    "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
	    "    local i cmd=\"\" args=0\n", f);
	(void)fprintf(f, "    local commands=\"");
	for (size_t i = 0; cmds[i] != NULL; i++)
		(void)fprintf(f, "%s%s", i > 0 ? " " : "", cmds[i]->name);
	(void)fprintf(f, " help\"\n    local globals=\"%s\"\n", global_flags);
	(void)fputs("    for ((i = 1; i < COMP_CWORD; i++)); do\n"
	    "        case \"${COMP_WORDS[i]}\" in\n"
	    "        trainyard) continue ;;\n"
	    "        --kubeconfig|--context|-n|--namespace|--as|--as-group|-o|--output|"
	    "--request-timeout) ((i++)); continue ;;\n"
	    "        -*) continue ;;\n"
	    "        esac\n"
	    "        if [ -z \"$cmd\" ]; then cmd=\"${COMP_WORDS[i]}\"; else ((args++)); fi\n"
	    "    done\n"
	    "    case \"$prev\" in\n"
	    "    -o|--output) COMPREPLY=($(compgen -W \"json yaml name wide\" -- \"$cur\")); "
	    "return ;;\n"
	    "    --kubeconfig) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
	    "    --role) COMPREPLY=($(compgen -W \"researcher viewer admin\" -- \"$cur\")); "
	    "return ;;\n"
	    "    esac\n"
	    "    if [ -z \"$cmd\" ]; then\n"
	    "        COMPREPLY=($(compgen -W \"$commands $globals\" -- \"$cur\"))\n"
	    "        return\n"
	    "    fi\n"
	    "    case \"$cmd\" in\n", f);
	for (size_t i = 0; cmds[i] != NULL; i++) {
		help_flags(cmds[i]->help, flags, sizeof(flags));
		(void)fprintf(f, "    %s)\n", cmds[i]->name);
		if (strcmp(cmds[i]->name, "completion") == 0)
			(void)fputs("        if [[ \"$cur\" != -* && $args -eq 0 ]]; then "
			    "COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")); return; fi\n", f);
		else if (strcmp(cmds[i]->name, "upgrade") == 0)
			(void)fputs("        if [[ \"$cur\" != -* && $args -eq 0 ]]; then "
			    "COMPREPLY=($(compgen -W \"check migrate\" -- \"$cur\")); return; fi\n", f);
		else if (takes_run(cmds[i]->name))
			(void)fputs("        if [[ \"$cur\" != -* && $args -eq 0 ]]; then "
			    "COMPREPLY=($(compgen -W \"$(_kubectl_trainyard_runs)\" -- \"$cur\")); "
			    "return; fi\n", f);
		(void)fprintf(f, "        COMPREPLY=($(compgen -W \"%s $globals\" -- \"$cur\")) ;;\n",
		    flags);
	}
	(void)fputs("    *) COMPREPLY=($(compgen -W \"$globals\" -- \"$cur\")) ;;\n"
	    "    esac\n"
	    "}\n"
	    "\n"
	    "# kubectl (1.26+) asks a plugin's completion through kubectl_complete-<plugin>;\n"
	    "# as a plain function, complete \"kubectl trainyard ...\" ourselves and\n"
	    "# leave every other kubectl command to kubectl's own completion.\n"
	    "_kubectl_trainyard_wrap()\n"
	    "{\n"
	    "    if [ \"${COMP_WORDS[1]}\" = trainyard ]; then\n"
	    "        _kubectl_trainyard\n"
	    "    elif declare -F __start_kubectl >/dev/null; then\n"
	    "        __start_kubectl \"$@\"\n"
	    "    fi\n"
	    "}\n"
	    "complete -o default -F _kubectl_trainyard_wrap kubectl\n"
	    "complete -o default -F _kubectl_trainyard kubectl-trainyard\n", f);
}

static void
zsh_script(FILE *f, const struct cli_cmd *const *cmds)
{
	char flags[2048];

	(void)fputs("#compdef kubectl-trainyard\n"
	    "# zsh completion for kubectl trainyard (kubectl-trainyard completion zsh)\n"
	    "# Load it with: source <(kubectl trainyard completion zsh)\n"
	    "\n"
	    "_kubectl_trainyard_runs() {\n"
	    "    local -a runs\n"
	    "    runs=(${(f)\"$(kubectl trainyard list -o name 2>/dev/null | "
	    "sed 's|^[^/]*/||')\"})\n"
	    "    compadd -a runs\n"
	    "}\n"
	    "\n"
	    "_kubectl_trainyard() {\n"
	    "    local -a commands\n"
	    "    commands=(\n", f);
	for (size_t i = 0; cmds[i] != NULL; i++) {
		(void)fprintf(f, "        '%s:", cmds[i]->name);
		for (const char *p = cmds[i]->summary; *p != '\0'; p++)
			if (*p == '\'')
				(void)fputs("'\\''", f);
			else if (*p != ':')
				(void)fputc(*p, f);
		(void)fputs("'\n", f);
	}
	(void)fprintf(f, "    )\n"
	    "    local globals=(%s)\n"
	    "    local w=(${words[@]})\n"
	    "    [[ \"${w[1]}\" == kubectl ]] && w=(${w[2,-1]})\n"
	    "    [[ \"${w[1]}\" == trainyard || \"${w[1]}\" == kubectl-trainyard ]] && "
	    "w=(${w[2,-1]})\n"
	    "    if (( ${#w} <= 1 )); then\n"
	    "        _describe command commands\n"
	    "        compadd -- $globals\n"
	    "        return\n"
	    "    fi\n"
	    "    case \"${w[1]}\" in\n", global_flags);
	for (size_t i = 0; cmds[i] != NULL; i++) {
		help_flags(cmds[i]->help, flags, sizeof(flags));
		(void)fprintf(f, "    %s)\n", cmds[i]->name);
		if (strcmp(cmds[i]->name, "completion") == 0)
			(void)fputs("        (( ${#w} == 2 )) && compadd bash zsh\n", f);
		else if (strcmp(cmds[i]->name, "upgrade") == 0)
			(void)fputs("        (( ${#w} == 2 )) && compadd check migrate\n", f);
		else if (takes_run(cmds[i]->name))
			(void)fputs("        [[ \"${w[-1]}\" != -* ]] && (( ${#w} == 2 )) && "
			    "_kubectl_trainyard_runs\n", f);
		(void)fprintf(f, "        compadd -- %s $globals ;;\n", flags);
	}
	(void)fputs("    esac\n"
	    "}\n"
	    "\n"
	    "compdef _kubectl_trainyard kubectl-trainyard\n"
	    "# \"kubectl trainyard\": kubectl's zsh completion calls kubectl_complete-trainyard\n"
	    "# when it exists; this function also serves direct calls.\n"
	    "if [[ \"$funcstack[1]\" == _kubectl_trainyard ]]; then _kubectl_trainyard \"$@\"; fi\n",
	    f);
}

int
completion_script(FILE *f, const char *shell, const struct cli_cmd *const *cmds)
{
	if (strcmp(shell, "bash") == 0)
		bash_script(f, cmds);
	else if (strcmp(shell, "zsh") == 0)
		zsh_script(f, cmds);
	else
		return -EINVAL;
	return 0;
}
