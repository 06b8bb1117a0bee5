/*
 * Bounded growable byte buffers.
 *
 * A buffer has a ceiling set at init. An append that would pass it frees
 * the buffer and returns -E2BIG; an allocation failure does the same with
 * -ENOMEM. Either way the caller never holds a half-built buffer. The
 * bytes are always followed by a NUL that len does not count.
 *
 *	struct kc_buf b;
 *	kc_buf_init(&b, KC_WATCH_EVENT_MAX);
 *	if ((r = kc_buf_append(&b, chunk, n)) < 0)
 *		return r;		(b is already empty)
 *	text = kc_buf_take(&b, &len);
 */
#ifndef KC_BUF_H
#define KC_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include <kc/macro.h>

struct kc_buf {
	char	*data;		/* NULL until the first append */
	size_t	 len;
	size_t	 cap;
	size_t	 max;		/* ceiling on len */
};

/*
 * Makes 'b' an empty buffer whose length may never pass 'max'. It holds
 * no memory until the first append; kc_buf_free() is fine at any time.
 */
void	 kc_buf_init(struct kc_buf *b, size_t max);

/*
 * Append bytes, a string, a byte or formatted text. 0 on success; on
 * -E2BIG (past the ceiling) or -ENOMEM the buffer has been freed and is
 * empty, as the header says. Not thread-safe: a buffer has one owner.
 */
int	 kc_buf_append(struct kc_buf *, const void *, size_t) _must_check_;
int	 kc_buf_puts(struct kc_buf *, const char *) _must_check_;
int	 kc_buf_putc(struct kc_buf *, char) _must_check_;
int	 kc_buf_printf(struct kc_buf *, const char *, ...) _printf_(2, 3) _must_check_;
int	 kc_buf_vprintf(struct kc_buf *, const char *, va_list) _must_check_;

/* The bytes as a string: "" while empty, never NULL. */
const char *kc_buf_str(const struct kc_buf *);

/*
 * Hands the bytes over (NUL-terminated; *ret_len may be NULL) and leaves
 * the buffer empty with the same ceiling. Returns "" allocated when empty,
 * or NULL on allocation failure.
 */
char	*kc_buf_take(struct kc_buf *, size_t *ret_len);

/* Empties the buffer, keeping its allocation. */
void	 kc_buf_reset(struct kc_buf *);

/* Frees the bytes; the buffer may be reused after kc_buf_init(). */
void	 kc_buf_free(struct kc_buf *);

#endif
