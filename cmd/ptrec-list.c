// SPDX-License-Identifier: MIT
/* ptrec list: PMUs with their terms, generic events, tracepoints; and -e checks. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "spec/attr.h"
#include "cli.h"
#include "spec/evspec.h"
#include "spec/pmu.h"
#include "ptrec-cmds.h"
#include "base/util.h"

static const char list_help[] =
	"usage: ptrec list [--emulate] [GLOB...]\n"
	"       ptrec list [--emulate] -e SPEC [-e SPEC...]\n"
	"       ptrec list [--emulate] --names pmus|events|tracepoints|terms PMU\n"
	"       ptrec list [--emulate] --sysfs PMU\n"
	"\n"
	"Lists the PMUs of this machine with their terms (name and bit field), the\n"
	"generic events, the terms every event takes, and the tracepoints. GLOB\n"
	"patterns (shell wildcards, quoted) keep only the names they match: PMU names,\n"
	"event names, and tracepoints as SUBSYSTEM:NAME.\n"
	"\n"
	"  -e, --event SPEC  parse and resolve an event specification as 'ptrec record'\n"
	"                    would, and print the groups and perf_event_attr fields\n"
	"  --emulate         as for 'ptrec record --emulate': intel_pt and pt name the\n"
	"                    software tracer, syscall tracepoints need no tracefs\n"
	"  --names KIND      one name per line, for shell completion: pmus, events,\n"
	"                    tracepoints, or terms PMU\n"
	"  --sysfs PMU       the PMU as sysfs describes it, one 'PATH VALUE' per line\n"
	"                    (type, nr_addr_filters, format/*, caps/*, events/*, sinks/*)\n"
	"  -h, --help        this text\n"
	"\n"
	"Exit status: 0 on success, 1 when sysfs or tracefs cannot be read, 2 for bad\n"
	"options or a bad event specification. See ptrec-list(1) and, for the event\n"
	"syntax, ptrec(1).\n";

struct list_opts {
	bool emulate;
	char **globs;
	int nglobs;
};

static bool match(const struct list_opts *o, const char *name)
{
	int i;

	if (!o->nglobs)
		return true;
	for (i = 0; i < o->nglobs; i++)
		if (!fnmatch(o->globs[i], name, 0))
			return true;
	return false;
}

static void print_pmu(const struct prec_pmu *p, bool verbose)
{
	size_t i;

	printf("  %s (type %u", p->name, p->type);
	if (p->aux)
		printf(", AUX tracer");
	if (p->emulated)
		printf(", emulated by the software tracer");
	if (p->nr_addr_filters >= 0)
		printf(", %d address filter%s", p->nr_addr_filters,
		       p->nr_addr_filters == 1 ? "" : "s");
	printf(")\n");
	if (!verbose)
		return;
	for (i = 0; i < p->nr_formats; i++)
		printf("    %-20s %s\n", p->formats[i].name, p->formats[i].text);
	if (p->nr_caps) {
		printf("    caps:");
		for (i = 0; i < p->nr_caps; i++)
			printf(" %s=%s", p->caps[i].name, p->caps[i].value);
		printf("\n");
	}
	for (i = 0; i < p->nr_events; i++)
		printf("    event %-14s %s\n", p->events[i].name, p->events[i].value);
	for (i = 0; i < p->nr_sinks; i++)
		printf("    sink @%-14s %s\n", p->sinks[i].name, p->sinks[i].value);
}

/* The software tracers' PMU of that name under --emulate (intel_pt, pt, cs_etm), else sysfs's. */
static int load_pmu(const struct list_opts *o, const char *name, struct prec_pmu **p)
{
	if (o->emulate && (!strcmp(name, "intel_pt") || !strcmp(name, "pt")))
		return prec_pmu_load_emulated(p);
	if (o->emulate && !strcmp(name, "cs_etm"))
		return prec_pmu_load_emulated_etm(p);
	return prec_pmu_load(name, p);
}

