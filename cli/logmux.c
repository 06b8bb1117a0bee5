/*
 * logmux.c: the line interleaver of "kubectl trainyard logs" (logs.h).
 *
 * Each node's stream arrives in pieces of any size. A source keeps the
 * unfinished line of its node (bounded: past LOGMUX_LINE_MAX the rest of
 * the line is dropped and the line says how much), and hands each whole
 * line, prefixed "[node-3] ", to the caller, which writes lines of every
 * node to stdout one whole line at a time: lines of different nodes
 * interleave, lines of one node stay in order.
 *
 * The streams are always read with timestamps=true. The timestamp is what
 * makes a resumed stream exact: the source remembers the time of the last
 * line passed on and how many lines carried exactly that time, and after
 * a reconnection (sinceTime, whole seconds, so it repeats up to a second
 * of lines) drops what it already passed on. Counting lines of equal time
 * matters: a program that prints a burst gets one timestamp per burst.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <kc/macro.h>
#include <kc/str.h>

#include "logs.h"

/* Foreground colours for the prefixes, as stern cycles them. */
static const char *const palette[] = {
	"\033[32m", "\033[33m", "\033[34m", "\033[35m", "\033[36m", "\033[91m",
	"\033[92m", "\033[93m", "\033[94m", "\033[95m", "\033[96m",
};

void
logmux_src_init(struct logmux_src *s, const char *label, int color, bool show_ts)
{
	memset(s, 0, sizeof(*s));
	s->show_ts = show_ts;
	if (color >= 0)
		(void)snprintf(s->prefix, sizeof(s->prefix), "%s[%.24s]\033[0m ",
		    palette[(size_t)color % KC_ARRAY_SIZE(palette)], label);
	else
		(void)snprintf(s->prefix, sizeof(s->prefix), "[%.24s] ", label);
}

int
logmux_parse_ts(const char *s, size_t len, int64_t *ret_s, int32_t *ret_ns)
{
	char buf[LOGMUX_TS_MAX];
	const char *dot;
	int32_t ns = 0;
	time_t t;
	int digits = 0;

	if (len < 20 || len >= sizeof(buf) || s[4] != '-' || s[10] != 'T')
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (kc_time_parse(buf, &t) < 0)
		return -EINVAL;
	if ((dot = strchr(buf, '.')) != NULL)
		for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 9)
				ns = ns * 10 + (*p - '0');
	for (int d = KC_MIN(digits, 9); d < 9; d++)
		ns *= 10;
	*ret_s = (int64_t)t;
	*ret_ns = ns;
	return 0;
}

static int
ts_cmp(int64_t as, int32_t ans, int64_t bs, int32_t bns)
{
	if (as != bs)
		return as < bs ? -1 : 1;
	return ans < bns ? -1 : ans > bns ? 1 : 0;
}

/* One whole line (without its end) in s->line: pass it on or drop it. */
static void
line_done(struct logmux_src *s, logmux_out_fn *fn, void *arg)
{
	const char *text = s->line, *sp;
	size_t tlen = s->len, n = 0, tslen = 0;
	int64_t ts = 0;
	int32_t tns = 0;
	bool stamped = false;

	sp = memchr(s->line, ' ', KC_MIN(s->len, (size_t)LOGMUX_TS_MAX));
	if (sp != NULL && logmux_parse_ts(s->line, (size_t)(sp - s->line), &ts, &tns) == 0) {
		stamped = true;
		tslen = (size_t)(sp - s->line);
		text = sp + 1;
		tlen = s->len - tslen - 1;
	}
	if (stamped && s->skipping) {
		int c = ts_cmp(ts, tns, s->skip_s, s->skip_ns);

		if (c < 0 || (c == 0 && s->skip_n > 0)) {
			if (c == 0)
				s->skip_n--;
			s->dropped++;
			goto out;
		}
		s->skipping = false;
	}
	if (stamped) {
		if (s->have_last && ts_cmp(ts, tns, s->last_s, s->last_ns) == 0)
			s->nlast++;
		else {
			s->have_last = true;
			s->last_s = ts;
			s->last_ns = tns;
			s->nlast = 1;
		}
	}
	n = (size_t)snprintf(s->out, sizeof(s->out), "%s", s->prefix);
	if (stamped && s->show_ts) {
		memcpy(s->out + n, s->line, tslen);
		n += tslen;
		s->out[n++] = ' ';
	}
	memcpy(s->out + n, text, tlen);
	n += tlen;
	if (s->cut > 0)
		n += (size_t)snprintf(s->out + n, sizeof(s->out) - n,
		    " [%llu more bytes cut]", (unsigned long long)s->cut);
	s->out[n++] = '\n';
	s->lines++;
	fn(arg, s->out, n);
out:
	s->len = 0;
	s->cut = 0;
}

void
logmux_feed(struct logmux_src *s, const char *data, size_t len, logmux_out_fn *fn, void *arg)
{
	while (len > 0) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl != NULL ? (size_t)(nl - data) : len, room;

		room = sizeof(s->line) - s->len;
		if (take <= room) {
			memcpy(s->line + s->len, data, take);
			s->len += take;
		} else {
			memcpy(s->line + s->len, data, room);
			s->len += room;
			s->cut += take - room;
		}
		if (nl == NULL)
			return;
		if (s->len > 0 && s->line[s->len - 1] == '\r' && s->cut == 0)
			s->len--;
		line_done(s, fn, arg);
		data = nl + 1;
		len -= take + 1;
	}
}

void
logmux_finish(struct logmux_src *s, logmux_out_fn *fn, void *arg)
{
	if (s->len > 0 || s->cut > 0) {
		if (s->len > 0 && s->line[s->len - 1] == '\r' && s->cut == 0)
			s->len--;
		line_done(s, fn, arg);
	}
}

void
logmux_resume(struct logmux_src *s)
{
	s->len = 0;
	s->cut = 0;
	if (!s->have_last)
		return;
	s->skipping = true;
	s->skip_s = s->last_s;
	s->skip_ns = s->last_ns;
	s->skip_n = s->nlast;
}

int
logmux_since_time(const struct logmux_src *s, char *buf, size_t size)
{
	if (!s->have_last)
		return -ENOENT;
	return kc_time_format((time_t)s->last_s, buf, size);
}
