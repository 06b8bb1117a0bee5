/*
 * persist.c: --data-dir persistence of every object and of the
 * resourceVersion counter, in SQLite.
 *
 * The database is DIR/state.db: a table "objects" keyed by (group,
 * resource, namespace, name) holding each object's JSON in its storage
 * version and its resourceVersion, and a table "meta" holding the
 * counter ("rv") -- deletions remove rows but still move the counter,
 * so it is kept apart. PRAGMA application_id and user_version mark the
 * file as ours and give the schema version.
 *
 * Durability. A write is acknowledged only once it is on disk, kill -9
 * and power loss included: WAL journal with synchronous=FULL, so every
 * COMMIT fsyncs the WAL (NORMAL would survive kill -9 but not a power
 * cut, and a dev cluster on a laptop meets both). The cost of the fsync
 * is shared by group commit: the first storage event of a loop turn
 * opens a transaction, every event of that turn goes into it, and it
 * commits before any reply or watch byte of the turn is written
 * (hooks.flush, which http.c calls first thing when a connection
 * becomes writable) or, failing that, on a 0 ms loop timer. Replies
 * therefore never acknowledge, and watchers never see, a write that a
 * crash could lose.
 *
 * If a commit fails (disk full, I/O error), the transaction is rolled
 * back, the connection about to be answered is closed instead, and the
 * next flush rewrites the whole table from memory in one transaction,
 * so the file never silently diverges from what clients were told.
 *
 * Locking: locking_mode=EXCLUSIVE (set before WAL, so no shared memory
 * is used) and a write at open hold the file for this process; a second
 * devcluster on the same data dir fails at start.
 *
 * Loading happens before the server listens: persist_open() reads and
 * checks every row (a file that is not a database, a failed
 * quick_check, a row whose JSON or keys disagree: a clear error, never
 * an empty start), and persist_restore(), the dc_opts.restore hook,
 * inserts the objects with storage_restore() and sets the counter with
 * storage_set_rv(), before the bootstrap objects and before the other
 * files (crd.c registers the restored CRDs' types at its init). Watch
 * history is not kept: a watch from a resourceVersion before the
 * restart gets 410 Expired, as after an etcd compaction.
 *
 * When a CustomResourceDefinition is deleted, the rows of its custom
 * resources go too, whether or not their removal produced events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"
#include "persist.h"
#include "fieldmanager.h"

#define DB_NAME		"state.db"
#define APP_ID		0x54594443	/* "TYDC" */
#define SCHEMA_VERSION	1
#define ROW_MAX		(64u << 20)	/* one object's JSON */
#define BUSY_MS		1000
#define RETRY_MS	1000		/* a failed commit is retried */
/* The write-ahead log is cut back to this after a checkpoint (64 MiB). */
#define WAL_LIMIT_SQL	"PRAGMA journal_size_limit = 67108864"

/* An object read by persist_open(), waiting for persist_restore(). */
struct loaded {
	char			*group;
	char			*resource;
	bool			 namespaced;
	struct json_object	*obj;
};

struct dc_persist {
	struct dc		*dc;		/* once restored */
	sqlite3			*db;
	char			*path;
	sqlite3_stmt		*upsert;
	sqlite3_stmt		*del;
	sqlite3_stmt		*del_res;
	sqlite3_stmt		*set_rv;
	struct dc_timer		 timer;
	struct kc_buf		 buf;
	bool			 in_txn;
	bool			 resync;	/* rewrite everything at the next flush */
	uint64_t		 resync_at;	/* not before (ms), after a failure */
	struct loaded		*loaded;
	size_t			 nloaded;
	uint64_t		 loaded_rv;
	struct dc_persist_stats	 stats;
};

static const char schema_sql[] =
    "CREATE TABLE objects ("
    " grp TEXT NOT NULL, resource TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
    " namespaced INTEGER NOT NULL, rv INTEGER NOT NULL, data TEXT NOT NULL,"
    " PRIMARY KEY (grp, resource, ns, name)) WITHOUT ROWID;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "INSERT INTO meta (key, value) VALUES ('rv', '0');";

