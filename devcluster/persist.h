/*
 * persist.h: the persist plug-in, persistence in SQLite.
 * What other files need from persist.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_PERSIST_H
#define DEVCLUSTER_PERSIST_H

#include "devcluster.h"

extern const struct dc_plugin persist_plugin;

struct dc_persist;

struct dc_persist_stats {
	uint64_t	 commits;	/* transactions committed */
	uint64_t	 writes;	/* rows written or deleted */
	uint64_t	 restored;	/* objects loaded at start */
	bool		 in_txn;	/* writes not yet committed */
};

/*
 * Opens (or creates) DIR/state.db and reads every object and the
 * resourceVersion counter into memory. KC_ECONFIG with the reason in
 * 'st' when the file is not a database, is corrupt, belongs to another
 * program or schema, holds a row that disagrees with its object, or is
 * in use by another process; -ENOMEM.
 */
int	 persist_open(const char *dir, struct dc_persist **ret, struct kc_status *st)
	    _must_check_;
/*
 * The dc_opts.restore hook ('arg' is the struct dc_persist): puts the
 * objects into storage (storage_restore()), sets the counter, and from
 * then on writes every committed change (group commit through
 * hooks.flush and a loop timer). The instance owns 'arg' afterwards
 * (persist_fini()). 0 or a negative code.
 */
int	 persist_restore(struct dc *, void *arg) _must_check_;
/* Commits the open transaction now: 0, or KC_EUNAVAILABLE when it failed. */
int	 persist_flush(struct dc *);
/* Commits, closes and frees (before api_free()). Harmless when not attached. */
void	 persist_fini(struct dc *);
/* Frees a database that was opened but never attached; returns NULL. */
struct dc_persist *persist_free(struct dc_persist *);
void	 persist_stats(const struct dc *, struct dc_persist_stats *ret);
/* Runs SQL on the attached database (tests, diagnostics): 0, -EIO or -ENOENT. */
int	 persist_sql(struct dc *, const char *sql);

#endif
