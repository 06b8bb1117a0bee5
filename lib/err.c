/*
 * err.c: the error table behind <kc/err.h>.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <kc/err.h>
#include <kc/str.h>

static const struct {
	int		 code;
	int		 http;
	const char	*name;
	const char	*reason;
	const char	*text;
} err_table[] = {
#define X(n, val, http, reason, text)	{ val, http, "KC_E" #n, reason, text },
	KC_ERR_MAP(X)
#undef X
};

static const struct {
	int		 err;
	const char	*name;
} errno_names[] = {
#define E(e)	{ e, #e }
	E(EPERM), E(ENOENT), E(ESRCH), E(EINTR), E(EIO), E(ENXIO), E(E2BIG),
	E(ENOEXEC), E(EBADF), E(ECHILD), E(EAGAIN), E(ENOMEM), E(EACCES),
	E(EFAULT), E(EBUSY), E(EEXIST), E(EXDEV), E(ENODEV), E(ENOTDIR),
	E(EISDIR), E(EINVAL), E(ENFILE), E(EMFILE), E(ENOTTY), E(EFBIG),
	E(ENOSPC), E(ESPIPE), E(EROFS), E(EMLINK), E(EPIPE), E(EDOM),
	E(ERANGE), E(EDEADLK), E(ENAMETOOLONG), E(ENOSYS), E(ENOTEMPTY),
	E(ELOOP), E(ENOMSG), E(ENODATA), E(ETIME), E(EPROTO), E(EBADMSG),
	E(EOVERFLOW), E(EILSEQ), E(ENOTSOCK), E(EMSGSIZE), E(EPROTONOSUPPORT),
	E(EOPNOTSUPP), E(EADDRINUSE), E(EADDRNOTAVAIL), E(ENETDOWN),
	E(ENETUNREACH), E(ECONNABORTED), E(ECONNRESET), E(ENOBUFS),
	E(EISCONN), E(ENOTCONN), E(ETIMEDOUT), E(ECONNREFUSED), E(EHOSTDOWN),
	E(EHOSTUNREACH), E(EALREADY), E(EINPROGRESS), E(ECANCELED),
#undef E
};

static int
table_index(int code)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(err_table); i++)
		if (err_table[i].code == code)
			return (int)i;
	return -1;
}

const char *
kc_strerror(int code)
{
	int i;

	if (code >= 0)
		return "success";
	if ((i = table_index(code)) >= 0)
		return err_table[i].text;
	/* strerrordesc_np() is thread-safe and returns static text. */
	const char *s = strerrordesc_np(-code);
	return s != NULL ? s : "unknown error";
}

const char *
kc_err_name(int code)
{
	int i;

	if (code >= 0)
		return "OK";
	if ((i = table_index(code)) >= 0)
		return err_table[i].name;
	for (size_t j = 0; j < KC_ARRAY_SIZE(errno_names); j++)
		if (errno_names[j].err == -code)
			return errno_names[j].name;
	const char *s = strerrorname_np(-code);
	return s != NULL ? s : "EUNKNOWN";
}

int
kc_err_http(int code)
{
	int i = table_index(code);

	return i >= 0 ? err_table[i].http : 0;
}

const char *
kc_err_reason(int code)
{
	int i = table_index(code);

	return i >= 0 ? err_table[i].reason : "";
}

int
kc_err_from_http(int http_code, const char *reason)
{
	if (reason != NULL && reason[0] != '\0') {
		for (size_t i = 0; i < KC_ARRAY_SIZE(err_table); i++)
			if (err_table[i].reason[0] != '\0' &&
			    strcmp(err_table[i].reason, reason) == 0)
				return err_table[i].code;
	}
	switch (http_code) {
	case 400: return KC_EBADREQUEST;
	case 401: return KC_EUNAUTHORIZED;
	case 403: return KC_EFORBIDDEN;
	case 404: return KC_ENOTFOUND;
	case 405: return KC_EMETHOD;
	case 406: return KC_ENOTACCEPTABLE;
	case 409: return KC_ECONFLICT;
	case 410: return KC_EGONE;
	case 413: return KC_ETOOLARGE;
	case 415: return KC_EMEDIATYPE;
	case 422: return KC_EINVALID;
	case 429: return KC_ETHROTTLED;
	case 503: return KC_EUNAVAILABLE;
	case 504: return KC_ETIMEOUT;
	}
	if (http_code >= 500 && http_code <= 599)
		return KC_EINTERNAL;
	return KC_EHTTP;
}

void
kc_status_clear(struct kc_status *st)
{
	if (st != NULL)
		memset(st, 0, sizeof(*st));
}

int
kc_status_set(struct kc_status *st, int code, const char *fmt, ...)
{
	char msg[KC_STATUS_MESSAGE_MAX];
	va_list ap;

	if (st == NULL)
		return code;
	/* Format first: the arguments may point into 'st' itself. */
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kc_status_clear(st);
	memcpy(st->message, msg, sizeof(msg));
	return code;
}
