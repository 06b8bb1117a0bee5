/*
 * str.c: slices, checked number parsing, bounded copies, files, time.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/macro.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "uniprint.h"

struct kc_str
kc_str_from(const char *s)
{
	return (struct kc_str){ s != NULL ? s : "", s != NULL ? strlen(s) : 0 };
}

bool
kc_str_eq(struct kc_str a, struct kc_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

bool
kc_str_eq_cstr(struct kc_str a, const char *s)
{
	return kc_str_eq(a, kc_str_from(s));
}

bool
kc_str_has_prefix(struct kc_str s, const char *prefix)
{
	size_t n = strlen(prefix);

	return s.len >= n && memcmp(s.p, prefix, n) == 0;
}

int
kc_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t
kc_utf8_decode(const char *s, size_t n, uint32_t *ret)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c;
	size_t len;

	if (n == 0)
		return 0;
	if (u[0] < 0x80) {
		*ret = u[0];
		return 1;
	}
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		len = 2;
		c = u[0] & 0x1f;
	} else if (u[0] >= 0xe0 && u[0] <= 0xef) {
		len = 3;
		c = u[0] & 0x0f;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		len = 4;
		c = u[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (u[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*ret = c;
	return len;
}

size_t
kc_utf8_encode(uint32_t c, char out[4])
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

bool
kc_utf8_valid(const char *s, size_t n)
{
	uint32_t c;
	size_t i, k;

	for (i = 0; i < n && (k = kc_utf8_decode(s + i, n - i, &c)) != 0; i += k)
		;
	return i == n;
}

char *
kc_utf8_dup_valid(const char *s, size_t n, size_t *ret_len)
{
	char *out;
	size_t o = 0, k;
	uint32_t c;

	if (n > (SIZE_MAX - 1) / 3 || (out = kc_malloc(n * 3 + 1)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += k) {
		if ((k = kc_utf8_decode(s + i, n - i, &c)) == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			k = 1;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
		}
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

bool
kc_rune_is_print(uint32_t c)
{
	size_t lo = 0, hi = KC_ARRAY_SIZE(uniprint);

	if (c < 0x80)
		return c >= 0x20 && c < 0x7f;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < uniprint[mid][0])
			hi = mid;
		else if (c > uniprint[mid][1])
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

struct kc_str
kc_str_trim(struct kc_str s)
{
	while (s.len > 0 && isspace((unsigned char)s.p[0])) {
		s.p++;
		s.len--;
	}
	while (s.len > 0 && isspace((unsigned char)s.p[s.len - 1]))
		s.len--;
	return s;
}

bool
kc_str_cut(struct kc_str *s, char sep, struct kc_str *head)
{
	const char *q = s->len > 0 ? memchr(s->p, sep, s->len) : NULL;

	if (q == NULL) {
		*head = *s;
		s->p += s->len;
		s->len = 0;
		return false;
	}
	head->p = s->p;
	head->len = (size_t)(q - s->p);
	s->len -= head->len + 1;
	s->p = q + 1;
	return true;
}

char *
kc_str_dup(struct kc_str s)
{
	char *p;

	if ((p = kc_malloc(s.len + 1)) == NULL)
		return NULL;
	if (s.len > 0)
		memcpy(p, s.p, s.len);
	p[s.len] = '\0';
	return p;
}

int
kc_str_to_u64(struct kc_str s, uint64_t *ret)
{
	uint64_t v = 0;

	if (s.len == 0)
		return -EINVAL;
	for (size_t i = 0; i < s.len; i++) {
		unsigned d;

		if (s.p[i] < '0' || s.p[i] > '9')
			return -EINVAL;
		d = (unsigned)(s.p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

int
kc_str_to_i64(struct kc_str s, int64_t *ret)
{
	bool neg = false;
	uint64_t u;
	int r;

	if (s.len > 0 && (s.p[0] == '-' || s.p[0] == '+')) {
		neg = s.p[0] == '-';
		s.p++;
		s.len--;
	}
	if ((r = kc_str_to_u64(s, &u)) < 0)
		return r;
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*ret = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	} else {
		if (u > INT64_MAX)
			return -ERANGE;
		*ret = (int64_t)u;
	}
	return 0;
}

int
kc_parse_u64(const char *s, uint64_t *ret)
{
	return kc_str_to_u64(kc_str_from(s), ret);
}

int
kc_parse_i64(const char *s, int64_t *ret)
{
	return kc_str_to_i64(kc_str_from(s), ret);
}

int
kc_parse_u32(const char *s, uint32_t *ret)
{
	uint64_t v;
	int r;

	if ((r = kc_parse_u64(s, &v)) < 0)
		return r;
	if (v > UINT32_MAX)
		return -ERANGE;
	*ret = (uint32_t)v;
	return 0;
}

int
kc_parse_int(const char *s, int *ret)
{
	int64_t v;
	int r;

	if ((r = kc_parse_i64(s, &v)) < 0)
		return r;
	if (v < INT_MIN || v > INT_MAX)
		return -ERANGE;
	*ret = (int)v;
	return 0;
}

int
kc_parse_duration_ms(const char *s, uint64_t *ret)
{
	static const struct {
		const char	*unit;
		uint64_t	 ns;
	} units[] = {
		/* Longer names first: "ms" before "m". */
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 },
		{ "\xce\xbcs", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "m", 60000000000 }, { "h", 3600000000000 },
	};
	const uint64_t max_ns = UINT64_C(1000000000000000) * 1000000;
	long double total = 0;
	const char *p = s;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ret = 0;
		return 0;
	}
	while (*p != '\0') {
		long double whole = 0, frac = 0, scale = 1;
		bool digits = false;
		size_t i, ulen = 0;

		for (; *p >= '0' && *p <= '9'; p++) {
			whole = whole * 10 + (*p - '0');
			digits = true;
			if (whole > (long double)max_ns)
				return -ERANGE;
		}
		if (*p == '.') {
			for (p++; *p >= '0' && *p <= '9'; p++) {
				if (scale < 1e30L) {
					scale *= 10;
					frac += (*p - '0') / scale;
				}
				digits = true;
			}
		}
		if (!digits)
			return -EINVAL;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			ulen = strlen(units[i].unit);
			if (strncmp(p, units[i].unit, ulen) == 0)
				break;
		}
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		/* "m" would match the start of "ms": the table lists ms first. */
		p += ulen;
		total += (whole + frac) * (long double)units[i].ns;
		if (total > (long double)max_ns)
			return -ERANGE;
	}
	*ret = (uint64_t)(total / 1000000.0L);
	return 0;
}