/* The PMUs to show: sysfs ones, with the emulated intel_pt and cs_etm in place of real ones. */
static int load_pmus(const struct list_opts *o, struct prec_pmu ***out, size_t *nout)
{
	struct prec_pmu **v;
	char **names;
	size_t n, i, k = 0;
	int err = prec_pmu_names(&names, &n);

	if (err)
		return err;
	v = calloc(n + 2, sizeof(*v));
	if (!v) {
		prec_strv_free(names, n);
		return -ENOMEM;
	}
	if (o->emulate) {
		err = prec_pmu_load_emulated(&v[k]);
		if (err)
			goto out;
		k++;
		err = prec_pmu_load_emulated_etm(&v[k]);
		if (err)
			goto out;
		k++;
	}
	for (i = 0; i < n; i++) {
		if (o->emulate && (!strcmp(names[i], "intel_pt") || !strcmp(names[i], "cs_etm")))
			continue;
		err = prec_pmu_load(names[i], &v[k]);
		if (err == -PREC_E_NOPMU)
			continue;
		if (err)
			goto out;
		k++;
	}
out:
	prec_strv_free(names, n);
	if (err) {
		for (i = 0; i < k; i++)
			prec_pmu_free(v[i]);
		free(v);
		return err;
	}
	*out = v;
	*nout = k;
	return 0;
}

static void free_pmus(struct prec_pmu **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		prec_pmu_free(v[i]);
	free(v);
}

