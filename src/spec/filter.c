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

/* ---- the kernel's side: perf_event_parse_addr_filter() ------------------ */

void prec_addr_filters_free(struct prec_addr_filter *f, int n)
{
	int i;

	for (i = 0; f && i < n; i++)
		free(f[i].path);
	free(f);
}

/* kstrtoul(s, 0, ...): the whole of @s is one number (0x hex, 0 octal, decimal). */
static int kernel_number(const char *s, size_t len, uint64_t *v)
{
	char buf[32];

	if (!len || len >= sizeof(buf) || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	return prec_parse_u64(buf, 0, v) ? -EINVAL : 0;
}

/* A SOURCE token (if_tokens' %u/%u@%s, %u/%u, %u@%s, %u) into @f. */
static int parse_source(const char *tok, struct prec_addr_filter *f)
{
	size_t a = strcspn(tok, "/@");
	const char *p = tok + a;

	if (kernel_number(tok, a, &f->offset))
		return -EINVAL;
	if (*p == '/') {
		size_t b = strcspn(p + 1, "@");

		if (kernel_number(p + 1, b, &f->size))
			return -EINVAL;
		p += 1 + b;
	}
	if (*p == '@') {
		if (!p[1])
			return -EINVAL;
		f->path = strdup(p + 1);
		if (!f->path)
			return -ENOMEM;
	}
	return 0;
}

int prec_addr_filters_parse(const char *text, bool exclude_kernel, struct prec_addr_filter **out)
{
	static const char *const actions[] = { "filter", "start", "stop" };
	struct prec_addr_filter *f = NULL;
	char *copy = strdup(text ? text : ""), *s, *tok;
	int n = 0, err = 0;
	bool want_source = false;

	*out = NULL;
	if (!copy)
		return -ENOMEM;
	for (s = copy; !err && (tok = strsep(&s, " ,\n"));) {
		size_t k;

		if (!*tok)
			continue;
		if (!want_source) {
			void *g = realloc(f, (size_t)(n + 1) * sizeof(*f));

			if (!g) {
				err = -ENOMEM;
				break;
			}
			f = g;
			memset(&f[n], 0, sizeof(*f));
			for (k = 0; k < 3 && strcmp(tok, actions[k]); k++)
				;
			if (k == 3)
				err = -EINVAL;
			f[n].action = (enum prec_af_action)k;
			want_source = true;
			continue;
		}
		err = parse_source(tok, &f[n]);
		/* A range filter needs a size; kernel addresses not with exclude_kernel. */
		if (!err && ((f[n].action == PREC_AF_FILTER && !f[n].size) ||
			     (!f[n].path && exclude_kernel)))
			err = -EINVAL;
		n++;
		want_source = false;
	}
	if (!err && want_source)
		err = -EINVAL; /* an action without its source */
	free(copy);
	if (err) {
		prec_addr_filters_free(f, n + (want_source ? 1 : 0));
		return err;
	}
	*out = f;
	return n;
}
