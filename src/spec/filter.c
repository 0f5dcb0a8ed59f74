// SPDX-License-Identifier: MIT
/* --filter: perf's address filter syntax into the kernel's, with symbols resolved. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/filter.h"
#include "spec/uprobe.h"

/* One filter as written. */
struct item {
	const char *action;	/* "filter", "start", "stop" */
	char start[256], size[64], obj[4096];
	long pos;		/* its column in the text */
};

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Copies characters up to one of @stops (or a blank), trailing blanks dropped. */
static const char *take(const char *p, const char *stops, char *out, size_t size)
{
	size_t n = 0;

	p = skip_ws(p);
	while (*p && !strchr(stops, *p) && n + 1 < size)
		out[n++] = *p++;
	while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
		n--;
	out[n] = '\0';
	return p;
}

static int parse_item(const char *s, size_t len, long pos, struct item *it, struct prec_diag *d)
{
	static const char *actions[] = { "filter", "start", "stop" };
	char buf[4600];
	const char *p;
	size_t i, n;

	memset(it, 0, sizeof(*it));
	it->pos = pos;
	if (len >= sizeof(buf))
		return prec_diag_set(d, -PREC_E_SYNTAX, pos, "--filter: a filter too long");
	memcpy(buf, s, len);
	buf[len] = '\0';
	p = skip_ws(buf);
	for (i = 0; i < 3; i++) {
		n = strlen(actions[i]);
		if (!strncmp(p, actions[i], n) && (p[n] == ' ' || p[n] == '\t'))
			break;
	}
	if (i == 3) {
		prec_diag_set(d, -PREC_E_SYNTAX, pos + (long)(p - buf),
			      "--filter: expected 'filter', 'start' or 'stop'");
		prec_diag_hint(d, "e.g. --filter 'filter main @ /bin/prog' or 'start 0x1130 @ /bin/prog'");
		return -PREC_E_SYNTAX;
	}
	it->action = actions[i];
	p = take(p + n, "/@", it->start, sizeof(it->start));
	if (*p == '/')
		p = take(p + 1, "@", it->size, sizeof(it->size));
	if (*p == '@')
		p = take(p + 1, "", it->obj, sizeof(it->obj));
	if (!it->start[0] || (*p && *p != '\0') || strpbrk(it->start, " \t") ||
	    strpbrk(it->size, " \t")) {
		prec_diag_set(d, -PREC_E_SYNTAX, pos, "--filter: '%s' is not ACTION START[/SIZE] [@ OBJ]",
			      buf);
		return -PREC_E_SYNTAX;
	}
	if (it->size[0] && strcmp(it->action, "filter"))
		return prec_diag_set(d, -PREC_E_SYNTAX, pos, "--filter: '%s' takes no size (only "
				     "'filter' is a range)", it->action);
	return 0;
}

static bool is_number(const char *s)
{
	uint64_t v;

	return !prec_parse_u64(s, 0, &v);
}

/* START (and SIZE) of @it in its object: file offsets via the ELF program headers. */
static int resolve_file(struct item *it, uint64_t *off, uint64_t *size, struct prec_diag *d)
{
	struct prec_uprobe_target t;
	uint64_t v = 0;
	int err;

	err = prec_uprobe_resolve(it->obj, it->start, 0, &t, d);
	if (err) {
		d->pos = it->pos;
		return err;
	}
	*off = t.file_offset;
	*size = t.sym_size;
	snprintf(it->obj, sizeof(it->obj), "%s", t.path);
	prec_uprobe_target_fini(&t);
	if (it->size[0]) {
		if (prec_parse_u64(it->size, 0, &v) || !v)
			return prec_diag_set(d, -PREC_E_SYNTAX, it->pos,
					     "--filter: size '%s' is not a positive number", it->size);
		*size = v;
	}
	return 0;
}

static int emit(const struct item *it, struct prec_buf *out, struct prec_diag *d)
{
	uint64_t off, size = 0;
	int err;

	if (!it->obj[0]) {
		/* A kernel address: passed on as written. */
		if (!is_number(it->start) || (it->size[0] && !is_number(it->size)))
			return prec_diag_set(d, -PREC_E_SYNTAX, it->pos,
					     "--filter: '%s' without '@ OBJ' must be a kernel address "
					     "(kernel symbols are not looked up)", it->start);
		if (!strcmp(it->action, "filter") && !it->size[0])
			return prec_diag_set(d, -PREC_E_SYNTAX, it->pos,
					     "--filter: a kernel range needs ADDR/SIZE");
		return prec_buf_printf(out, "%s%s %s%s%s", out->len ? "," : "", it->action,
				       it->start, it->size[0] ? "/" : "", it->size);
	}
	err = resolve_file((struct item *)it, &off, &size, d);
	if (err)
		return err;
	if (!strcmp(it->action, "filter")) {
		/* The kernel refuses a zero-length range (perf_event_parse_addr_filter()). */
		if (!size)
			return prec_diag_set(d, -EINVAL, it->pos, "--filter: '%s' has no size; give "
					     "START/SIZE", it->start);
		return prec_buf_printf(out, "%sfilter 0x%llx/0x%llx@%s", out->len ? "," : "",
				       (unsigned long long)off, (unsigned long long)size, it->obj);
	}
	return prec_buf_printf(out, "%s%s 0x%llx@%s", out->len ? "," : "", it->action,
			       (unsigned long long)off, it->obj);
}

int prec_filter_resolve(const char *text, struct prec_buf *out, unsigned *nranges,
			struct prec_diag *d)
{
	const char *p = text;
	int err = 0;

	*nranges = 0;
	while (!err) {
		size_t len = strcspn(p, ",\n");
		struct item it;

		if (len || p[len]) {
			const char *q = skip_ws(p);

			if ((size_t)(q - p) == len) {
				err = prec_diag_set(d, -PREC_E_SYNTAX, (long)(p - text),
						    "--filter: an empty filter");
				break;
			}
			err = parse_item(p, len, (long)(p - text), &it, d);
			if (!err)
				err = emit(&it, out, d);
			if (!err)
				(*nranges)++;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	if (!err && !*nranges)
		err = prec_diag_set(d, -PREC_E_SYNTAX, 0, "--filter: no filter given");
	return err;
}

int prec_filter_check_ranges(const char *pmu, unsigned have, unsigned given, struct prec_diag *d)
{
	if (given <= have)
		return 0;
	prec_diag_set(d, -EOPNOTSUPP, -1, "%s on this CPU has %u address range%s; %u given", pmu,
		      have, have == 1 ? "" : "s", given);
	prec_diag_hint(d, have ? "join filters or trace more and filter when decoding" :
				 "this tracer cannot filter by address here; filter when decoding");
	return -EOPNOTSUPP;
}
