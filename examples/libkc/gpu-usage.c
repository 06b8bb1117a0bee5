/*
 * gpu-usage: the GPUs that Trainyard's pods hold, by namespace and Run.
 *
 *	gpu-usage [--kubeconfig PATH] [--context NAME] [-n NAMESPACE | -A]
 *	    [--resource NAME]
 *
 * A small libkc program: a paged list (kc_client_list_all) of only the pods
 * Trainyard manages (a label selector, so the server does the filtering),
 * and exact sums of resource.Quantity values (kc/quantity.h). A pod holds
 * its resources until it has finished, so pods in phase Succeeded or
 * Failed are not counted. A container's limit counts where it has one,
 * else its request (extended resources such as nvidia.com/gpu must have
 * equal ones). --resource picks another resource, such as
 * rdma/hca_shared_devices_a. Without -n or -A it lists the namespace of
 * the current context. Exit status 0, or 1 with a message.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/quantity.h>
#include <kc/str.h>

#define RUNS_MAX	4096		/* rows printed; the rest are summed in "(others)" */

struct row {
	char		 ns[KC_NAMESPACE_MAX + 1];
	char		 run[KC_NAME_MAX + 1];
	unsigned	 pods;
	struct kc_quantity total;
};

struct usage {
	const char	*resource;
	struct row	*rows;
	size_t		 n;
	struct row	 others;
	struct row	 all;
};

static const char usage_text[] =
    "usage: gpu-usage [--kubeconfig PATH] [--context NAME] [-n NAMESPACE | -A]\n"
    "                 [--resource NAME]\n";

static struct row *
row_of(struct usage *u, const char *ns, const char *run)
{
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->rows[i].ns, ns) == 0 && strcmp(u->rows[i].run, run) == 0)
			return &u->rows[i];
	if (u->n == RUNS_MAX)
		return &u->others;
	(void)kc_strlcpy(u->rows[u->n].ns, ns, sizeof(u->rows[u->n].ns));
	(void)kc_strlcpy(u->rows[u->n].run, run, sizeof(u->rows[u->n].run));
	return &u->rows[u->n++];
}

/* Adds what one pod holds. -EINVAL (message printed) for a bad quantity. */
static int
count_pod(struct usage *u, const struct json_object *pod)
{
	const char *phase = kc_json_str(pod, "status", "phase");
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	const char *run = kc_json_str(pod, "metadata", "labels", "trainyard.dev/run");
	const char *name = kc_json_str(pod, "metadata", "name");
	struct json_object *containers = kc_json_arr_of(kc_json_get(pod, "spec"), "containers");
	struct kc_quantity sum = kc_quantity_from_int(0);
	struct row *row;

	if (phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return 0;
	for (size_t i = 0; containers != NULL && i < json_object_array_length(containers);
	    i++) {
		const struct json_object *c = json_object_array_get_idx(containers, i);
		const char *v = kc_json_str(c, "resources", "limits", u->resource);
		struct kc_status st = { 0 };
		struct kc_quantity q;

		if (v == NULL)
			v = kc_json_str(c, "resources", "requests", u->resource);
		if (v == NULL)
			continue;
		if (kc_quantity_parse(v, &q, &st) < 0 || kc_quantity_add(&sum, &q) < 0) {
			(void)fprintf(stderr, "gpu-usage: pod %s/%s: %s \"%s\": %s\n",
			    ns != NULL ? ns : "", name != NULL ? name : "", u->resource, v,
			    st.message[0] != '\0' ? st.message : "out of range");
			return -EINVAL;
		}
	}
	row = row_of(u, ns != NULL ? ns : "", run != NULL ? run : "(none)");
	row->pods++;
	u->all.pods++;
	if (kc_quantity_add(&row->total, &sum) < 0 ||
	    kc_quantity_add(&u->all.total, &sum) < 0) {
		(void)fprintf(stderr, "gpu-usage: the sum of %s is out of range\n", u->resource);
		return -ERANGE;
	}
	return 0;
}

static void
print_row(const struct row *row, const char *ns, const char *run)
{
	char q[KC_QUANTITY_STR_MAX];

	if (kc_quantity_format(&row->total, q, sizeof(q)) < 0)
		(void)kc_strlcpy(q, "?", sizeof(q));
	(void)printf("%-24s %-32s %6u %8s\n", ns, run, row->pods, q);
}

static int
cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c != 0 ? c : strcmp(x->run, y->run);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "context", required_argument, NULL, 'c' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "resource", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL;
	struct json_object *list = NULL, *items;
	struct usage u = { .resource = "nvidia.com/gpu" };
	struct kc_status st = { 0 };
	bool all_ns = false;
	int c, r, status = 1;

	while ((c = getopt_long(argc, argv, "n:Ah", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			kubeconfig = optarg;
			break;
		case 'c':
			context = optarg;
			break;
		case 'n':
			ns = optarg;
			break;
		case 'A':
			all_ns = true;
			break;
		case 'r':
			u.resource = optarg;
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
			return 0;
		default:
			(void)fputs(usage_text, stderr);
			return 1;
		}
	}
	if (optind != argc || (all_ns && ns != NULL)) {
		(void)fputs(usage_text, stderr);
		return 1;
	}
	if ((r = kc_rest_config_load_default(kubeconfig, context, &rc, &st)) < 0 ||
	    (r = kc_client_new(&(struct kc_client_opts){ .rc = rc, .max_retries = 3 },
	    &cl, &st)) < 0) {
		(void)fprintf(stderr, "gpu-usage: %s\n",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return 1;
	}
	if (!all_ns && ns == NULL)
		ns = kc_client_namespace(cl);
	if ((r = kc_client_list_all(cl, &(struct kc_list_opts){
		.res = &kc_res_pods,
		.ns = ns,
		.label_selector = "app.kubernetes.io/managed-by=trainyard",
	    }, &list, &st)) < 0) {
		(void)fprintf(stderr, "gpu-usage: list pods: %s\n",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return 1;
	}
	/* Zeroed rows hold zero quantities (DecimalSI, as kc_quantity_from_int(0)). */
	if ((u.rows = kc_calloc(RUNS_MAX, sizeof(*u.rows))) == NULL) {
		(void)fprintf(stderr, "gpu-usage: out of memory\n");
		goto out;
	}
	items = kc_json_arr_of(list, "items");
	for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++)
		if (count_pod(&u, json_object_array_get_idx(items, i)) < 0)
			goto out;
	qsort(u.rows, u.n, sizeof(*u.rows), cmp_rows);
	(void)printf("%-24s %-32s %6s %8s\n", "NAMESPACE", "RUN", "PODS", u.resource);
	for (size_t i = 0; i < u.n; i++)
		print_row(&u.rows[i], u.rows[i].ns, u.rows[i].run);
	if (u.others.pods > 0)
		print_row(&u.others, "", "(others)");
	print_row(&u.all, "", "TOTAL");
	status = 0;
out:
	kc_free(u.rows);
	json_object_put(list);
	return status;
}
