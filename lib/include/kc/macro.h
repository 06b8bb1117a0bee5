/*
 * Compiler attributes and small helpers shared by every libkc header and
 * the programs. Reach the GNU attributes only through these macros.
 */
#ifndef KC_MACRO_H
#define KC_MACRO_H

#include <stddef.h>

#define _cleanup_(f)		__attribute__((cleanup(f)))
#define _printf_(a, b)		__attribute__((format(printf, a, b)))
#define _must_check_		__attribute__((warn_unused_result))
#define _nonnull_(...)		__attribute__((nonnull(__VA_ARGS__)))
#define _unused_		__attribute__((unused))

#define KC_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define KC_MIN(a, b)		((a) < (b) ? (a) : (b))
#define KC_MAX(a, b)		((a) > (b) ? (a) : (b))

/*
 * KC_DEFINE_CLEANUP(type, fn) generates fn##p(), the _cleanup_ helper for a
 * destructor that takes NULL and returns NULL: "p = fn(p);".
 */
#define KC_DEFINE_CLEANUP(type, fn)					\
	static inline void fn##p(type **p) { *p = fn(*p); }

#endif
