/*
 * validation.c: Kubernetes names and labels, upstream's messages.
 *
 * The patterns are matched by hand rather than by regular expressions;
 * the messages quote upstream's regular expressions and examples through
 * regex_error(), which builds them as upstream's RegexError() does (note
 * its two spaces before each "or").
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <kc/macro.h>
#include <kc/validation.h>

#define DNS1123_LABEL_FMT	"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_SUBDOMAIN_FMT	DNS1123_LABEL_FMT "(\\." DNS1123_LABEL_FMT ")*"
#define DNS1035_LABEL_FMT	"[a-z]([-a-z0-9]*[a-z0-9])?"
#define QNAME_FMT		"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define LABEL_VALUE_FMT		"(" QNAME_FMT ")?"
#define CONFIG_KEY_FMT		"[-._a-zA-Z0-9]+"

#define DNS1123_LABEL_MSG	"a lowercase RFC 1123 label must consist of lower case " \
	"alphanumeric characters or '-', and must start and end with an alphanumeric " \
	"character"
#define DNS1123_SUBDOMAIN_MSG	"a lowercase RFC 1123 subdomain must consist of lower " \
	"case alphanumeric characters, '-' or '.', and must start and end with an " \
	"alphanumeric character"
#define DNS1035_LABEL_MSG	"a DNS-1035 label must consist of lower case alphanumeric " \
	"characters or '-', start with an alphabetic character, and end with an " \
	"alphanumeric character"
#define QNAME_MSG		"must consist of alphanumeric characters, '-', '_' or '.', " \
	"and must start and end with an alphanumeric character"
#define LABEL_VALUE_MSG		"a valid label must be an empty string or consist of " \
	"alphanumeric characters, '-', '_' or '.', and must start and end with an " \
	"alphanumeric character"
#define CONFIG_KEY_MSG		"a valid config key must consist of alphanumeric " \
	"characters, '-', '_' or '.'"

static void add(struct kc_valid *, const char *fmt, ...) _printf_(2, 3);

static void
add(struct kc_valid *v, const char *fmt, ...)
{
	va_list ap;

	if (v->n == KC_VALID_MSGS_MAX)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(v->msg[v->n++], KC_VALID_MSG_MAX, fmt, ap);
	va_end(ap);
}

/* RegexError(msg, fmt, examples...) behind 'prefix'; NULL ends 'ex'. */
static void
regex_error(struct kc_valid *v, const char *prefix, const char *msg, const char *fmt,
    const char *const *ex)
{
	char buf[160] = "";
	size_t off = 0;

	for (size_t i = 0; ex[i] != NULL; i++) {
		int w = snprintf(buf + off, sizeof(buf) - off, "%s'%s', ", i > 0 ? " or " : "",
		    ex[i]);

		if (w > 0)
			off = KC_MIN(off + (size_t)w, sizeof(buf) - 1);
	}
	add(v, "%s%s (%s%sregex used for validation is '%s')", prefix, msg,
	    off > 0 ? "e.g. " : "", buf, fmt);
}

static bool
lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool
alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool
kc_valid_is_dns1123_label(struct kc_str s)
{
	if (s.len == 0 || !lower_alnum(s.p[0]) || !lower_alnum(s.p[s.len - 1]))
		return false;
	for (size_t i = 1; i + 1 < s.len; i++)
		if (!lower_alnum(s.p[i]) && s.p[i] != '-')
			return false;
	return true;
}

bool
kc_valid_is_dns1123_subdomain(struct kc_str s)
{
	struct kc_str label;
	bool more;

	do {
		more = kc_str_cut(&s, '.', &label);
		if (!kc_valid_is_dns1123_label(label))
			return false;
	} while (more);
	return true;
}

bool
kc_valid_is_dns1035_label(struct kc_str s)
{
	return s.len > 0 && s.p[0] >= 'a' && s.p[0] <= 'z' && kc_valid_is_dns1123_label(s);
}

bool
kc_valid_is_qualified_part(struct kc_str s)
{
	if (s.len == 0 || !alnum(s.p[0]) || !alnum(s.p[s.len - 1]))
		return false;
	for (size_t i = 1; i + 1 < s.len; i++)
		if (!alnum(s.p[i]) && s.p[i] != '-' && s.p[i] != '_' && s.p[i] != '.')
			return false;
	return true;
}

