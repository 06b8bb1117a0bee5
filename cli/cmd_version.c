/*
 * cmd_version.c: "kubectl trainyard version": this plugin's version, the
 * API server's and the controller's.
 *
 * The controller's version is read from its Deployment,
 * trainyard-system/trainyard-controller (manifests/deployment.yaml): the
 * label app.kubernetes.io/version when set, else the tag of its container
 * "controller"'s image (of the first container when none has that name;
 * a digest is dropped). "unknown" when there is no such Deployment, it
 * cannot be read (RBAC) or its image has no tag.
 */
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "cli.h"

static const char help[] =
    "Print the version of kubectl-trainyard, of the API server and of the Trainyard\n"
    "controller (its Deployment trainyard-system/trainyard-controller: the label\n"
    "app.kubernetes.io/version, else its image's tag; unknown when not found).\n"
    "\n"
    "Usage: kubectl trainyard version [--client] [-o json|yaml]\n"
    "\n"
    "  --client   only the plugin's version (no cluster needed)\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard version\n"
    "  kubectl trainyard version --client\n";

#define CONTROLLER_NS	"trainyard-system"
#define CONTROLLER_NAME	"trainyard-controller"

static const struct kc_resource res_deployments = {
	.group = "apps", .version = "v1", .resource = "deployments", .kind = "Deployment",
	.namespaced = true,
};

/* The tag of image reference 'image' into buf ("" when it has none). */
static void
image_tag(const char *image, char *buf, size_t size)
{
	const char *slash = strrchr(image, '/'), *colon;
	size_t n;

	buf[0] = '\0';
	colon = strchr(slash != NULL ? slash : image, ':');
	if (colon == NULL)
		return;
	n = strcspn(colon + 1, "@");
	if (n > 0 && n < size) {
		memcpy(buf, colon + 1, n);
		buf[n] = '\0';
	}
}

/* The controller's version into buf, "unknown" when it cannot be told. */
static void
controller_version(struct cli *c, char *buf, size_t size, char *where, size_t wsize)
{
	_cleanup_(kc_json_putp) struct json_object *d = NULL;
	struct kc_status st = { 0 };
	struct json_object *cs;
	const char *v, *image = NULL;
	int r;

	(void)kc_strlcpy(buf, "unknown", size);
	r = kc_client_get(c->cl, &(struct kc_get_opts){ .res = &res_deployments,
	    .ns = CONTROLLER_NS, .name = CONTROLLER_NAME }, &d, &st);
	if (r == KC_ENOTFOUND) {
		(void)snprintf(where, wsize, "no Deployment %s/%s", CONTROLLER_NS,
		    CONTROLLER_NAME);
		return;
	}
	if (r < 0) {
		(void)snprintf(where, wsize, "cannot read Deployment %s/%s: %s", CONTROLLER_NS,
		    CONTROLLER_NAME, st.message[0] != '\0' ? st.message : kc_strerror(r));
		return;
	}
	(void)snprintf(where, wsize, "Deployment %s/%s, %lld/%lld ready", CONTROLLER_NS,
	    CONTROLLER_NAME, (long long)kc_json_int(d, 0, "status", "readyReplicas"),
	    (long long)kc_json_int(d, 1, "spec", "replicas"));
	if ((v = kc_json_str(d, "metadata", "labels", "app.kubernetes.io/version")) != NULL &&
	    v[0] != '\0') {
		(void)kc_strlcpy(buf, v, size);
		return;
	}
	cs = kc_json_get(d, "spec", "template", "spec");
	cs = cs != NULL ? kc_json_arr_of(cs, "containers") : NULL;
	for (size_t i = 0; cs != NULL && i < json_object_array_length(cs); i++) {
		struct json_object *e = json_object_array_get_idx(cs, i);
		const char *n = kc_json_str(e, "name");

		if (i == 0 || (n != NULL && strcmp(n, "controller") == 0))
			image = kc_json_str(e, "image");
	}
	if (image != NULL) {
		image_tag(image, buf, size);
		if (buf[0] == '\0')
			(void)kc_strlcpy(buf, "unknown", size);
	}
}

static int
run(struct cli *c, int argc, char **argv)
{
	bool client = false, done;
	const struct cli_flag flags[] = {
		{ "client", 0, CLI_FLAG_BOOL, &client, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct json_object *v = NULL, *out;
	struct kc_status st = { 0 };
	char ctl[128] = "", where[640] = "";
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_version, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs > 0)
		return cli_error(c, "version takes no arguments");
	if ((out = json_object_new_object()) == NULL ||
	    kc_json_set_str(out, "clientVersion", KC_VERSION) < 0) {
		json_object_put(out);
		return cli_error(c, "out of memory");
	}
	if (!client) {
		if ((r = cli_connect(c)) != CLI_OK) {
			json_object_put(out);
			return r;
		}
		if ((r = kc_client_get_path(c->cl, "/version", &v, &st)) < 0) {
			json_object_put(out);
			return cli_api_error(c, "get /version", r, &st);
		}
		if (kc_json_put(out, "serverVersion", v) < 0) {
			json_object_put(out);
			return cli_error(c, "out of memory");
		}
		controller_version(c, ctl, sizeof(ctl), where, sizeof(where));
		if (kc_json_set_str(out, "controllerVersion", ctl) < 0) {
			json_object_put(out);
			return cli_error(c, "out of memory");
		}
	}
	if (c->output != NULL && c->output[0] != 'n' && c->output[0] != 'w') {
		r = cli_print_object(c, out, "version");
		json_object_put(out);
		return r;
	}
	(void)printf("Client Version: kubectl-trainyard %s\n", KC_VERSION);
	if (!client) {
		(void)printf("Server Version: %s\n",
		    kc_json_str(out, "serverVersion", "gitVersion") != NULL ?
		    kc_json_str(out, "serverVersion", "gitVersion") : "unknown");
		(void)printf("Controller Version: %s (%s)\n", ctl, where);
	}
	json_object_put(out);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_version = {
	.name = "version",
	.summary = "the versions of the plugin, the API server and the controller",
	.help = help,
	.run = run,
};
