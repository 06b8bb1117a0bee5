/*
 * String slices, checked number parsing, bounded copies and files.
 *
 * A slice (struct kc_str) points into someone else's bytes; parsers walk
 * slices instead of copying. The number parsers accept exactly a decimal
 * number (optional sign for the signed ones, no spaces, no junk after it)
 * and report overflow, unlike the banned libc conversions.
 */
#ifndef KC_STR_H
#define KC_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <kc/macro.h>

struct kc_str {
	const char	*p;
	size_t		 len;
};

#define KC_STR(lit)	((struct kc_str){ (lit), sizeof(lit) - 1 })

/*
 * Slices borrow their bytes: the caller keeps the string alive while a
 * slice of it is used. Comparisons are byte-wise; kc_str_has_prefix()
 * takes a NUL-terminated prefix. None of these allocate or fail.
 */
struct kc_str	 kc_str_from(const char *);	/* NULL gives the empty slice */
bool		 kc_str_eq(struct kc_str, struct kc_str);
bool		 kc_str_eq_cstr(struct kc_str, const char *);
bool		 kc_str_has_prefix(struct kc_str, const char *);
struct kc_str	 kc_str_trim(struct kc_str);	/* ASCII white space, both ends */

/*
 * Splits 's' at the first 'sep': '*head' gets what comes before it and 's'
 * is advanced past it. Returns false (and sets *head = s, s empty) when
 * 'sep' does not occur.
 */
bool		 kc_str_cut(struct kc_str *s, char sep, struct kc_str *head);

/* Newly allocated NUL-terminated copy, or NULL on allocation failure. */
char		*kc_str_dup(struct kc_str) _must_check_;

/* The value of hexadecimal digit 'c' (0-15), or -1 if it is not one. */
int		 kc_hex_digit(int c);

/*
 * UTF-8 as Go's unicode/utf8 reads it. kc_utf8_decode() returns the
 * length (1-4) of the sequence at 's' (at most 'n' bytes) and stores its
 * code point in '*ret'; it returns 0, leaving '*ret' alone, for an empty
 * input or an invalid, truncated, overlong or surrogate sequence, where
 * Go would decode U+FFFD of width 1. kc_utf8_encode() writes code point
 * 'c' (at most U+10FFFF; not checked) into 'out' and returns its length.
 */
size_t		 kc_utf8_decode(const char *s, size_t n, uint32_t *ret);
size_t		 kc_utf8_encode(uint32_t c, char out[4]);

/* Whether s[0..n) is valid UTF-8 throughout. */
bool		 kc_utf8_valid(const char *s, size_t n);

/*
 * A NUL-terminated copy of s[0..n) in which every byte that does not
 * start a valid sequence is U+FFFD, as encoding/json and Go's string
 * conversions write it; its length in '*ret_len'. NULL for -ENOMEM.
 */
char		*kc_utf8_dup_valid(const char *s, size_t n, size_t *ret_len) _must_check_;

/*
 * Go's unicode.IsPrint (and strconv.IsPrint): letters, marks, numbers,
 * punctuation, symbols and the ASCII space. The tables are Unicode 14
 * (scripts/gen-uniprint); Go 1.21 and later know Unicode 15, so the few
 * code points first assigned in 15 count as not printable here.
 */
bool		 kc_rune_is_print(uint32_t c);

/*
 * Decimal number parsing. 0 on success; -EINVAL for an empty string, a
 * sign where none is allowed, or any character that is not part of the
 * number; -ERANGE on overflow. '*ret' is untouched on failure.
 */
int	kc_parse_u64(const char *, uint64_t *ret) _must_check_;
int	kc_parse_i64(const char *, int64_t *ret) _must_check_;
int	kc_parse_u32(const char *, uint32_t *ret) _must_check_;
int	kc_parse_int(const char *, int *ret) _must_check_;
int	kc_str_to_u64(struct kc_str, uint64_t *ret) _must_check_;
int	kc_str_to_i64(struct kc_str, int64_t *ret) _must_check_;

/*
 * A non-negative Go duration (time.ParseDuration) in milliseconds:
 * "1500ms", "2s", "1.5h", "1m30s", "0". Units ns, us (or µs), ms, s, m,
 * h; a fraction is allowed on each number; precision below a millisecond
 * is rounded down. A bare number other than 0, a sign, an unknown unit
 * or empty input is -EINVAL; more than 10^15 ms is -ERANGE.
 */
int	kc_parse_duration_ms(const char *, uint64_t *ret) _must_check_;

/*
 * Copies like OpenBSD's strlcpy(): always NUL-terminates (size > 0) and
 * returns strlen(src); a result >= size means the copy was truncated.
 */
size_t	kc_strlcpy(char *dst, const char *src, size_t size);
size_t	kc_strlcat(char *dst, const char *src, size_t size);

/* Allocated printf. NULL on allocation failure. */
char	*kc_asprintf(const char *, ...) _printf_(1, 2) _must_check_;

/*
 * Reads a whole file of at most 'max' bytes into a NUL-terminated
 * allocation. -E2BIG when it is larger, -errno from the OS otherwise.
 * 'ret_len' may be NULL.
 */
int	kc_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
	    _must_check_;

/*
 * Writes 'len' bytes to 'path' atomically: a temporary file in the same
 * folder, fsync, rename. 'mode' is the new file's permission bits.
 */
int	kc_write_file_atomic(const char *path, const void *data, size_t len,
	    unsigned mode) _must_check_;

/*
 * RFC 3339 in UTC, as Kubernetes writes its times. kc_time_format_us()
 * formats 'us', microseconds since the epoch, at a precision:
 *
 *	KC_TIME_SEC	"2026-11-21T19:49:14Z"		metav1.Time
 *	KC_TIME_MILLI	"2026-11-21T19:49:14.123Z"	log lines
 *	KC_TIME_MICRO	"2026-11-21T19:49:14.123456Z"	metav1.MicroTime
 *	KC_TIME_NANO	"2026-11-21T19:49:14.123456000Z" RFC3339NanoFixed
 *
 * Fractions are fixed width and truncated, never rounded. 0, -EOVERFLOW
 * for a year outside 0-9999, -ENOBUFS when 'size' is too small (at most
 * KC_TIME_MAX is needed). kc_time_format(t) is KC_TIME_SEC of 't' seconds.
 */
#define KC_TIME_MAX	32

enum kc_time_prec {
	KC_TIME_SEC,
	KC_TIME_MILLI,
	KC_TIME_MICRO,
	KC_TIME_NANO,
};

int	kc_time_format(time_t t, char *buf, size_t size);
int	kc_time_format_us(int64_t us, enum kc_time_prec, char *buf, size_t size);

/* Parses RFC 3339 ("Z" or a numeric offset; fractional seconds ignored). */
int	kc_time_parse(const char *, time_t *ret) _must_check_;

/*
 * A duration of 'seconds' as kubectl's AGE column writes it (apimachinery's
 * duration.HumanDuration): "45s" below 2 minutes, "3m20s" below 10, "15m"
 * below 3 hours, "2h5m" below 8, "20h" below 2 days, "3d4h" below 8, "40d"
 * below 2 years, "2y30d" below 8, then "9y"; "0s" for -1 (clock skew) and
 * "<invalid>" below. Always NUL-terminated; at most KC_DURATION_HUMAN_MAX.
 */
#define KC_DURATION_HUMAN_MAX	32

void	kc_duration_human(int64_t seconds, char *buf, size_t size);

#endif
