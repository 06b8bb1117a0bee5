/*
 * Bounded string building into a caller's fixed buffer, Go quoting and
 * Go's shortest float formatting.
 *
 * A struct kc_sbuf never fails and never allocates: what does not fit is
 * counted, not written, as snprintf() does, so kc_sbuf_end() returns the
 * length the whole text would have had and a result >= size means it was
 * cut. The buffer always holds a NUL-terminated prefix of that text, cut
 * only between whole units: never inside a UTF-8 sequence given to
 * kc_sbuf_puts() nor inside an escape or a character kc_sbuf_quote()
 * writes, and a quoted string that was cut still ends with its closing
 * quote. Once a unit has not fit, nothing more is written.
 *
 *	char msg[256];
 *	struct kc_sbuf b;
 *
 *	kc_sbuf_init(&b, msg, sizeof(msg));
 *	kc_sbuf_puts(&b, "User ");
 *	kc_sbuf_quote(&b, user, strlen(user));	("User \"alice\"")
 *	if (kc_sbuf_end(&b) >= sizeof(msg))
 *		...truncated...
 *
 * With KC_SBUF_HTML set in 'flags', &, < and > are written as &amp;,
 * &lt; and &gt; (upstream's responsewriters sanitizer).
 */
#ifndef KC_SBUF_H
#define KC_SBUF_H

#include <stdbool.h>
#include <stddef.h>

#include <kc/macro.h>

enum {
	KC_SBUF_HTML	= 1 << 0,
};

struct kc_sbuf {
	char		*buf;
	size_t		 size;
	size_t		 len;		/* the length wanted so far */
	size_t		 used;		/* bytes in buf, < size */
	unsigned	 flags;		/* KC_SBUF_* */
	bool		 full;		/* a unit did not fit */
};

/* Starts an empty text in buf[0..size); size may be 0 (buf then unused). */
void	kc_sbuf_init(struct kc_sbuf *, char *buf, size_t size);

void	kc_sbuf_putc(struct kc_sbuf *, char c);
void	kc_sbuf_put(struct kc_sbuf *, const char *s, size_t n);
void	kc_sbuf_puts(struct kc_sbuf *, const char *s);	/* NULL: nothing */
void	kc_sbuf_printf(struct kc_sbuf *, const char *fmt, ...) _printf_(2, 3);

/*
 * Appends s[0..n) quoted exactly as Go's strconv.Quote (and fmt's %q)
 * does: "..." with \" and \\, \a \b \f \n \r \t \v, \xNN for other
 * control bytes and for each byte that is not valid UTF-8, \uNNNN or
 * \UNNNNNNNN for other code points that unicode.IsPrint rejects, and
 * every printable character as is. kc_sbuf_quote_inner() appends the
 * same without the surrounding quotes.
 */
void	kc_sbuf_quote(struct kc_sbuf *, const char *s, size_t n);
void	kc_sbuf_quote_inner(struct kc_sbuf *, const char *s, size_t n);

/* True once something did not fit. */
bool	kc_sbuf_truncated(const struct kc_sbuf *);

/* The length the whole text wanted (the buffer is always terminated). */
size_t	kc_sbuf_end(const struct kc_sbuf *);

/*
 * Go's strconv.Quote of the NUL-terminated 's' (NULL as ""), or of
 * s[0..n), into buf[0..size), cut as above; returns buf.
 */
const char	*kc_sbuf_quoted(char *buf, size_t size, const char *s);
const char	*kc_sbuf_quoted_len(char *buf, size_t size, const char *s, size_t n);

/*
 * Go's shortest text of a float: the fewest digits that read back as the
 * same value, laid out as
 *	KC_FLOAT_G64	strconv.FormatFloat(v, 'g', -1, 64), which fmt's %v
 *			prints: "1", "0.5", "1e+06", "1.5e-07", "-0", and
 *			"NaN", "+Inf", "-Inf";
 *	KC_FLOAT_G32	the same of float32(v) (sigs.k8s.io/yaml's float keys);
 *	KC_FLOAT_JSON	encoding/json: 'f' layout, 'e' below 1e-6 and from
 *			1e21 with a one-digit negative exponent kept short
 *			("0.000001", "1e-7", "1e+21"); encoding/json refuses
 *			NaN and infinities: they are written "null".
 * KC_FLOAT_MAX is room for any of them.
 */
enum kc_float_style {
	KC_FLOAT_G64,
	KC_FLOAT_G32,
	KC_FLOAT_JSON,
};
#define KC_FLOAT_MAX	32

void	kc_sbuf_float(struct kc_sbuf *, double v, enum kc_float_style);
/* The same into buf[0..size) (KC_FLOAT_MAX is enough); returns buf. */
const char	*kc_sbuf_float_str(char *buf, size_t size, double v, enum kc_float_style);

#endif
