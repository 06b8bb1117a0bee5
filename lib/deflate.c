/*
 * deflate.c: deflate with a preset dictionary (kc/deflate.h), zlib.
 *
 * The bytes are in the zlib format (RFC 1950): two bytes of header, the
 * dictionary's Adler-32, the deflate data, the text's Adler-32, so
 * inflating with another dictionary, or damaged bytes, fail instead of
 * making another text. The window is the smallest power of two from
 * 512 bytes to 32 KiB that holds the dictionary and the text, so every
 * match into the dictionary is in reach; the header records it, and
 * inflate allocates no more window than that. The deflate
 * side uses level 6 with memLevel 4 (4 KiB of hash heads instead of
 * 64 KiB: the texts are small, and it compresses them as well). zlib
 * allocates through kc_malloc(), so a failing allocator reaches it.
 * Each call makes and frees its own stream: nothing is shared.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <zlib.h>

#include <kc/alloc.h>
#include <kc/deflate.h>
#include <kc/err.h>

#define LEVEL		6
#define MEM_LEVEL	4
#define WBITS_MIN	9
#define WBITS_MAX	15

static voidpf
z_alloc(voidpf opaque, uInt items, uInt size)
{
	(void)opaque;
	return kc_reallocarray(NULL, items, size);
}

static void
z_free(voidpf opaque, voidpf p)
{
	(void)opaque;
	kc_free(p);
}

/* The window both sides use for a text of 'len' and a dictionary of 'dlen'. */
static int
window_bits(size_t len, size_t dlen)
{
	int wb = WBITS_MIN;

	while (wb < WBITS_MAX && ((size_t)1 << wb) < len + dlen)
		wb++;
	return wb;
}

/* The part of a dictionary deflate uses: its last KC_DEFLATE_DICT_MAX bytes. */
static const Bytef *
dict_tail(const void *dict, size_t *dlen)
{
	if (dict == NULL)
		*dlen = 0;
	if (*dlen > KC_DEFLATE_DICT_MAX) {
		dict = (const char *)dict + (*dlen - KC_DEFLATE_DICT_MAX);
		*dlen = KC_DEFLATE_DICT_MAX;
	}
	return dict;
}

static int
z_error(int zr)
{
	switch (zr) {
	case Z_MEM_ERROR:
		return -ENOMEM;
	case Z_STREAM_ERROR:
	case Z_VERSION_ERROR:
		return -EINVAL;
	default:
		return KC_EPARSE;
	}
}

int
kc_deflate(const void *in, size_t len, const void *dict, size_t dlen, void **ret,
    size_t *ret_len)
{
	z_stream s = { .zalloc = z_alloc, .zfree = z_free };
	const Bytef *d = dict_tail(dict, &dlen);
	unsigned char *out = NULL, *shrunk;
	uLong bound;
	int zr, r;

	if (len > KC_DEFLATE_MAX)
		return -E2BIG;
	if ((zr = deflateInit2(&s, LEVEL, Z_DEFLATED, window_bits(len, dlen), MEM_LEVEL,
	    Z_DEFAULT_STRATEGY)) != Z_OK)
		return z_error(zr);
	if (dlen > 0 && (zr = deflateSetDictionary(&s, d, (uInt)dlen)) != Z_OK) {
		r = z_error(zr);
		goto out;
	}
	bound = deflateBound(&s, (uLong)len);
	if ((out = kc_malloc(bound)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	s.next_in = (Bytef *)(uintptr_t)in;	/* zlib does not write it */
	s.avail_in = (uInt)len;
	s.next_out = out;
	s.avail_out = (uInt)bound;
	if ((zr = deflate(&s, Z_FINISH)) != Z_STREAM_END) {
		r = zr == Z_OK || zr == Z_BUF_ERROR ? -ENOMEM : z_error(zr);
		goto out;
	}
	/* The bound is generous: give back what the bytes do not need. */
	if ((shrunk = kc_realloc(out, s.total_out)) != NULL)
		out = shrunk;
	*ret = out;
	*ret_len = s.total_out;
	out = NULL;
	r = 0;
out:
	(void)deflateEnd(&s);
	kc_free(out);
	return r;
}

int
kc_inflate(const void *z, size_t zlen, const void *dict, size_t dlen, size_t len,
    char **ret)
{
	z_stream s = { .zalloc = z_alloc, .zfree = z_free };
	const Bytef *d = dict_tail(dict, &dlen);
	char *out = NULL;
	int zr, r;

	if (len > KC_DEFLATE_MAX || zlen > UINT_MAX)
		return -E2BIG;
	/* 0: the window the header names (at most WBITS_MAX). */
	if ((zr = inflateInit2(&s, 0)) != Z_OK)
		return z_error(zr);
	/* One byte more than expected: a longer text is caught, not cut. */
	if ((out = kc_malloc(len + 1)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	s.next_in = (Bytef *)(uintptr_t)z;
	s.avail_in = (uInt)zlen;
	s.next_out = (Bytef *)out;
	s.avail_out = (uInt)len + 1;
	/* With a dictionary, inflate stops at once to ask for it (by checksum). */
	if ((zr = inflate(&s, Z_FINISH)) == Z_NEED_DICT) {
		if (dlen == 0 || (zr = inflateSetDictionary(&s, d, (uInt)dlen)) != Z_OK) {
			r = dlen > 0 && zr == Z_MEM_ERROR ? -ENOMEM : KC_EPARSE;
			goto out;
		}
		zr = inflate(&s, Z_FINISH);
	}
	if (zr != Z_STREAM_END || s.total_out != len || s.avail_in != 0) {
		r = zr == Z_MEM_ERROR ? -ENOMEM : KC_EPARSE;
		goto out;
	}
	out[len] = '\0';
	*ret = out;
	out = NULL;
	r = 0;
out:
	(void)inflateEnd(&s);
	kc_free(out);
	return r;
}
