/*
 * base64.c: RFC 4648 base64 on OpenSSL's EVP_EncodeBlock() and
 * EVP_DecodeBlock().
 *
 * OpenSSL does the arithmetic; this file does what it leaves out: the URL
 * alphabet and unpadded form, checks of the alphabet and of the padding
 * before decoding (EVP_DecodeBlock() skips white space at the ends and
 * counts padding as zero bytes), and skipping line breaks in the middle.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include <kc/alloc.h>
#include <kc/base64.h>

#define BASE64_INPUT_MAX	(1u << 30)

static void
why_set(char *why, size_t size, const char *fmt, size_t arg)
{
	if (why != NULL && size > 0)
		(void)snprintf(why, size, fmt, arg);
}

static void
wipe_free(char *p, size_t len)
{
	if (p != NULL) {
		explicit_bzero(p, len);
		kc_free(p);
	}
}

size_t
kc_base64_encoded_len(size_t len, unsigned flags)
{
	if (flags & KC_BASE64_URL)
		return len / 3 * 4 + (len % 3 == 0 ? 0 : len % 3 + 1);
	return (len + 2) / 3 * 4;
}

int
kc_base64_encode(const void *data, size_t len, unsigned flags, char **ret, size_t *ret_len)
{
	size_t n = kc_base64_encoded_len(len, flags);
	char *out;

	if (len > BASE64_INPUT_MAX)
		return -E2BIG;
	if ((out = kc_malloc((len + 2) / 3 * 4 + 1)) == NULL)
		return -ENOMEM;
	(void)EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	if (flags & KC_BASE64_URL) {
		for (size_t i = 0; i < n; i++) {
			if (out[i] == '+')
				out[i] = '-';
			else if (out[i] == '/')
				out[i] = '_';
		}
		out[n] = '\0';
	}
	*ret = out;
	if (ret_len != NULL)
		*ret_len = n;
	return 0;
}

static bool
skipped(char c, unsigned flags)
{
	if (c == '\r' || c == '\n')
		return flags & (KC_BASE64_LINES | KC_BASE64_SPACE);
	if (c == ' ' || c == '\t')
		return flags & KC_BASE64_SPACE;
	return false;
}

/* The standard alphabet's character for 'c', or 0 if it is not one. */
static char
digit(char c, unsigned flags)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
		return c;
	if (flags & KC_BASE64_URL)
		return c == '-' ? '+' : c == '_' ? '/' : 0;
	return c == '+' || c == '/' ? c : 0;
}

int
kc_base64_decode(const char *text, size_t len, unsigned flags, char **ret, size_t *ret_len,
    char *why, size_t why_size)
{
	size_t n = 0, pad = 0, outlen;
	char *clean = NULL, *out = NULL;
	int d, r;

	if (len > BASE64_INPUT_MAX)
		return -E2BIG;
	if ((clean = kc_malloc(len + 4)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (skipped(c, flags))
			continue;
		if (c == '=' && !(flags & KC_BASE64_URL)) {
			pad++;
		} else if (pad > 0 || (c = digit(c, flags)) == 0) {
			why_set(why, why_size, "invalid base64 at offset %zu", i);
			r = -EINVAL;
			goto out;
		}
		clean[n++] = c;
	}
	if (pad > 2) {
		why_set(why, why_size, "invalid base64: more than two '=' of padding", 0);
		r = -EINVAL;
		goto out;
	}
	if (flags & KC_BASE64_URL) {
		if (n % 4 == 1) {
			why_set(why, why_size, "invalid base64: %zu characters cannot end "
			    "a base64url text", n);
			r = -EINVAL;
			goto out;
		}
		while (n % 4 != 0) {
			clean[n++] = '=';
			pad++;
		}
	} else if (n % 4 != 0) {
		why_set(why, why_size, "invalid base64: %zu characters is not a whole "
		    "number of 4-character groups (bad padding?)", n);
		r = -EINVAL;
		goto out;
	}
	clean[n] = '\0';
	if ((out = kc_malloc(n / 4 * 3 + 1)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	d = EVP_DecodeBlock((unsigned char *)out, (unsigned char *)clean, (int)n);
	if (d < 0 || (size_t)d != n / 4 * 3) {
		why_set(why, why_size, "invalid base64", 0);
		r = -EINVAL;
		goto out;
	}
	outlen = (size_t)d - pad;
	out[outlen] = '\0';
	*ret = out;
	out = NULL;
	if (ret_len != NULL)
		*ret_len = outlen;
	r = 0;
out:
	wipe_free(clean, len + 4);
	wipe_free(out, n / 4 * 3 + 1);
	return r;
}