size_t
kc_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size > 0) {
		size_t c = n < size - 1 ? n : size - 1;

		memcpy(dst, src, c);
		dst[c] = '\0';
	}
	return n;
}

size_t
kc_strlcat(char *dst, const char *src, size_t size)
{
	size_t d = strnlen(dst, size);

	if (d == size)
		return size + strlen(src);
	return d + kc_strlcpy(dst + d, src, size - d);
}

char *
kc_asprintf(const char *fmt, ...)
{
	va_list ap, ap2;
	char *p;
	int n;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0 || (p = kc_malloc((size_t)n + 1)) == NULL) {
		va_end(ap);
		return NULL;
	}
	(void)vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int
kc_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	struct stat sb;
	char *p = NULL;
	size_t len = 0, cap;
	int fd, r;

	/* No file is larger than SSIZE_MAX; the cap keeps max + 1 from wrapping. */
	if (max > (size_t)SSIZE_MAX)
		max = (size_t)SSIZE_MAX;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		goto fail;
	}
	if (S_ISDIR(sb.st_mode)) {
		r = -EISDIR;
		goto fail;
	}
	/* Regular files tell their size; pipes and /proc files grow as read. */
	cap = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096;
	if (cap > max + 1)
		cap = max + 1;
	if ((p = kc_malloc(cap)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *q, probe;

			if (cap > max) {
				/* Full at the bound: larger only if a byte remains. */
				while ((n = read(fd, &probe, 1)) < 0 && errno == EINTR)
					;
				if (n == 0)
					break;
				r = n < 0 ? -errno : -E2BIG;
				goto fail;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			if ((q = kc_realloc(p, cap)) == NULL) {
				r = -ENOMEM;
				goto fail;
			}
			p = q;
		}
		n = read(fd, p + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	(void)close(fd);
	if (len > max) {
		kc_free(p);
		return -E2BIG;
	}
	p[len] = '\0';
	*ret = p;
	if (ret_len != NULL)
		*ret_len = len;
	return 0;
fail:
	kc_free(p);
	(void)close(fd);
	return r;
}

int
kc_write_file_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	_cleanup_(kc_freep) char *tmp = NULL;
	const char *p = data;
	int fd, r;

	if ((tmp = kc_asprintf("%s.tmp.%ld", path, (long)getpid())) == NULL)
		return -ENOMEM;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)) < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto fail;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	if (fd >= 0)
		(void)close(fd);
	(void)unlink(tmp);
	return r;
}

