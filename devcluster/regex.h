/*
 * regex.h: CRD patterns, ECMA-262/RE2 syntax run as POSIX extended
 * expressions (devcluster/regex.c). A pure module: no state, no logging;
 * thread-safe (patterns are compiled and run under a thread-local
 * uselocale()).
 */
#ifndef DC_REGEX_H
#define DC_REGEX_H

#include <stddef.h>

/*
 * Compiles 'pat' in the C.UTF-8 locale (when the system has it) and, when
 * 'subject' is not NULL, searches its first 'slen' bytes. Returns 1 for a
 * match (or, with a NULL 'subject', for a pattern that compiles), 0 for
 * none, 2 when the pattern cannot be translated (treated as a match), -1
 * for an invalid pattern (Go's "error parsing regexp: ..." message in
 * 'why', 'wsize' bytes), or -ENOMEM.
 */
int	regex_run(const char *pat, const char *subject, size_t slen, char *why,
	    size_t wsize);

#endif
