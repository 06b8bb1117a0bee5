/*
 * quantity.c: Kubernetes resource quantities, exactly.
 *
 * Upstream (k8s.io/apimachinery/pkg/api/resource/quantity.go) keeps an
 * int64 mantissa with a decimal scale and falls back to arbitrary
 * precision decimals. Trainyard needs a narrower job done exactly: sum the
 * requests of up to 10,000 nodes (cpu in milli-units, memory in bytes up
 * to exbibytes, device counts) and print the result as upstream would. A
 * signed 128-bit count of nano units does that with plain integer
 * arithmetic: nano is the finest unit upstream keeps (it rounds anything
 * finer up to 1n), and 2^127 nano units is about 1.7 * 10^29 whole units,
 * so 10,000 x 8Ei still fits. Every operation checks for overflow and
 * fails with -ERANGE rather than clamp.
 *
 * Parsing follows parseQuantityString() and ParseQuantity() step by step:
 * sign, leading zeros, integer digits, optional fraction, a suffix made of
 * the letters "eEinumkKMGTP" then an optional signed exponent. The suffix
 * is looked up as DecimalSI, then BinarySI, then read as an exponent.
 *
 * Formatting follows CanonicalizeBytes(): zero is "0"; a BinarySI value
 * below 1024 in magnitude, or one that is not whole, prints as DecimalSI;
 * otherwise factors of 1024 move into the suffix. DecimalSI and
 * DecimalExponent strip factors of ten and then lower the exponent to a
 * multiple of three ("1.5" is 15e-1, printed "1500m").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kc/err.h>
#include <kc/macro.h>
#include <kc/quantity.h>

__extension__ typedef __int128 qint;

#define NANO		((qint)1000000000)
#define QINT_MAX	((qint)(((unsigned __int128)1 << 127) - 1))
/* Exponents past this overflow (or round to 1n) whatever the digits are. */
#define EXP_LIMIT	((int64_t)1000000)
#define FRAC_DIGITS	128	/* fraction digits kept past nano, binary suffixes */

struct qparts {
	bool		 neg;
	const char	*num, *den, *suf;
	size_t		 nnum, nden, nsuf;
};

struct suffix {
	const char	*s;
	int		 exp;
};

static const struct suffix dec_suffixes[] = {
	{ "n", -9 }, { "u", -6 }, { "m", -3 }, { "", 0 }, { "k", 3 }, { "M", 6 },
	{ "G", 9 }, { "T", 12 }, { "P", 15 }, { "E", 18 },
};

static const struct suffix bin_suffixes[] = {
	{ "", 0 }, { "Ki", 10 }, { "Mi", 20 }, { "Gi", 30 }, { "Ti", 40 },
	{ "Pi", 50 }, { "Ei", 60 },
};

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static size_t
span_digits(const char *s, size_t i, size_t end)
{
	while (i < end && is_digit(s[i]))
		i++;
	return i;
}

/* parseQuantityString(): splits 's' or returns -EINVAL (ErrFormatWrong). */
static int
split(const char *s, struct qparts *p)
{
	size_t pos = 0, end = strlen(s), i;

	memset(p, 0, sizeof(*p));
	p->num = "0";
	p->nnum = 1;
	p->den = p->suf = "";
	if (end == 0)
		return -EINVAL;
	if (s[0] == '-' || s[0] == '+') {
		p->neg = s[0] == '-';
		pos++;
	}
	while (pos < end && s[pos] == '0')
		pos++;
	if (pos >= end)
		return 0;
	i = span_digits(s, pos, end);
	if (i > pos) {
		p->num = s + pos;
		p->nnum = i - pos;
	}
	pos = i;
	if (pos < end && s[pos] == '.') {
		i = span_digits(s, ++pos, end);
		p->den = s + pos;
		p->nden = i - pos;
		pos = i;
	}
	p->suf = s + pos;
	while (pos < end && strchr("eEinumkKMGTP", s[pos]) != NULL)
		pos++;
	if (pos < end && (s[pos] == '-' || s[pos] == '+'))
		pos++;
	if (span_digits(s, pos, end) != end)
		return -EINVAL;
	p->nsuf = end - (size_t)(p->suf - s);
	return 0;
}

