// SPDX-License-Identifier: MIT
/*
 * ptrec check: can recording work here, and if not, why not.
 * Every verdict comes from asking the kernel or the CPU, not from version
 * tables, so it stays right on kernels and machines we never saw.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "spec/pmu.h"
#include "spec/probe.h"
#include "ptrec-cmds.h"
#include "base/util.h"

/* Exit codes, documented in ptrec-check(1). */
enum {
	CHECK_HW_OK = 0,      /* hardware tracing with pause/resume can work */
	CHECK_EMULATE_ONLY = 3, /* no usable hardware tracer; --emulate works */
	CHECK_NOTHING = 4,    /* neither hardware nor software tracing works */
	CHECK_HW_NO_PAUSE = 5, /* hardware tracer works, but not pause/resume */
};

struct item {
	const char *key;
	bool ok;
	char value[256];
	char detail[512];
};

struct report {
	struct item items[32];
	int n;
};

static struct item *add(struct report *r, const char *key, bool ok, const char *value,
			const char *detail_fmt, ...) prec_printf(5, 6);

static struct item *add(struct report *r, const char *key, bool ok, const char *value,
			const char *detail_fmt, ...)
{
	struct item *it = &r->items[r->n < 31 ? r->n++ : 31];
	va_list ap;

	it->key = key;
	it->ok = ok;
	snprintf(it->value, sizeof(it->value), "%s", value);
	it->detail[0] = '\0';
	if (detail_fmt) {
		va_start(ap, detail_fmt);
		vsnprintf(it->detail, sizeof(it->detail), detail_fmt, ap);
		va_end(ap);
	}
	return it;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* The AUX-capable PMUs in sysfs, loaded. */
static int aux_pmus(struct prec_pmu ***out, size_t *nout)
{
	char **names = NULL;
	size_t n = 0, i;
	struct prec_pmu **v;
	int err = prec_pmu_names(&names, &n);

	*out = NULL;
	*nout = 0;
	if (err)
		return err;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		prec_strv_free(names, n);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct prec_pmu *p = NULL;

		if (prec_pmu_load(names[i], &p) == 0 && p->aux)
			v[(*nout)++] = p;
		else
			prec_pmu_free(p);
	}
	prec_strv_free(names, n);
	*out = v;
	return 0;
}

/* The software tracer needs qemu-x86_64 that runs, and the plugin file. */
static bool check_emulate(struct report *r)
{
	char qemu[4096], plugin[4096], cmd[4200], ver[128] = "";
	const char *env = getenv("PTREC_PLUGIN");
	FILE *f;

	if (prec_find_exec("qemu-x86_64", qemu, sizeof(qemu))) {
		add(r, "emulate", false, "unavailable",
		    "qemu-x86_64 is not in PATH: apt-get install qemu-user");
		return false;
	}
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", qemu);
	f = popen(cmd, "r");
	if (f) {
		if (!fgets(ver, sizeof(ver), f))
			ver[0] = '\0';
		pclose(f);
	}
	ver[strcspn(ver, "\n")] = '\0';
	if (!ver[0]) {
		add(r, "emulate", false, "unavailable", "%s does not run", qemu);
		return false;
	}
	if (env && *env) {
		snprintf(plugin, sizeof(plugin), "%s", env);
	} else {
		ssize_t n = readlink("/proc/self/exe", cmd, sizeof(cmd) - 1);
		char *slash;

		plugin[0] = '\0';
		if (n > 0) {
			cmd[n] = '\0';
			slash = strrchr(cmd, '/');
			if (slash) {
				*slash = '\0';
				if (snprintf(plugin, sizeof(plugin), "%s/ptrec-emu.so", cmd) >= (int)sizeof(plugin) ||
				    access(plugin, R_OK))
					if (snprintf(plugin, sizeof(plugin), "%s/../lib/ptrec/ptrec-emu.so", cmd) >= (int)sizeof(plugin) ||
					    access(plugin, R_OK))
						plugin[0] = '\0';
			}
		}
		if (!plugin[0])
			snprintf(plugin, sizeof(plugin), "%s/ptrec-emu.so", PTREC_LIBDIR);
	}
	if (access(plugin, R_OK)) {
		add(r, "emulate", false, "unavailable", "the plugin %s is missing (make install)",
		    plugin);
		return false;
	}
	add(r, "emulate", true, "available", "%s (%s), plugin %s", qemu, ver, plugin);
	return true;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ptrec check [--json] [-v]\n\n"
		"Says whether tracing can work on this machine, and why not: the kernel and\n"
		"its aux_action support (asked of the kernel itself), each AUX-capable PMU\n"
		"and whether it can pause and resume, Intel PT CPU capabilities,\n"
		"perf_event_paranoid, tracefs, the uprobe PMU, and the software tracer.\n\n"
		"  --json     one JSON object instead of text\n"
		"  -v         more detail\n\n"
		"exit status: 0 hardware tracing with pause/resume can work; 3 no usable\n"
		"hardware tracer, but the software tracer (--emulate) works; 4 neither works;\n"
		"5 a hardware tracer works but cannot pause/resume; 1 the check failed;\n"
		"2 usage error.\n");
}

