/*
 * Compact storage of many similar small texts.
 *
 * A cache that keeps the JSON text of thousands of objects of one kind
 * (trainyard-controller keeps each Run's) can store it deflated (zlib's
 * format, RFC 1950 and 1951) with a preset dictionary: a text that
 * looks like those objects, with their keys and usual values, so that
 * even the first bytes of each text find long matches. A Run of 1.7 KB
 * becomes about 150 bytes this way, where deflate alone makes 650; it
 * costs about 10 us to deflate and 3 us to inflate again. The caller
 * keeps the original length beside the bytes.
 *
 *	static const char dict[] = "{\"apiVersion\":\"example.dev/v1\",...";
 *
 *	r = kc_deflate(text, len, dict, sizeof(dict) - 1, &z, &zlen);
 *	...
 *	r = kc_inflate(z, zlen, dict, sizeof(dict) - 1, len, &text);
 *
 * The dictionary must stay the same between the two calls: the bytes
 * carry its checksum and the text's, so another dictionary or damaged
 * bytes fail (KC_EPARSE). Only its last KC_DEFLATE_DICT_MAX bytes count.
 */
#ifndef KC_DEFLATE_H
#define KC_DEFLATE_H

#include <stddef.h>

#include <kc/macro.h>

/* Longest text either function takes or makes: -E2BIG past it. */
#define KC_DEFLATE_MAX		(16u << 20)

/* Longest useful dictionary (deflate's window is 32 KiB). */
#define KC_DEFLATE_DICT_MAX	(16u << 10)

/*
 * Deflates the 'len' bytes of 'in' with the preset dictionary 'dict' of
 * 'dlen' bytes (NULL and 0 for none) into a new buffer, *ret (kc_free())
 * of *ret_len bytes. 0, -E2BIG or -ENOMEM; the out-parameters are set only
 * on success. Thread-safe.
 */
int	kc_deflate(const void *in, size_t len, const void *dict, size_t dlen, void **ret,
	    size_t *ret_len) _must_check_;

/*
 * Inflates 'zlen' bytes that kc_deflate() made with the same dictionary
 * back into a new NUL-terminated buffer, *ret (kc_free()), of the 'len'
 * bytes they were made from. KC_EPARSE when the bytes are corrupt, were
 * made with another dictionary or do not make exactly 'len' bytes;
 * -E2BIG, -ENOMEM. *ret is set only on success. Thread-safe.
 */
int	kc_inflate(const void *z, size_t zlen, const void *dict, size_t dlen, size_t len,
	    char **ret) _must_check_;

#endif