static bool
suffix_lookup(const struct suffix *tab, size_t n, const char *s, size_t len, int *exp)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(tab[i].s) == len && memcmp(tab[i].s, s, len) == 0) {
			*exp = tab[i].exp;
			return true;
		}
	return false;
}

/* strconv.ParseInt(s, 10, 64) of the exponent after 'e' or 'E'. */
static bool
parse_exponent(const char *s, size_t len, int64_t *ret)
{
	size_t i = 0;
	bool neg = false;
	uint64_t v = 0;

	if (len > 0 && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		i++;
	}
	if (i == len)
		return false;
	for (; i < len; i++) {
		if (!is_digit(s[i]) || v > (uint64_t)INT64_MAX / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > (uint64_t)INT64_MAX + neg)
		return false;
	*ret = !neg ? (int64_t)v : v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v;
	return true;
}

/* quantitySuffixer.interpret(): base 10 or 2, exponent and format. */
static bool
interpret(const struct qparts *p, int *base, int64_t *exp, enum kc_quantity_fmt *fmt)
{
	int e;

	if (suffix_lookup(dec_suffixes, KC_ARRAY_SIZE(dec_suffixes), p->suf, p->nsuf, &e)) {
		*base = 10, *exp = e, *fmt = KC_QTY_DECIMAL_SI;
		return true;
	}
	if (suffix_lookup(bin_suffixes, KC_ARRAY_SIZE(bin_suffixes), p->suf, p->nsuf, &e)) {
		*base = 2, *exp = e, *fmt = KC_QTY_BINARY_SI;
		return true;
	}
	if (p->nsuf > 1 && (p->suf[0] == 'e' || p->suf[0] == 'E') &&
	    parse_exponent(p->suf + 1, p->nsuf - 1, exp)) {
		*base = 10, *fmt = KC_QTY_DECIMAL_EXPONENT;
		return true;
	}
	return false;
}

static int
acc_digit(qint *acc, char c)
{
	if (__builtin_mul_overflow(*acc, 10, acc) ||
	    __builtin_add_overflow(*acc, (qint)(c - '0'), acc))
		return -ERANGE;
	return 0;
}

/* Multiplies by 10^n; -ERANGE on overflow. */
static int
scale_up(qint *v, int64_t n)
{
	for (int64_t i = 0; i < n && *v != 0; i++)
		if (__builtin_mul_overflow(*v, 10, v))
			return -ERANGE;
	return 0;
}

/*
 * The digits 'num' 'den' (trailing zeros of 'den' already dropped) times
 * 10^(p) with p = exp + 9 - nden, in nano units, rounded up past nano.
 */
static int
decimal_nanos(const struct qparts *q, int64_t exp, qint *ret)
{
	int64_t p = exp + 9 - (int64_t)q->nden, keep;
	size_t n = q->nnum + q->nden;
	qint acc = 0;
	bool frac = false;
	int r;

	keep = p >= 0 ? (int64_t)n : (int64_t)n + p;
	for (size_t i = 0; i < n; i++) {
		char c = i < q->nnum ? q->num[i] : q->den[i - q->nnum];

		if ((int64_t)i >= keep) {
			frac |= c != '0';
			continue;
		}
		if ((r = acc_digit(&acc, c)) < 0)
			return r;
	}
	if (p > 0 && (r = scale_up(&acc, p)) < 0)
		return r;
	*ret = frac ? acc + 1 : acc;
	return 0;
}

/*
 * ceil(0.<d> * 2^exp) for 'n' decimal digits 'd' and 0 <= exp <= 60, by
 * doubling the digits 'exp' times. Only the first FRAC_DIGITS digits
 * can change the whole part (FRAC_DIGITS >= 60 >= exp: what the others
 * add stays below the step between two fractions of the kept digits);
 * the rest only say whether a fraction is left.
 */
static uint64_t
frac_pow2_ceil(const char *d, size_t n, int64_t exp)
{
	unsigned char f[FRAC_DIGITS];
	size_t m = KC_MIN(n, sizeof(f));
	uint64_t whole = 0;
	bool frac = false;

	for (size_t i = 0; i < n; i++) {
		if (i < m)
			f[i] = (unsigned char)(d[i] - '0');
		else
			frac |= d[i] != '0';
	}
	for (int64_t k = 0; k < exp; k++) {
		unsigned carry = 0;

		for (size_t i = m; i-- > 0;) {
			unsigned v = f[i] * 2u + carry;

			f[i] = (unsigned char)(v % 10);
			carry = v / 10;
		}
		whole = whole * 2 + carry;
	}
	for (size_t i = 0; i < m && !frac; i++)
		frac = f[i] != 0;
	return whole + frac;
}

/*
 * The digits times 2^exp times 10^(9 - nden), rounded up past nano. Past
 * nine decimals, the digits up to nano are scaled as a whole number and
 * the rest as a fraction (frac_pow2_ceil()), so a long fraction never
 * overflows.
 */
static int
binary_nanos(const struct qparts *q, int64_t exp, qint *ret)
{
	size_t nden = KC_MIN(q->nden, (size_t)9);
	qint acc = 0;
	int r;

	for (size_t i = 0; i < q->nnum + nden; i++)
		if ((r = acc_digit(&acc, i < q->nnum ? q->num[i] :
		    q->den[i - q->nnum])) < 0)
			return r;
	for (int64_t i = 0; i < exp && acc != 0; i++)
		if (__builtin_mul_overflow(acc, 2, &acc))
			return -ERANGE;
	if (q->nden < 9 && (r = scale_up(&acc, 9 - (int64_t)q->nden)) < 0)
		return r;
	if (q->nden > 9 && __builtin_add_overflow(acc,
	    (qint)frac_pow2_ceil(q->den + 9, q->nden - 9, exp), &acc))
		return -ERANGE;
	*ret = acc;
	return 0;
}

/* kc_quantity_parse(); with 'sat', a value past the range is clamped. */
static int
parse(const char *s, struct kc_quantity *ret, struct kc_status *st, bool sat)
{
	struct qparts p;
	enum kc_quantity_fmt fmt;
	int64_t exp;
	qint nanos;
	int base, r;

	if (s == NULL || split(s, &p) < 0)
		return kc_status_set(st, -EINVAL, "%s", KC_QUANTITY_ERR_FORMAT);
	if (!interpret(&p, &base, &exp, &fmt))
		return kc_status_set(st, -EINVAL, "%s", KC_QUANTITY_ERR_SUFFIX);
	while (p.nden > 0 && p.den[p.nden - 1] == '0')
		p.nden--;
	exp = KC_MAX(KC_MIN(exp, EXP_LIMIT), -EXP_LIMIT);
	r = base == 10 ? decimal_nanos(&p, exp, &nanos) : binary_nanos(&p, exp, &nanos);
	if (r == -ERANGE && sat) {
		nanos = QINT_MAX;
		r = 0;
	}
	if (r < 0)
		return kc_status_set(st, r, "%s", KC_QUANTITY_ERR_RANGE);
	ret->nanos = p.neg ? -nanos : nanos;
	ret->fmt = fmt;
	return 0;
}

int
kc_quantity_parse(const char *s, struct kc_quantity *ret, struct kc_status *st)
{
	return parse(s, ret, st, false);
}

int
kc_quantity_parse_sat(const char *s, struct kc_quantity *ret, struct kc_status *st)
{
	return parse(s, ret, st, true);
}

struct kc_quantity
kc_quantity_from_int(int64_t v)
{
	return (struct kc_quantity){ .nanos = (qint)v * NANO, .fmt = KC_QTY_DECIMAL_SI };
}

int
kc_quantity_add(struct kc_quantity *q, const struct kc_quantity *y)
{
	qint sum;

	if (__builtin_add_overflow(q->nanos, y->nanos, &sum))
		return -ERANGE;
	if (q->nanos == 0)
		q->fmt = y->fmt;
	q->nanos = sum;
	return 0;
}

int
kc_quantity_mul(struct kc_quantity *q, int64_t n)
{
	qint v;

	if (__builtin_mul_overflow(q->nanos, (qint)n, &v))
		return -ERANGE;
	q->nanos = v;
	return 0;
}

int
kc_quantity_cmp(const struct kc_quantity *a, const struct kc_quantity *b)
{
	return (a->nanos > b->nanos) - (a->nanos < b->nanos);
}

int
kc_quantity_sign(const struct kc_quantity *q)
{
	return (q->nanos > 0) - (q->nanos < 0);
}

/* q->nanos / 'unit' rounded away from zero; 'unit' divides NANO. */
static qint
scaled(const struct kc_quantity *q, qint unit)
{
	qint v = q->nanos / unit;

	if (q->nanos % unit != 0)
		v += q->nanos > 0 ? 1 : -1;
	return v;
}

static int
to_int64(qint v, int64_t *ret)
{
	if (v > INT64_MAX || v < INT64_MIN)
		return -ERANGE;
	*ret = (int64_t)v;
	return 0;
}

static int64_t
to_int64_sat(qint v)
{
	return v > INT64_MAX ? INT64_MAX : v < -INT64_MAX ? -INT64_MAX : (int64_t)v;
}

int
kc_quantity_value(const struct kc_quantity *q, int64_t *ret)
{
	return to_int64(scaled(q, NANO), ret);
}

int
kc_quantity_milli_value(const struct kc_quantity *q, int64_t *ret)
{
	return to_int64(scaled(q, NANO / 1000), ret);
}

int64_t
kc_quantity_value_sat(const struct kc_quantity *q)
{
	return to_int64_sat(scaled(q, NANO));
}

int64_t
kc_quantity_milli_sat(const struct kc_quantity *q)
{
	return to_int64_sat(scaled(q, NANO / 1000));
}

/* Writes the decimal digits of 'v' (with '-' when negative) into 'out'. */
static size_t
put_int(char *out, qint v)
{
	char tmp[48];
	size_t n = 0, len = 0;
	bool neg = v < 0;

	do {
		int d = (int)(v % 10);

		tmp[n++] = (char)('0' + (d < 0 ? -d : d));
		v /= 10;
	} while (v != 0);
	if (neg)
		out[len++] = '-';
	while (n > 0)
		out[len++] = tmp[--n];
	return len;
}

static const char *
dec_suffix(int exp)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(dec_suffixes); i++)
		if (dec_suffixes[i].exp == exp)
			return dec_suffixes[i].s;
	return "";
}