/* Does the kernel know perf_event_attr.aux_action (Linux 6.13)? */
static bool check_aux_action(struct report *r)
{
	int e, verdict = prec_probe_aux_action_kernel(&e);

	switch (verdict) {
	case PREC_AUXACT_KERNEL:
		add(r, "aux_action", true, "supported",
		    "the kernel answered %s to aux_start_paused on a software event: it knows the field",
		    e ? strerrorname_np(e) : "success");
		return true;
	case PREC_AUXACT_OLD_KERNEL:
		add(r, "aux_action", false, "not supported",
		    "the kernel answered %s to aux_start_paused: it predates Linux 6.13; update the kernel",
		    strerrorname_np(e));
		return false;
	default:
		add(r, "aux_action", false, "unknown",
		    "the probe could not open a software event (%s)", strerror(e));
		return false;
	}
}

/* One AUX PMU: can it open, and can it start paused? Sets *@hw_ok and *@hw_pause. */
static void check_aux_pmu(struct report *r, const struct prec_pmu *p, bool *hw_ok,
			  bool *hw_pause)
{
	struct prec_attr a;
	int pr;

	memset(&a, 0, sizeof(a));
	a.type = p->type;
	prec_pmu_default_config(p, &a);
	pr = prec_probe_aux_pause(&a);
	*hw_ok = *hw_ok || pr == 0 || pr == -EOPNOTSUPP;
	if (pr == 0) {
		*hw_pause = true;
		add(r, p->name, true, "pause/resume supported",
		    "type %u; the kernel accepted aux_start_paused", a.type);
	} else if (pr == -EOPNOTSUPP) {
		add(r, p->name, false, "no pause/resume",
		    "type %u; the kernel answered EOPNOTSUPP: this PMU cannot pause (cs_etm needs Linux 6.16)",
		    a.type);
	} else if (pr == -EINVAL) {
		add(r, p->name, false, "no aux_action",
		    "type %u; the kernel answered EINVAL: it predates aux_action (6.13)", a.type);
	} else {
		add(r, p->name, false, "cannot open",
		    "type %u; the kernel answered %s%s", a.type, strerror(-pr),
		    pr == -EACCES || pr == -EPERM ? " (see perf_event_paranoid below)" :
		    pr == -EBUSY ? " (another user holds the tracer)" : "");
	}
}

/* The AUX PMUs of this machine, each probed. */
static void check_aux_pmus(struct report *r, bool *hw_ok, bool *hw_pause)
{
	struct prec_pmu **pmus = NULL;
	size_t npmus = 0, i;
	int code = aux_pmus(&pmus, &npmus);

	if (code < 0)
		add(r, "aux_pmus", false, "unknown", "cannot read the PMU list: %s",
		    prec_strerror(code));
	else if (npmus == 0)
		add(r, "aux_pmus", false, "none",
		    "no AUX-capable PMU (intel_pt, cs_etm) on this machine; virtual machines and "
		    "AMD CPUs have none");
	for (i = 0; i < npmus; i++)
		check_aux_pmu(r, pmus[i], hw_ok, hw_pause);
	for (i = 0; i < npmus; i++)
		prec_pmu_free(pmus[i]);
	free(pmus);
}

static void check_cpu(struct report *r)
{
	uint32_t l14[2][4];
	char vendor[13], buf[512];
	unsigned fam, mod, step;

	prec_cpuid_ident(vendor, &fam, &mod, &step);
	snprintf(buf, sizeof(buf), "%s family %u model %u stepping %u", vendor, fam, mod, step);
	if (prec_cpuid_pt(l14))
		add(r, "cpu", true, buf,
		    "Intel PT: CPUID.14.0 ebx=%#x ecx=%#x (cyc %s, mtc %s, ptwrite %s, power events %s, "
		    "ToPA %s, IP filters %u)",
		    l14[0][1], l14[0][2], l14[0][1] & 1 ? "yes" : "no",
		    l14[0][1] & 8 ? "yes" : "no", l14[0][1] & 16 ? "yes" : "no",
		    l14[0][1] & 32 ? "yes" : "no", l14[0][2] & 1 ? "yes" : "no",
		    l14[1][0] & 7);
	else
		add(r, "cpu", true, buf, "no Intel PT in CPUID (leaf 7 EBX bit 25)");
}

