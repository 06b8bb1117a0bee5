/*
 * Base64 (RFC 4648) through OpenSSL, in the variants Kubernetes uses.
 *
 * Standard base64 with padding is what encoding/json writes for []byte
 * (Secret data, certificates in kubeconfigs). KC_BASE64_URL is the URL
 * alphabet without padding (JWTs, RFC 7515). The decoder is strict by
 * default (no white space, padding exactly as encoded); KC_BASE64_LINES
 * skips '\r' and '\n' anywhere, as Go's StdEncoding.DecodeString and so
 * kube-apiserver do, and KC_BASE64_SPACE also skips spaces and tabs
 * (kubeconfig -data fields, which YAML may fold).
 *
 * Results are NUL-terminated allocations the caller frees with kc_free()
 * (kc_free_secret() for secrets); the NUL is not counted. Temporary copies
 * of the input are wiped before they are freed.
 */
#ifndef KC_BASE64_H
#define KC_BASE64_H

#include <stddef.h>

#include <kc/macro.h>

enum {
	KC_BASE64_URL	= 1 << 0,	/* '-' and '_', no padding */
	KC_BASE64_LINES	= 1 << 1,	/* decode: skip CR and LF */
	KC_BASE64_SPACE	= 1 << 2,	/* decode: skip CR, LF, space and tab */
};

/* Bytes of the encoding of 'len' bytes (without its NUL). */
size_t	kc_base64_encoded_len(size_t len, unsigned flags);

/*
 * Encodes data[0..len). 0, -ENOMEM, or -E2BIG past 1 GiB of input.
 * 'ret_len' may be NULL.
 */
int	kc_base64_encode(const void *data, size_t len, unsigned flags, char **ret,
	    size_t *ret_len) _must_check_;

/*
 * Decodes text[0..len). 0; -EINVAL for anything that is not base64 in
 * the variant 'flags' names, with a reason in 'why' (which may be NULL):
 * "invalid base64 at offset N" and the like; -E2BIG past 1 GiB; -ENOMEM.
 * 'ret_len' may be NULL. '*ret' is untouched on failure.
 */
int	kc_base64_decode(const char *text, size_t len, unsigned flags, char **ret,
	    size_t *ret_len, char *why, size_t why_size) _must_check_;

#endif