/* The canonical mantissa, exponent and suffix text of a non-zero value. */
static size_t
canonical(const struct kc_quantity *q, char *out, char *suf, size_t sufsize)
{
	enum kc_quantity_fmt fmt = q->fmt;
	qint m = q->nanos;
	int e = -9;

	if (fmt == KC_QTY_BINARY_SI && (m % NANO != 0 ||
	    (m > -1024 * NANO && m < 1024 * NANO)))
		fmt = KC_QTY_DECIMAL_SI;
	if (fmt == KC_QTY_BINARY_SI) {
		m /= NANO;
		for (e = 0; e < 6 && m % 1024 == 0; e++)
			m /= 1024;
		snprintf(suf, sufsize, "%s", bin_suffixes[e].s);
		return put_int(out, m);
	}
	for (; m % 10 == 0; e++)
		m /= 10;
	for (; e % 3 != 0; e--)
		m *= 10;
	if (fmt == KC_QTY_DECIMAL_SI) {
		for (; e > 18; e -= 3)
			m *= 1000;
		snprintf(suf, sufsize, "%s", dec_suffix(e));
	} else if (e != 0)
		snprintf(suf, sufsize, "e%d", e);
	else
		suf[0] = '\0';
	return put_int(out, m);
}

int
kc_quantity_format(const struct kc_quantity *q, char *buf, size_t size)
{
	char num[48], suf[16];
	size_t n;

	if (q->nanos == 0) {
		num[0] = '0';
		n = 1;
		suf[0] = '\0';
	} else
		n = canonical(q, num, suf, sizeof(suf));
	if (n + strlen(suf) + 1 > size)
		return -ENOSPC;
	memcpy(buf, num, n);
	memcpy(buf + n, suf, strlen(suf) + 1);
	return (int)(n + strlen(suf));
}
