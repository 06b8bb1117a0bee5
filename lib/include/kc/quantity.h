/*
 * Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource).
 *
 * A quantity is a number with an optional suffix: DecimalSI ("500m",
 * "64G", "1.5"), BinarySI ("64Gi", "1Ki") or DecimalExponent ("1e3",
 * "12E-3"). kc_quantity_parse() accepts exactly upstream's grammar,
 *
 *	<sign>? <digits>? ("." <digits>?)? <suffix>
 *	<suffix> ::= n u m "" k M G T P E | Ki Mi Gi Ti Pi Ei | (e|E) <sign>? <digits>
 *
 * with upstream's error messages, and rounds a value finer than a nano
 * unit up to the next nano unit, as upstream does ("0.1n" is "1n").
 *
 * kc_quantity_value() and kc_quantity_milli_value() give upstream's
 * Value() and MilliValue(); their _sat forms, with kc_quantity_parse_sat(),
 * saturate instead of failing, as the devcluster's scheduler and quota
 * read requests.
 *
 * The value is held exactly as a signed 128-bit count of nano units, so
 * cpu milli-units, memory bytes up to exbibytes and counts all sum and
 * scale without rounding: the range is about +-1.7 * 10^29 whole units,
 * far beyond upstream's int64 cap. What would pass it fails with -ERANGE
 * instead of being clamped (upstream clamps at 2^63-1 silently).
 *
 * kc_quantity_format() prints Quantity.String()'s canonical form: 3 x
 * "500m" is "1500m", 4 x "64Gi" is "256Gi", "1.5" is "1500m", "1024Ki" is
 * "1Mi", "1.5Gi" is "1536Mi", "1000" is "1k", "1e3" stays "1e3".
 *
 *	struct kc_quantity q, gpu;
 *	char buf[KC_QUANTITY_STR_MAX];
 *	if ((r = kc_quantity_parse("64Gi", &q, &st)) < 0)
 *		return r;
 *	if ((r = kc_quantity_mul(&q, 4)) < 0)
 *		return r;			(-ERANGE)
 *	kc_quantity_format(&q, buf, sizeof(buf));	("256Gi")
 *
 * The functions keep no state and are thread-safe.
 */
#ifndef KC_QUANTITY_H
#define KC_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/err.h>
#include <kc/macro.h>

enum kc_quantity_fmt {
	KC_QTY_DECIMAL_SI,		/* "", k, M ... and m, u, n */
	KC_QTY_BINARY_SI,		/* Ki, Mi ... Ei */
	KC_QTY_DECIMAL_EXPONENT,	/* e3, E-6 */
};

struct kc_quantity {
	__extension__ __int128	nanos;	/* value * 10^9, exact */
	enum kc_quantity_fmt	fmt;	/* how String() prints it */
};

/* Longest formatted quantity, NUL included. */
#define KC_QUANTITY_STR_MAX	64

/* Upstream's error texts, as Kubernetes prints them. */
#define KC_QUANTITY_ERR_FORMAT	"quantities must match the regular expression " \
				"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define KC_QUANTITY_ERR_SUFFIX	"unable to parse quantity's suffix"
#define KC_QUANTITY_ERR_RANGE	"quantity too large (more than 10^29)"

/*
 * Parses 's' (NUL-terminated, no white space) into *ret. 0 on success;
 * -EINVAL with upstream's message (KC_QUANTITY_ERR_FORMAT or _SUFFIX) in
 * st->message for text that is not a quantity, -ERANGE (message
 * KC_QUANTITY_ERR_RANGE) when the value or its exponent passes the range.
 * *ret is untouched on failure; 'st' may be NULL.
 */
int	kc_quantity_parse(const char *s, struct kc_quantity *ret,
	    struct kc_status *st) _must_check_;

/*
 * As kc_quantity_parse(), but a value past the range is no error: it
 * becomes the largest quantity of its sign (about +-1.7 * 10^29 whole
 * units), for callers that saturate, as kube-scheduler's int64 sums do.
 * -EINVAL only, with the same messages.
 */
int	kc_quantity_parse_sat(const char *s, struct kc_quantity *ret,
	    struct kc_status *st) _must_check_;

/* The quantity 'v' whole units, DecimalSI. */
struct kc_quantity kc_quantity_from_int(int64_t v);

/*
 * q += y. When q is zero it takes y's format, as upstream's Add(). 0, or
 * -ERANGE with q untouched.
 */
int	kc_quantity_add(struct kc_quantity *q, const struct kc_quantity *y)
	    _must_check_;

/* q *= n (format kept). 0, or -ERANGE with q untouched. */
int	kc_quantity_mul(struct kc_quantity *q, int64_t n) _must_check_;

/* -1, 0 or 1 as a < b, a == b, a > b (by value; the format is ignored). */
int	kc_quantity_cmp(const struct kc_quantity *a, const struct kc_quantity *b);

/* -1, 0 or 1: the sign of q. */
int	kc_quantity_sign(const struct kc_quantity *q);

/*
 * The value rounded up to a whole number (upstream's Value()), in *ret.
 * 0, or -ERANGE (*ret untouched) when it does not fit an int64.
 */
int	kc_quantity_value(const struct kc_quantity *q, int64_t *ret) _must_check_;

/*
 * The value in thousandths, rounded away from zero (upstream's
 * MilliValue(): "1500m" is 1500, "1.0001" is 1001, "-0.1m" is -1), in
 * *ret. 0, or -ERANGE (*ret untouched) when it does not fit an int64.
 */
int	kc_quantity_milli_value(const struct kc_quantity *q, int64_t *ret) _must_check_;

/*
 * kc_quantity_value() and kc_quantity_milli_value() that saturate
 * instead of failing: a result past the int64 range is INT64_MAX, or
 * -INT64_MAX below zero (symmetric, so negating one never overflows).
 */
int64_t	kc_quantity_value_sat(const struct kc_quantity *q);
int64_t	kc_quantity_milli_sat(const struct kc_quantity *q);

/*
 * Writes the canonical form (upstream's String()) into 'buf' and returns
 * its length, or -ENOSPC when 'size' is too small (KC_QUANTITY_STR_MAX
 * always suffices). A DecimalSI value of 1000E or more, which upstream
 * cannot hold, keeps the suffix E ("1000E"); a BinarySI one keeps Ei.
 */
int	kc_quantity_format(const struct kc_quantity *q, char *buf, size_t size);

#endif