/*
 * SQLite helpers
 */

static int
db_fail(struct dc_persist *p, struct kc_status *st, const char *what)
{
	if ((sqlite3_extended_errcode(p->db) & 0xff) == SQLITE_BUSY)
		return kc_status_set(st, KC_ECONFIG, "%s: in use by another process (is "
		    "another devcluster running on this --data-dir?)", p->path);
	return kc_status_set(st, KC_ECONFIG, "%s: %s: %s", p->path, what,
	    sqlite3_errmsg(p->db));
}

static int
exec(struct dc_persist *p, const char *sql)
{
	return sqlite3_exec(p->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

/* Runs a statement that yields one text or integer cell into 'buf'. */
static int
query_one(struct dc_persist *p, const char *sql, char *buf, size_t size)
{
	sqlite3_stmt *s = NULL;
	int rc;

	buf[0] = '\0';
	if (sqlite3_prepare_v2(p->db, sql, -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(s, 0);

		(void)kc_strlcpy(buf, t != NULL ? (const char *)t : "", size);
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static void
finalize_stmts(struct dc_persist *p)
{
	sqlite3_finalize(p->upsert);
	sqlite3_finalize(p->del);
	sqlite3_finalize(p->del_res);
	sqlite3_finalize(p->set_rv);
	p->upsert = p->del = p->del_res = p->set_rv = NULL;
}

static void
loaded_free(struct dc_persist *p)
{
	for (size_t i = 0; i < p->nloaded; i++) {
		kc_free(p->loaded[i].group);
		kc_free(p->loaded[i].resource);
		if (p->loaded[i].obj != NULL)
			json_object_put(p->loaded[i].obj);
	}
	kc_free(p->loaded);
	p->loaded = NULL;
	p->nloaded = 0;
}

struct dc_persist *
persist_free(struct dc_persist *p)
{
	if (p == NULL)
		return NULL;
	finalize_stmts(p);
	if (p->db != NULL && sqlite3_close(p->db) != SQLITE_OK)
		kc_log_warn(NULL, "closing %s: %s", p->path, sqlite3_errmsg(p->db));
	loaded_free(p);
	kc_buf_free(&p->buf);
	kc_free(p->path);
	kc_free(p);
	return NULL;
}

/*
 * Opening and loading
 */

/*
 * Checks that the file is ours (or empty: *ret_fresh) before anything is
 * written to it, a foreign database included.
 */
static int
check_header(struct dc_persist *p, bool *ret_fresh, struct kc_status *st)
{
	char buf[64];
	int64_t app = 0, ver = 0;

	if (query_one(p, "PRAGMA application_id", buf, sizeof(buf)) < 0 ||
	    kc_parse_i64(buf, &app) < 0)
		return db_fail(p, st, "reading the database header");
	if (query_one(p, "PRAGMA user_version", buf, sizeof(buf)) < 0 ||
	    kc_parse_i64(buf, &ver) < 0)
		return db_fail(p, st, "reading the database header");
	*ret_fresh = false;
	if (app == 0 && ver == 0) {
		if (query_one(p, "SELECT count(*) FROM sqlite_master", buf, sizeof(buf)) < 0)
			return db_fail(p, st, "reading the schema");
		if (strcmp(buf, "0") != 0)
			return kc_status_set(st, KC_ECONFIG, "%s: not a trainyard-devcluster "
			    "database (it has other tables); move it away or pick another "
			    "--data-dir", p->path);
		*ret_fresh = true;
		return 0;
	}
	if (app != APP_ID)
		return kc_status_set(st, KC_ECONFIG, "%s: not a trainyard-devcluster database "
		    "(application_id %" PRId64 ")", p->path, app);
	if (ver != SCHEMA_VERSION)
		return kc_status_set(st, KC_ECONFIG, "%s: schema version %" PRId64 " is not "
		    "the %d this devcluster reads", p->path, ver, SCHEMA_VERSION);
	return 0;
}

static int
create_schema(struct dc_persist *p, struct kc_status *st)
{
	char sql[128];

	(void)snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; "
	    "PRAGMA user_version = %d;", APP_ID, SCHEMA_VERSION);
	if (exec(p, "BEGIN IMMEDIATE") < 0)
		return db_fail(p, st, "creating the schema");
	if (exec(p, schema_sql) < 0 || exec(p, sql) < 0) {
		(void)kc_status_set(st, KC_ECONFIG, "%s: creating the schema: %s", p->path,
		    sqlite3_errmsg(p->db));
		(void)exec(p, "ROLLBACK");
		return KC_ECONFIG;
	}
	if (exec(p, "COMMIT") < 0)
		return db_fail(p, st, "creating the schema");
	return 0;
}

static int
check_integrity(struct dc_persist *p, struct kc_status *st)
{
	sqlite3_stmt *s = NULL;
	char first[512] = "";
	int rc;

	if (sqlite3_prepare_v2(p->db, "PRAGMA quick_check", -1, &s, NULL) != SQLITE_OK)
		return db_fail(p, st, "checking the database");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(s, 0);

		if (first[0] == '\0')
			(void)kc_strlcpy(first, t != NULL ? (const char *)t : "?", sizeof(first));
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return db_fail(p, st, "checking the database");
	if (strcmp(first, "ok") != 0)
		return kc_status_set(st, KC_ECONFIG, "%s: the database is corrupt: %s", p->path,
		    first);
	return 0;
}

static const char *
col_text(sqlite3_stmt *s, int i)
{
	if (sqlite3_column_type(s, i) != SQLITE_TEXT)
		return NULL;
	return (const char *)sqlite3_column_text(s, i);
}

/* Checks one row against its object; the message names the row. */
static int
check_row(struct dc_persist *p, const char *key, const struct loaded *l, const char *ns,
    const char *name, int64_t rv, struct kc_status *st)
{
	const struct json_object *o = l->obj;
	const char *on = kc_json_str(o, "metadata", "name");
	const char *ons = kc_json_str(o, "metadata", "namespace");

	if (!json_object_is_type(o, json_type_object))
		return kc_status_set(st, KC_ECONFIG, "%s: row %s: not a JSON object", p->path,
		    key);
	if (on == NULL || strcmp(on, name) != 0)
		return kc_status_set(st, KC_ECONFIG, "%s: row %s: metadata.name does not match",
		    p->path, key);
	if (l->namespaced ? ns[0] == '\0' || ons == NULL || strcmp(ons, ns) != 0 :
	    ns[0] != '\0')
		return kc_status_set(st, KC_ECONFIG, "%s: row %s: metadata.namespace does not "
		    "match", p->path, key);
	if (rv <= 0 || obj_rv(o) != (uint64_t)rv)
		return kc_status_set(st, KC_ECONFIG, "%s: row %s: resourceVersion does not "
		    "match", p->path, key);
	return 0;
}

static int
load_rows(struct dc_persist *p, struct kc_status *st)
{
	sqlite3_stmt *s = NULL;
	char buf[64];
	int rc, r = 0;

	if (query_one(p, "SELECT value FROM meta WHERE key = 'rv'", buf, sizeof(buf)) < 0)
		return db_fail(p, st, "reading the resourceVersion counter");
	if (kc_parse_u64(buf, &p->loaded_rv) < 0)
		return kc_status_set(st, KC_ECONFIG, "%s: the resourceVersion counter \"%s\" "
		    "is malformed", p->path, buf);
	if (sqlite3_prepare_v2(p->db, "SELECT grp, resource, ns, name, namespaced, rv, data "
	    "FROM objects ORDER BY grp, resource, ns, name", -1, &s, NULL) != SQLITE_OK)
		return db_fail(p, st, "reading the objects");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *grp = col_text(s, 0), *res = col_text(s, 1), *ns = col_text(s, 2);
		const char *name = col_text(s, 3), *data = col_text(s, 6);
		int len = sqlite3_column_bytes(s, 6);
		struct kc_status jst = { 0 };
		struct loaded *arr, *l;
		char key[4 * DC_SEGMENT_MAX];

		if (grp == NULL || res == NULL || ns == NULL || name == NULL || data == NULL ||
		    sqlite3_column_type(s, 4) != SQLITE_INTEGER ||
		    sqlite3_column_type(s, 5) != SQLITE_INTEGER) {
			r = kc_status_set(st, KC_ECONFIG, "%s: a row of the objects table has "
			    "columns of the wrong type", p->path);
			break;
		}
		(void)snprintf(key, sizeof(key), "%s%s%s/%s%s%s", grp, grp[0] != '\0' ? "/" : "",
		    res, ns, ns[0] != '\0' ? "/" : "", name);
		if (len < 0 || (size_t)len > ROW_MAX) {
			r = kc_status_set(st, KC_ECONFIG, "%s: row %s: the object is too large",
			    p->path, key);
			break;
		}
		if ((arr = kc_reallocarray(p->loaded, p->nloaded + 1, sizeof(*arr))) == NULL) {
			r = -ENOMEM;
			break;
		}
		p->loaded = arr;
		l = &arr[p->nloaded];
		memset(l, 0, sizeof(*l));
		l->namespaced = sqlite3_column_int64(s, 4) != 0;
		if ((l->group = kc_strdup(grp)) == NULL ||
		    (l->resource = kc_strdup(res)) == NULL) {
			kc_free(l->group);
			kc_free(l->resource);
			r = -ENOMEM;
			break;
		}
		p->nloaded++;
		if ((r = kc_json_parse(data, (size_t)len, &l->obj, &jst)) < 0) {
			r = r == -ENOMEM ? r : kc_status_set(st, KC_ECONFIG,
			    "%s: row %s: malformed JSON: %s", p->path, key, jst.message);
			break;
		}
		if ((r = check_row(p, key, l, ns, name, sqlite3_column_int64(s, 5), st)) < 0 ||
		    (r = fieldmanager_compact(l->obj)) < 0)
			break;
		if (obj_rv(l->obj) > p->loaded_rv)
			p->loaded_rv = obj_rv(l->obj);
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = db_fail(p, st, "reading the objects");
	sqlite3_finalize(s);
	return r;
}

static int
prepare(struct dc_persist *p, struct kc_status *st)
{
	if (sqlite3_prepare_v3(p->db, "INSERT OR REPLACE INTO objects (grp, resource, ns, "
	    "name, namespaced, rv, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1,
	    SQLITE_PREPARE_PERSISTENT, &p->upsert, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(p->db, "DELETE FROM objects WHERE grp = ?1 AND resource = ?2 "
	    "AND ns = ?3 AND name = ?4", -1, SQLITE_PREPARE_PERSISTENT, &p->del,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(p->db, "DELETE FROM objects WHERE grp = ?1 AND resource = ?2",
	    -1, SQLITE_PREPARE_PERSISTENT, &p->del_res, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(p->db, "UPDATE meta SET value = ?1 WHERE key = 'rv'", -1,
	    SQLITE_PREPARE_PERSISTENT, &p->set_rv, NULL) != SQLITE_OK)
		return db_fail(p, st, "preparing statements");
	return 0;
}

int
persist_open(const char *dir, struct dc_persist **ret, struct kc_status *st)
{
	struct dc_persist *p;
	char mode[32];
	bool fresh;
	int rc, r;

	if ((p = kc_calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	kc_buf_init(&p->buf, DC_RESP_MAX);
	if ((p->path = kc_asprintf("%s/%s", dir, DB_NAME)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	rc = sqlite3_open_v2(p->path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	    SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		if (p->db == NULL) {
			r = -ENOMEM;
			goto fail;
		}
		r = db_fail(p, st, "opening");
		goto fail;
	}
	(void)sqlite3_extended_result_codes(p->db, 1);
	(void)sqlite3_busy_timeout(p->db, BUSY_MS);
	/* EXCLUSIVE before WAL: no shared memory, and the file is ours alone. */
	if (exec(p, "PRAGMA locking_mode = EXCLUSIVE") < 0) {
		r = db_fail(p, st, "opening");
		goto fail;
	}
	if ((r = check_header(p, &fresh, st)) < 0)
		goto fail;
	if (query_one(p, "PRAGMA journal_mode = WAL", mode, sizeof(mode)) < 0) {
		r = db_fail(p, st, "opening");
		goto fail;
	}
	if (strcmp(mode, "wal") != 0) {
		r = kc_status_set(st, KC_ECONFIG, "%s: cannot use a write-ahead log (journal "
		    "mode %s)", p->path, mode);
		goto fail;
	}
	if (exec(p, "PRAGMA synchronous = FULL") < 0 ||
	    exec(p, WAL_LIMIT_SQL) < 0) {
		r = db_fail(p, st, "configuring");
		goto fail;
	}
	/* Take the write lock now, so a second devcluster fails here. */
	if (exec(p, "BEGIN IMMEDIATE") < 0 || exec(p, "COMMIT") < 0) {
		r = db_fail(p, st, "locking");
		goto fail;
	}
	if ((fresh && (r = create_schema(p, st)) < 0) || (r = check_integrity(p, st)) < 0 ||
	    (r = load_rows(p, st)) < 0 || (r = prepare(p, st)) < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	persist_free(p);
	return r;
}

/*
 * Writing
 */

static void
kick(struct dc_persist *p)
{
	if (p->dc != NULL && !p->timer.armed)
		timer_arm(&p->timer, 0);
}

static int
begin(struct dc_persist *p)
{
	if (p->in_txn)
		return 0;
	if (exec(p, "BEGIN") < 0)
		return -EIO;
	p->in_txn = true;
	kick(p);
	return 0;
}

static int
step(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	(void)sqlite3_reset(s);
	(void)sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

static int
put_row(struct dc_persist *p, const struct dc_coll *coll, const struct json_object *obj)
{
	const char *ns = coll_namespaced(coll) ? kc_json_str(obj, "metadata", "namespace") : "";
	const char *name = kc_json_str(obj, "metadata", "name");
	int r;

	if (ns == NULL || name == NULL)
		return -EINVAL;
	kc_buf_reset(&p->buf);
	if ((r = api_serialize(obj, &p->buf)) < 0)
		return r;
	if (sqlite3_bind_text(p->upsert, 1, coll_group(coll), -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->upsert, 2, coll_resource(coll), -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->upsert, 3, ns, -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->upsert, 4, name, -1, SQLITE_STATIC) ||
	    sqlite3_bind_int(p->upsert, 5, coll_namespaced(coll) ? 1 : 0) ||
	    sqlite3_bind_int64(p->upsert, 6, (sqlite3_int64)obj_rv(obj)) ||
	    sqlite3_bind_text64(p->upsert, 7, p->buf.data, p->buf.len, SQLITE_STATIC,
	    SQLITE_UTF8))
		return -EIO;
	p->stats.writes++;
	return step(p->upsert);
}

static int
del_row(struct dc_persist *p, const struct dc_coll *coll, const struct json_object *obj)
{
	const char *ns = coll_namespaced(coll) ? kc_json_str(obj, "metadata", "namespace") : "";
	const char *name = kc_json_str(obj, "metadata", "name");

	if (ns == NULL || name == NULL)
		return -EINVAL;
	if (sqlite3_bind_text(p->del, 1, coll_group(coll), -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->del, 2, coll_resource(coll), -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->del, 3, ns, -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->del, 4, name, -1, SQLITE_STATIC))
		return -EIO;
	p->stats.writes++;
	return step(p->del);
}

/* A deleted CRD takes the rows of its custom resources along. */
static int
del_custom_rows(struct dc_persist *p, const struct json_object *crd)
{
	const char *group = kc_json_str(crd, "spec", "group");
	const char *plural = kc_json_str(crd, "spec", "names", "plural");

	if (group == NULL || plural == NULL)
		return 0;
	if (sqlite3_bind_text(p->del_res, 1, group, -1, SQLITE_STATIC) ||
	    sqlite3_bind_text(p->del_res, 2, plural, -1, SQLITE_STATIC))
		return -EIO;
	return step(p->del_res);
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct dc_persist *p = arg;
	int r;

	if (p->resync) {
		kick(p);
		return;
	}
	if ((r = begin(p)) == 0) {
		if (ev->type == DC_EV_DELETED) {
			r = del_row(p, ev->coll, ev->obj);
			if (r == 0 && strcmp(coll_group(ev->coll), "apiextensions.k8s.io") == 0 &&
			    strcmp(coll_resource(ev->coll), "customresourcedefinitions") == 0)
				r = del_custom_rows(p, ev->obj);
		} else
			r = put_row(p, ev->coll, ev->obj);
	}
	if (r < 0) {
		kc_log(KC_LOG_ERROR, &(struct kc_log_ctx){ .action = "persist" },
		    "writing to %s: %s; rewriting the database at the next commit", p->path,
		    r == -EIO ? sqlite3_errmsg(p->db) : kc_strerror(r));
		p->resync = true;
		kick(p);
	}
}

static void
rollback(struct dc_persist *p)
{
	if (!sqlite3_get_autocommit(p->db))
		(void)exec(p, "ROLLBACK");
	p->in_txn = false;
}

static int
set_rv(struct dc_persist *p)
{
	char buf[24];

	(void)snprintf(buf, sizeof(buf), "%" PRIu64, storage_rv(p->dc->store));
	if (sqlite3_bind_text(p->set_rv, 1, buf, -1, SQLITE_TRANSIENT))
		return -EIO;
	return step(p->set_rv);
}

static int
resync_coll(void *arg, struct dc_coll *coll)
{
	struct dc_persist *p = arg;
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++)
		r = put_row(p, coll, objs[i]);
	objs_free(objs, n);
	return r;
}

/* Makes the file equal to memory, in one transaction. */
static int
resync(struct dc_persist *p)
{
	int r;

	rollback(p);
	if (exec(p, "BEGIN") < 0)
		return -EIO;
	p->in_txn = true;
	if (exec(p, "DELETE FROM objects") < 0 ||
	    (r = storage_foreach_coll(p->dc->store, resync_coll, p)) < 0 ||
	    (r = set_rv(p)) < 0 || (r = exec(p, "COMMIT")) < 0) {
		rollback(p);
		return -EIO;
	}
	p->in_txn = false;
	p->resync = false;
	p->stats.commits++;
	kc_log_info(&(struct kc_log_ctx){ .action = "persist" }, "rewrote %s", p->path);
	return 0;
}

static int
flush(struct dc_persist *p)
{
	if (p->resync) {
		if (kc_clock_now_ms() < p->resync_at)
			return KC_EUNAVAILABLE;
		if (resync(p) < 0) {
			kc_log(KC_LOG_ERROR, &(struct kc_log_ctx){ .action = "persist" },
			    "rewriting %s: %s; trying again in %d ms", p->path,
			    sqlite3_errmsg(p->db), RETRY_MS);
			p->resync_at = kc_clock_now_ms() + RETRY_MS;
			return KC_EUNAVAILABLE;
		}
		return 0;
	}
	if (!p->in_txn)
		return 0;
	if (set_rv(p) < 0 || exec(p, "COMMIT") < 0) {
		kc_log(KC_LOG_ERROR, &(struct kc_log_ctx){ .action = "persist" },
		    "committing to %s: %s; replies wait until the database is rewritten",
		    p->path, sqlite3_errmsg(p->db));
		rollback(p);
		p->resync = true;
		kick(p);
		return KC_EUNAVAILABLE;
	}
	p->in_txn = false;
	p->stats.commits++;
	return 0;
}

static int64_t
persist_tick(void *arg)
{
	struct dc_persist *p = arg;

	return flush(p) < 0 ? RETRY_MS : DC_TIMER_STOP;
}

/* hooks.flush: commits, or says whether everything is durable yet. */
static int
flush_hook(struct dc *dc, bool commit)
{
	struct dc_persist *p = plugin_state(dc, &persist_plugin);

	if (p == NULL)
		return 0;
	if (commit)
		return flush(p);
	if (p->resync)
		return KC_EUNAVAILABLE;
	return p->in_txn ? DC_DECLINED : 0;
}

static void
shutdown_hook(struct dc *dc)
{
	(void)flush_hook(dc, true);
}

int
persist_restore(struct dc *dc, void *arg)
{
	struct dc_persist *p = arg;
	int r;

	for (size_t i = 0; i < p->nloaded; i++) {
		struct loaded *l = &p->loaded[i];
		struct dc_coll *coll = storage_find_coll(dc->store, l->group, l->resource);

		if (coll == NULL && (r = storage_coll(dc->store, l->group, l->resource,
		    l->namespaced, &coll)) < 0)
			return r;
		if (coll_namespaced(coll) != l->namespaced) {
			kc_log(KC_LOG_ERROR, &(struct kc_log_ctx){ .action = "persist" },
			    "%s: %s%s%s: the rows disagree with the resource's scope", p->path,
			    l->group, l->group[0] != '\0' ? "/" : "", l->resource);
			return KC_ECONFIG;
		}
		r = storage_restore(dc->store, coll, l->obj);
		l->obj = NULL;
		if (r < 0)
			return r;
		p->stats.restored++;
	}
	storage_set_rv(dc->store, p->loaded_rv);
	loaded_free(p);
	p->dc = dc;
	timer_init(&p->timer, dc, persist_tick, p);
	if ((r = storage_subscribe(dc->store, on_event, p)) < 0) {
		p->dc = NULL;
		return r;
	}
	plugin_set_state(dc, &persist_plugin, p);
	dc->hooks.flush = flush_hook;
	if (dc->hooks.shutdown == NULL)
		dc->hooks.shutdown = shutdown_hook;
	kc_log_info(&(struct kc_log_ctx){ .action = "persist" }, "restored %" PRIu64
	    " objects from %s, resourceVersion %" PRIu64, p->stats.restored, p->path,
	    storage_rv(dc->store));
	return 0;
}

int
persist_flush(struct dc *dc)
{
	return flush_hook(dc, true);
}

void
persist_fini(struct dc *dc)
{
	struct dc_persist *p = plugin_state(dc, &persist_plugin);

	if (p == NULL)
		return;
	kc_log_debug(NULL, "%s: %" PRIu64 " commits, %" PRIu64 " rows written", p->path,
	    p->stats.commits, p->stats.writes);
	if (flush(p) < 0)
		kc_log(KC_LOG_ERROR, &(struct kc_log_ctx){ .action = "persist" },
		    "the last writes could not be saved to %s", p->path);
	timer_cancel(&p->timer);
	storage_unsubscribe(dc->store, on_event, p);
	if (dc->hooks.flush == flush_hook)
		dc->hooks.flush = NULL;
	if (dc->hooks.shutdown == shutdown_hook)
		dc->hooks.shutdown = NULL;
	plugin_set_state(dc, &persist_plugin, NULL);
	persist_free(p);
}

int
persist_sql(struct dc *dc, const char *sql)
{
	struct dc_persist *p = plugin_state(dc, &persist_plugin);

	if (p == NULL)
		return -ENOENT;
	return exec(p, sql);
}

void
persist_stats(const struct dc *dc, struct dc_persist_stats *ret)
{
	const struct dc_persist *p = plugin_state(dc, &persist_plugin);

	memset(ret, 0, sizeof(*ret));
	if (p != NULL) {
		*ret = p->stats;
		ret->in_txn = p->in_txn;
	}
}

/* Started by persist_restore() inside api_new() (struct dc_opts.restore). */
const struct dc_plugin persist_plugin = {
	.name = "persist",
	.fini = persist_fini,
};