int
kc_time_format_us(int64_t us, enum kc_time_prec prec, char *buf, size_t size)
{
	static const int digits[] = { 0, 3, 6, 9 };
	int64_t sec = us / 1000000, frac = us % 1000000;
	time_t t;
	struct tm tm;
	int n;

	if (frac < 0) {
		frac += 1000000;
		sec--;
	}
	t = (time_t)sec;
	if (gmtime_r(&t, &tm) == NULL || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900)
		return -EOVERFLOW;
	if (prec == KC_TIME_MILLI)
		frac /= 1000;
	else if (prec == KC_TIME_NANO)
		frac *= 1000;
	if (prec == KC_TIME_SEC)
		n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
		    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	else
		n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%0*" PRId64 "Z",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		    tm.tm_sec, digits[prec], frac);
	if (n < 0 || (size_t)n >= size) {
		if (size > 0)
			buf[0] = '\0';
		return -ENOBUFS;
	}
	return 0;
}

int
kc_time_format(time_t t, char *buf, size_t size)
{
	if (t > INT64_MAX / 1000000 || t < INT64_MIN / 1000000)
		return -EOVERFLOW;
	return kc_time_format_us((int64_t)t * 1000000, KC_TIME_SEC, buf, size);
}

static int
take_digits(const char **s, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*ret = v;
	return 0;
}

static int
expect_char(const char **s, char c)
{
	if (**s != c)
		return -EINVAL;
	(*s)++;
	return 0;
}

int
kc_time_parse(const char *s, time_t *ret)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	time_t t;

	if (take_digits(&s, 4, &y) < 0 || expect_char(&s, '-') < 0 ||
	    take_digits(&s, 2, &mo) < 0 || expect_char(&s, '-') < 0 ||
	    take_digits(&s, 2, &d) < 0 ||
	    (*s != 'T' && *s != 't' && *s != ' ') || (s++, 0) ||
	    take_digits(&s, 2, &h) < 0 || expect_char(&s, ':') < 0 ||
	    take_digits(&s, 2, &mi) < 0 || expect_char(&s, ':') < 0 ||
	    take_digits(&s, 2, &sec) < 0)
		return -EINVAL;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'Z' || *s == 'z')
		s++;
	else if (*s == '+' || *s == '-') {
		sign = *s == '-' ? -1 : 1;
		s++;
		if (take_digits(&s, 2, &oh) < 0 || expect_char(&s, ':') < 0 ||
		    take_digits(&s, 2, &om) < 0)
			return -EINVAL;
	} else
		return -EINVAL;
	if (*s != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 60 || oh > 23 || om > 59)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -EINVAL;
	*ret = t - sign * (oh * 3600 + om * 60);
	return 0;
}

void
kc_duration_human(int64_t seconds, char *buf, size_t size)
{
	int64_t minutes = seconds / 60, hours = seconds / 3600, days = seconds / 86400;
	int64_t a, b = 0;
	const char *ua, *ub = "";

	if (seconds < -1) {
		(void)kc_strlcpy(buf, "<invalid>", size);
		return;
	}
	if (seconds < 120) {
		a = seconds < 0 ? 0 : seconds;
		ua = "s";
	} else if (minutes < 10) {
		a = minutes, ua = "m", b = seconds % 60, ub = "s";
	} else if (minutes < 3 * 60) {
		a = minutes, ua = "m";
	} else if (hours < 8) {
		a = hours, ua = "h", b = minutes % 60, ub = "m";
	} else if (hours < 48) {
		a = hours, ua = "h";
	} else if (hours < 8 * 24) {
		a = days, ua = "d", b = hours % 24, ub = "h";
	} else if (hours < 2 * 365 * 24) {
		a = days, ua = "d";
	} else if (hours < 8 * 365 * 24) {
		a = days / 365, ua = "y", b = days % 365, ub = "d";
	} else {
		a = days / 365, ua = "y";
	}
	if (b != 0)
		(void)snprintf(buf, size, "%" PRId64 "%s%" PRId64 "%s", a, ua, b, ub);
	else
		(void)snprintf(buf, size, "%" PRId64 "%s", a, ua);
}