static size_t
dns1123_subdomain(struct kc_str s, const char *prefix, struct kc_valid *v)
{
	size_t n = v->n;

	if (s.len > KC_DNS1123_SUBDOMAIN_MAX)
		add(v, "%smust be no more than %d characters", prefix,
		    KC_DNS1123_SUBDOMAIN_MAX);
	if (!kc_valid_is_dns1123_subdomain(s))
		regex_error(v, prefix, DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT,
		    (const char *const []){ "example.com", NULL });
	return v->n - n;
}

size_t
kc_valid_dns1123_label(struct kc_str s, struct kc_valid *v)
{
	v->n = 0;
	if (s.len > KC_DNS1123_LABEL_MAX)
		add(v, "must be no more than %d characters", KC_DNS1123_LABEL_MAX);
	if (!kc_valid_is_dns1123_label(s))
		regex_error(v, "", DNS1123_LABEL_MSG, DNS1123_LABEL_FMT,
		    (const char *const []){ "my-name", "123-abc", NULL });
	return v->n;
}

size_t
kc_valid_dns1123_subdomain(struct kc_str s, struct kc_valid *v)
{
	v->n = 0;
	return dns1123_subdomain(s, "", v);
}

size_t
kc_valid_dns1035_label(struct kc_str s, struct kc_valid *v)
{
	v->n = 0;
	if (s.len > KC_DNS1035_LABEL_MAX)
		add(v, "must be no more than %d characters", KC_DNS1035_LABEL_MAX);
	if (!kc_valid_is_dns1035_label(s))
		regex_error(v, "", DNS1035_LABEL_MSG, DNS1035_LABEL_FMT,
		    (const char *const []){ "my-name", "abc-123", NULL });
	return v->n;
}

size_t
kc_valid_qualified_name(struct kc_str s, struct kc_valid *v)
{
	struct kc_str name = s, prefix;
	size_t slashes = 0;

	v->n = 0;
	for (size_t i = 0; i < s.len; i++)
		slashes += s.p[i] == '/';
	if (slashes > 1) {
		regex_error(v, "a qualified name ", QNAME_MSG, QNAME_FMT,
		    (const char *const []){ "MyName", "my.name", "123-abc", NULL });
		(void)kc_strlcat(v->msg[0], " with an optional DNS subdomain prefix and '/' "
		    "(e.g. 'example.com/MyName')", KC_VALID_MSG_MAX);
		return v->n;
	}
	if (slashes == 1) {
		(void)kc_str_cut(&name, '/', &prefix);
		if (prefix.len == 0)
			add(v, "prefix part must be non-empty");
		else
			(void)dns1123_subdomain(prefix, "prefix part ", v);
	}
	if (name.len == 0)
		add(v, "name part must be non-empty");
	else if (name.len > KC_QUALIFIED_NAME_MAX)
		add(v, "name part must be no more than %d characters", KC_QUALIFIED_NAME_MAX);
	if (!kc_valid_is_qualified_part(name))
		regex_error(v, "name part ", QNAME_MSG, QNAME_FMT,
		    (const char *const []){ "MyName", "my.name", "123-abc", NULL });
	return v->n;
}

size_t
kc_valid_label_value(struct kc_str s, struct kc_valid *v)
{
	v->n = 0;
	if (s.len > KC_LABEL_VALUE_MAX)
		add(v, "must be no more than %d characters", KC_LABEL_VALUE_MAX);
	if (s.len > 0 && !kc_valid_is_qualified_part(s))
		regex_error(v, "", LABEL_VALUE_MSG, LABEL_VALUE_FMT,
		    (const char *const []){ "MyValue", "my_value", "12345", NULL });
	return v->n;
}

size_t
kc_valid_config_map_key(struct kc_str s, struct kc_valid *v)
{
	bool ok = s.len > 0;

	v->n = 0;
	for (size_t i = 0; i < s.len; i++)
		if (!alnum(s.p[i]) && s.p[i] != '-' && s.p[i] != '_' && s.p[i] != '.')
			ok = false;
	if (s.len > KC_DNS1123_SUBDOMAIN_MAX)
		add(v, "must be no more than %d characters", KC_DNS1123_SUBDOMAIN_MAX);
	if (!ok)
		regex_error(v, "", CONFIG_KEY_MSG, CONFIG_KEY_FMT,
		    (const char *const []){ "key.name", "KEY_NAME", "key-name", NULL });
	if (kc_str_eq_cstr(s, "."))
		add(v, "must not be '.'");
	else if (kc_str_eq_cstr(s, ".."))
		add(v, "must not be '..'");
	else if (kc_str_has_prefix(s, ".."))
		add(v, "must not start with '..'");
	return v->n;
}