/* perf_event_paranoid, tracefs and the uprobe PMU. */
static void check_access(struct report *r)
{
	char buf[512], path[512];
	int level, err;

	if (prec_probe_paranoid(&level) == 0) {
		bool priv = prec_probe_privileged();

		snprintf(buf, sizeof(buf), "%d", level);
		add(r, "perf_event_paranoid", priv || level <= 1, buf, "%s",
		    priv ? "this user is privileged (root or CAP_PERFMON): everything is allowed" :
		    level <= -1 ? "unprivileged users may trace everything" :
		    level == 0 ? "unprivileged users may trace their own processes and CPU-wide (no raw tracepoint access)" :
		    level == 1 ? "unprivileged users may trace their own processes, user and kernel" :
				 "unprivileged users may trace only user space of their own processes; "
				 "for kernel tracing run as root, grant CAP_PERFMON, or "
				 "sysctl kernel.perf_event_paranoid=1");
	} else {
		add(r, "perf_event_paranoid", false, "unknown", "/proc/sys/kernel/perf_event_paranoid is missing: no perf events in this kernel?");
	}

	err = prec_tracefs_dir(path, sizeof(path));
	if (err == 0)
		add(r, "tracefs", true, path, "tracepoints can be resolved");
	else if (err == -EACCES || err == -EPERM)
		add(r, "tracefs", false, "unreadable", "%s",
		    "tracefs is mounted but this user may not read it: run as root, or "
		    "give the user read access (e.g. mount it with gid= and mode=)");
	else
		add(r, "tracefs", false, "not mounted", "%s",
		    "mount it: sudo mount -t tracefs nodev /sys/kernel/tracing");

	if (prec_sys_path(path, sizeof(path), "/sys/bus/event_source/devices/uprobe/type") == 0 &&
	    access(path, R_OK) == 0)
		add(r, "uprobe", true, "available", "uprobe:PATH:SYMBOL and uretprobe: events work");
	else
		add(r, "uprobe", false, "missing", "the kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)");
}

static const char *verdict_name(int code)
{
	return code == CHECK_HW_OK ? "hardware" :
	       code == CHECK_HW_NO_PAUSE ? "hardware-no-pause" :
	       code == CHECK_EMULATE_ONLY ? "emulate-only" : "none";
}

static void print_json(const struct report *r, int code)
{
	int i;

	printf("{");
	for (i = 0; i < r->n; i++) {
		printf("%s\n  ", i ? "," : "");
		json_str(stdout, r->items[i].key);
		printf(": {\"ok\": %s, \"value\": ", r->items[i].ok ? "true" : "false");
		json_str(stdout, r->items[i].value);
		printf(", \"detail\": ");
		json_str(stdout, r->items[i].detail);
		printf("}");
	}
	printf(",\n  \"verdict\": ");
	json_str(stdout, verdict_name(code));
	printf(",\n  \"exit_code\": %d\n}\n", code);
}

static void print_text(const struct report *r, int code)
{
	int i;

	for (i = 0; i < r->n; i++) {
		printf("%-4s %-20s %s\n", r->items[i].ok ? "ok" : "no", r->items[i].key,
		       r->items[i].value);
		if (r->items[i].detail[0])
			printf("     %-20s %s\n", "", r->items[i].detail);
	}
	printf("\n");
	switch (code) {
	case CHECK_HW_OK:
		printf("verdict: hardware tracing with AUX pause/resume can work here\n");
		break;
	case CHECK_HW_NO_PAUSE:
		printf("verdict: a hardware tracer works, but it cannot pause/resume here; "
		       "full traces only (or use --emulate)\n");
		break;
	case CHECK_EMULATE_ONLY:
		printf("verdict: no usable hardware tracer; record with 'ptrec record --emulate'\n");
		break;
	default:
		printf("verdict: no tracing is possible here; install qemu-user for --emulate\n");
		break;
	}
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static char prog[] = "ptrec check";
	struct report r = { .n = 0 };
	bool json = false, auxact_ok, hw_ok = false, hw_pause = false, emu_ok;
	struct utsname u;
	int c, code;

	optind = 1;
	argv[0] = prog; /* getopt names argv[0] in its messages: "ptrec check: ..." */
	while ((c = getopt_long(argc, argv, "+jvh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'v': cli_verbose++; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return cli_usage_error("check", "bad option");
		}
	}
	if (optind < argc)
		return cli_usage_error("check", "unexpected argument '%s'", argv[optind]);

	uname(&u);
	add(&r, "kernel", true, u.release, "%s %s", u.sysname, u.machine);
	auxact_ok = check_aux_action(&r);
	check_aux_pmus(&r, &hw_ok, &hw_pause);
	check_cpu(&r);
	check_access(&r);
	emu_ok = check_emulate(&r);

	if (hw_ok && hw_pause && auxact_ok)
		code = CHECK_HW_OK;
	else if (hw_ok && !hw_pause)
		code = CHECK_HW_NO_PAUSE;
	else if (emu_ok)
		code = CHECK_EMULATE_ONLY;
	else
		code = CHECK_NOTHING;
	if (json)
		print_json(&r, code);
	else
		print_text(&r, code);
	return code;
}