/* Tracepoints as "sys:name"; under --emulate the syscall table instead of tracefs. */
static int load_tracepoints(const struct list_opts *o, char ***out, size_t *nout)
{
	char **subs = NULL, **v = NULL;
	size_t ns = 0, n = 0, i, j;
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (o->emulate) {
		const char *nm;

		for (i = 0; (nm = prec_syscall_at(i, NULL)); i++) {
			for (j = 0; j < 2; j++) {
				char buf[160];

				snprintf(buf, sizeof(buf), "syscalls:%s%s",
					 j ? "sys_exit_" : "sys_enter_", nm);
				if (PREC_ARRAY_RESERVE(v, n, 2)) {
					err = -ENOMEM;
					goto out;
				}
				v[n] = strdup(buf);
				if (!v[n]) {
					err = -ENOMEM;
					goto out;
				}
				n++;
			}
		}
		goto out;
	}
	err = prec_tracepoint_names(NULL, &subs, &ns);
	if (err)
		goto out;
	for (i = 0; i < ns; i++) {
		char **evs;
		size_t ne;

		if (prec_tracepoint_names(subs[i], &evs, &ne))
			continue;
		for (j = 0; j < ne; j++) {
			size_t len = strlen(subs[i]) + strlen(evs[j]) + 2;

			if (PREC_ARRAY_RESERVE(v, n, 2)) {
				err = -ENOMEM;
				break;
			}
			v[n] = malloc(len);
			if (!v[n]) {
				err = -ENOMEM;
				break;
			}
			snprintf(v[n], len, "%s:%s", subs[i], evs[j]);
			n++;
		}
		prec_strv_free(evs, ne);
		if (err)
			break;
	}
out:
	prec_strv_free(subs, ns);
	if (err) {
		prec_strv_free(v, n);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

static void tracefs_warning(int err)
{
	if (err == -ENOENT)
		cli_warn("tracepoints are not listed: tracefs is not mounted "
			 "(as root: mount -t tracefs nodev /sys/kernel/tracing)");
	else
		cli_warn("tracepoints are not listed: tracefs is not available: %s",
			 prec_strerror(err));
}

static const char *const term_lines[][2] = {
	{ "config=N, config1=N, config2=N, config3=N", "raw config words (PMU and raw events)" },
	{ "period=N", "sample (and run aux actions) every N events" },
	{ "freq=N", "sample N times a second instead" },
	{ "name=NAME", "the event's name in the trace" },
	{ "aux-action=(start-paused|pause|resume)", "AUX pause/resume (Linux 6.13+)" },
	{ "aux-start-paused, aux-pause, aux-resume", "the same, short forms" },
	{ "aux-output", "write this event's records into the AUX area" },
	{ "aux-sample-size=N", "sample N bytes of AUX data with each sample" },
};

static int list_all(const struct list_opts *o)
{
	struct prec_pmu **pmus = NULL;
	char **tps = NULL;
	const struct prec_generic_event *g;
	size_t npmus = 0, ntps = 0, ng, i, shown, total = 0;
	int err;

	err = load_pmus(o, &pmus, &npmus);
	if (err) {
		cli_err("cannot read the PMUs from sysfs: %s", prec_strerror(err));
		return EXIT_FAIL;
	}
	for (i = 0, shown = 0; i < npmus; i++) {
		if (!match(o, pmus[i]->name))
			continue;
		total++;
		if (!shown++)
			printf("PMUs (use as NAME/term,term=value/modifiers):\n");
		print_pmu(pmus[i], true);
	}
	g = prec_generic_events(&ng);
	for (i = 0, shown = 0; i < ng; i++) {
		if (!match(o, g[i].name))
			continue;
		total++;
		if (!shown++)
			printf("%sGeneric events (NAME, NAME:modifiers or NAME/terms/modifiers):\n",
			       total ? "\n" : "");
		if (g[i].alias_of)
			printf("  %-26s %s event (alias of %s)\n", g[i].name,
			       g[i].type == PERF_TYPE_HARDWARE ? "hardware" : "software",
			       g[i].alias_of);
		else
			printf("  %-26s %s event\n", g[i].name,
			       g[i].type == PERF_TYPE_HARDWARE ? "hardware" : "software");
	}
	if (!o->nglobs) {
		printf("\nTerms every event takes (NAME/term,.../):\n");
		for (i = 0; i < PREC_ARRAY_SIZE(term_lines); i++)
			printf("  %-42s %s\n", term_lines[i][0], term_lines[i][1]);
		printf("\nOther events:\n"
		       "  %-42s %s\n  %-42s %s\n  %-42s %s\n  %-42s %s\n",
		       "rNNNN", "raw PMU event (hex config)",
		       "uprobe:PATH:FUNCTION[+OFFSET]", "a function entry (or 0xADDRESS)",
		       "uretprobe:PATH:FUNCTION", "a function return",
		       "mem:ADDR[/LEN][:rwx]", "hardware breakpoint");
	}
	err = load_tracepoints(o, &tps, &ntps);
	if (err) {
		tracefs_warning(err);
	} else {
		for (i = 0, shown = 0; i < ntps; i++) {
			if (!match(o, tps[i]))
				continue;
			total++;
			if (!shown++)
				printf("\nTracepoints (SUBSYSTEM:NAME)%s:\n",
				       o->emulate ? ", as the software tracer knows them" : "");
			printf("  %s\n", tps[i]);
		}
	}
	prec_strv_free(tps, ntps);
	free_pmus(pmus, npmus);
	if (o->nglobs && !total) {
		cli_err("nothing here matches %s%s: no PMU, generic event or tracepoint of this "
			"machine has such a name", o->globs[0], o->nglobs > 1 ? " (or the others)" : "");
		fprintf(stderr, "  hint: 'ptrec list' shows all; 'ptrec check' says why a tracer "
				"is missing; 'ptrec list --emulate' shows what the software tracer has\n");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int list_names(const struct list_opts *o, const char *kind, const char *arg)
{
	size_t i, n;
	int err;

	if (!strcmp(kind, "pmus")) {
		struct prec_pmu **pmus;
		bool tracer = false;

		err = load_pmus(o, &pmus, &n);
		if (err) {
			cli_err("cannot read the PMUs from sysfs: %s", prec_strerror(err));
			return EXIT_FAIL;
		}
		for (i = 0; i < n; i++) {
			tracer |= !strcmp(pmus[i]->name, "intel_pt") || !strcmp(pmus[i]->name, "cs_etm");
			if (match(o, pmus[i]->name))
				printf("%s\n", pmus[i]->name);
		}
		if (tracer && match(o, "pt"))
			printf("pt\n");
		free_pmus(pmus, n);
		return EXIT_OK;
	}
	if (!strcmp(kind, "events")) {
		const struct prec_generic_event *g = prec_generic_events(&n);

		for (i = 0; i < n; i++)
			if (match(o, g[i].name))
				printf("%s\n", g[i].name);
		return EXIT_OK;
	}
	if (!strcmp(kind, "tracepoints")) {
		char **tps;

		err = load_tracepoints(o, &tps, &n);
		if (err) {
			if (err == -ENOENT)
				cli_err("tracefs is not mounted; as root: mount -t tracefs nodev "
					"/sys/kernel/tracing");
			else
				cli_err("tracefs is not available: %s", prec_strerror(err));
			return EXIT_FAIL;
		}
		for (i = 0; i < n; i++)
			if (match(o, tps[i]))
				printf("%s\n", tps[i]);
		prec_strv_free(tps, n);
		return EXIT_OK;
	}
	if (!strcmp(kind, "terms")) {
		static const char *const common[] = {
			"config", "config1", "config2", "config3", "period", "freq", "name",
			"aux-output", "aux-sample-size", "aux-action", "aux-start-paused",
			"aux-pause", "aux-resume",
		};
		struct prec_pmu *p = NULL;

		if (!arg)
			return cli_usage_error("list", "--names terms needs a PMU name");
		err = load_pmu(o, arg, &p);
		if (err) {
			cli_err("no PMU '%s' here: %s", arg, prec_strerror(err));
			return EXIT_FAIL;
		}
		for (i = 0; i < p->nr_formats; i++)
			if (match(o, p->formats[i].name))
				printf("%s\n", p->formats[i].name);
		for (i = 0; i < p->nr_events; i++)
			if (match(o, p->events[i].name))
				printf("%s\n", p->events[i].name);
		for (i = 0; i < PREC_ARRAY_SIZE(common); i++)
			if (match(o, common[i]))
				printf("%s\n", common[i]);
		prec_pmu_free(p);
		return EXIT_OK;
	}
	return cli_usage_error("list", "--names takes pmus, events, tracepoints or terms PMU, "
			       "not '%s'", kind);
}

static int list_sysfs(const struct list_opts *o, const char *name)
{
	struct prec_pmu *p = NULL;
	size_t i;
	int err;

	err = load_pmu(o, name, &p);
	if (err) {
		if (err == -PREC_E_NOPMU)
			cli_err("no PMU '%s' on this machine%s", name,
				o->emulate ? "" : " (the software tracer's is --emulate --sysfs intel_pt)");
		else
			cli_err("cannot read PMU '%s': %s", name, prec_strerror(err));
		return EXIT_FAIL;
	}
	printf("type %u\n", p->type);
	if (p->nr_addr_filters >= 0)
		printf("nr_addr_filters %d\n", p->nr_addr_filters);
	for (i = 0; i < p->nr_formats; i++)
		printf("format/%s %s\n", p->formats[i].name, p->formats[i].text);
	for (i = 0; i < p->nr_caps; i++)
		printf("caps/%s %s\n", p->caps[i].name, p->caps[i].value);
	for (i = 0; i < p->nr_events; i++)
		printf("events/%s %s\n", p->events[i].name, p->events[i].value);
	for (i = 0; i < p->nr_sinks; i++)
		printf("sinks/%s %s\n", p->sinks[i].name, p->sinks[i].value);
	prec_pmu_free(p);
	return EXIT_OK;
}

/*
 * The parser's hint for a missing tracer says to record with --emulate;
 * here the same check of the spec under the software tracer is meant.
 */
static void list_diag(const char *text, struct prec_diag *d)
{
	char aux[256];

	if (d->code == -PREC_E_NOPMU) {
		prec_pmu_aux_names(aux, sizeof(aux));
		prec_diag_hint(d, "AUX-capable PMUs here: %s; see 'ptrec check', or check the spec "
				  "for the software tracer with 'ptrec list --emulate -e SPEC'", aux);
	}
	cli_diag("bad event", text, d);
}

static int list_specs(const struct list_opts *o, char **specs, int n)
{
	struct prec_evspec_opts eo = { .emulate = o->emulate };
	struct prec_evlist *el = prec_evlist_new(&eo);
	struct prec_buf b = { 0 };
	struct prec_diag d;
	int i, err = 0, rc = EXIT_OK;

	if (!el) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	for (i = 0; i < n && !err; i++) {
		err = prec_evlist_add(el, specs[i], &d);
		if (err)
			list_diag(specs[i], &d);
	}
	if (!err) {
		err = prec_evlist_finish(el, &d);
		if (err)
			list_diag(prec_evlist_diag_text(el), &d);
	}
	if (err) {
		rc = err == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
		goto out;
	}
	if (prec_evlist_dump(el, &b)) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	fputs(b.data, stdout);
out:
	prec_buf_free(&b);
	prec_evlist_free(el);
	return rc;
}

int cmd_list(int argc, char **argv)
{
	struct list_opts o = { 0 };
	const char *names = NULL, *names_arg = NULL, *sysfs = NULL;
	char **specs = NULL, **globs = NULL;
	int nspecs = 0, i, rc;

	specs = calloc((size_t)argc + 1, sizeof(*specs));
	globs = calloc((size_t)argc + 1, sizeof(*globs));
	if (!specs || !globs) {
		free(specs);
		free(globs);
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	o.globs = globs;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(list_help, stdout);
			rc = EXIT_OK;
			goto out;
		} else if (!strcmp(a, "--emulate")) {
			o.emulate = true;
		} else if (!strcmp(a, "-e") || !strcmp(a, "--event")) {
			if (++i >= argc) {
				rc = cli_usage_error("list", "%s needs an event specification", a);
				goto out;
			}
			specs[nspecs++] = argv[i];
		} else if (!strncmp(a, "--event=", 8)) {
			specs[nspecs++] = argv[i] + 8;
		} else if (!strncmp(a, "-e", 2)) {
			specs[nspecs++] = argv[i] + 2;
		} else if (!strcmp(a, "--names")) {
			if (++i >= argc) {
				rc = cli_usage_error("list", "--names needs pmus, events, tracepoints "
						     "or terms PMU");
				goto out;
			}
			names = argv[i];
			if (!strcmp(names, "terms")) {
				if (++i >= argc) {
					rc = cli_usage_error("list", "--names terms needs a PMU name");
					goto out;
				}
				names_arg = argv[i];
			}
		} else if (!strcmp(a, "--sysfs")) {
			if (++i >= argc) {
				rc = cli_usage_error("list", "--sysfs needs a PMU name");
				goto out;
			}
			sysfs = argv[i];
		} else if (!strcmp(a, "--")) {
			for (i++; i < argc; i++)
				globs[o.nglobs++] = argv[i];
		} else if (a[0] == '-' && a[1]) {
			rc = cli_usage_error("list", "unknown option '%s'", a);
			goto out;
		} else {
			globs[o.nglobs++] = argv[i];
		}
	}
	if ((nspecs != 0) + (names != NULL) + (sysfs != NULL) > 1) {
		rc = cli_usage_error("list", "-e, --names and --sysfs do not go together");
		goto out;
	}
	if (nspecs) {
		if (o.nglobs) {
			rc = cli_usage_error("list", "-e takes no GLOB arguments ('%s')", globs[0]);
			goto out;
		}
		rc = list_specs(&o, specs, nspecs);
	} else if (names) {
		rc = list_names(&o, names, names_arg);
	} else if (sysfs) {
		rc = list_sysfs(&o, sysfs);
	} else {
		rc = list_all(&o);
	}
out:
	free(specs);
	free(globs);
	return rc;
}
