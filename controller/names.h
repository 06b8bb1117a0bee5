/*
 * names.h: the names a Run takes, and whose an object of such a name is.
 *
 * A Run "r" takes the names "r" (its Service, NetworkPolicy and PodGroup)
 * and "r-0" ... "r-<n-1>" (its pods) in its namespace. When a create of
 * one of them meets AlreadyExists, the reconcile reads that one object
 * (a GET of the name, never a list) and names_owner() says whose it is:
 *
 *	TY_NAME_OURS		a controller ownerReference to this Run's uid:
 *				ours (an earlier create, or an earlier session
 *				of this Run still being deleted);
 *	TY_NAME_EARLIER_RUN	a controller ownerReference to a Run of the
 *				same name and another uid: an earlier Run of
 *				this name, deleted, whose objects the garbage
 *				collector has not removed yet. Not a conflict:
 *				the new Run waits until the name is free;
 *	TY_NAME_FOREIGN		anything else (no controller, another owner):
 *				a conflict. The session fails with reason
 *				NameConflict; the object is never adopted,
 *				changed or deleted.
 *
 * names_conflict() words a conflict as the Run's status.message says it:
 * "service default/web exists and is not owned by this Run (owner:
 * Deployment web)". Pure: no I/O, no clock, thread-safe.
 */
#ifndef TY_NAMES_H
#define TY_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/sbuf.h>

/* Room for a conflict message naming several objects (status.message). */
#define TY_NAMES_MSG_MAX	1024

enum ty_name_owner {
	TY_NAME_OURS,
	TY_NAME_EARLIER_RUN,
	TY_NAME_FOREIGN,
};

/*
 * Whose 'obj' (an object named as Run 'run' of uid 'uid' would name it,
 * in the Run's namespace) is; 'uid' NULL for a Run not created yet (any
 * Run's of the name is then an earlier one's).
 */
enum ty_name_owner names_owner(const struct json_object *obj, const char *run,
	    const char *uid);

/*
 * Appends to 'b' the words of one taken name: "<kind> <ns>/<name> exists
 * and is not owned by this Run", then " (owner: <Kind> <name>)" from the
 * object's controller ownerReference, or its first one, when it has any.
 * 'kind' is the lower-case kind kubectl prints ("service", "pod"); an
 * earlier entry in 'b' is followed by "; ".
 */
void	names_conflict(struct kc_sbuf *b, const char *kind, const struct json_object *obj);

/*
 * Whether a cached object named as Run 'run' names its children, which
 * carries the trainyard.dev/run label 'label' (NULL: none) and has a
 * controller Run (has_owner), is someone else's: without a Run as its
 * controller, or labelled for another Run. An object a Run of this name
 * owns is not (an earlier Run of the name, being collected).
 */
bool	names_cached_foreign(const char *label, bool has_owner, const char *run);

#endif
