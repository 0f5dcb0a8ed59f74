// SPDX-License-Identifier: MIT
/* --func and --syscall: the object that defines a function, and the specs. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "spec/func.h"

#define MAX_OBJECTS 512
#define MAX_CONF_DEPTH 8

/* What the search needs of one ELF object. */
struct elfobj {
	int machine, class;
	char *interp;		/* PT_INTERP, or NULL */
	char **needed;		/* DT_NEEDED names */
	size_t nneeded;
	char *rpath, *runpath;	/* DT_RPATH, DT_RUNPATH, or NULL */
};

static void elfobj_fini(struct elfobj *o)
{
	size_t i;

	for (i = 0; i < o->nneeded; i++)
		free(o->needed[i]);
	free(o->needed);
	free(o->interp);
	free(o->rpath);
	free(o->runpath);
	memset(o, 0, sizeof(*o));
}

static int add_str(char ***v, size_t *n, const char *s)
{
	char *c = strdup(s);

	if (!c || prec_array_reserve(v, *n, 1, sizeof(**v))) {
		free(c);
		return -ENOMEM;
	}
	(*v)[(*n)++] = c;
	return 0;
}

static int read_dynamic(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct elfobj *o)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (i = 0; data && i < n; i++) {
		GElf_Dyn dyn;
		const char *s;

		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
			continue;
		s = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
		if (!s)
			continue;
		if (dyn.d_tag == DT_NEEDED) {
			if (add_str(&o->needed, &o->nneeded, s))
				return -ENOMEM;
		} else if (!(dyn.d_tag == DT_RPATH ? o->rpath : o->runpath)) {
			char *c = strdup(s);

			if (!c)
				return -ENOMEM;
			*(dyn.d_tag == DT_RPATH ? &o->rpath : &o->runpath) = c;
		}
	}
	return 0;
}

static int read_interp(Elf *elf, int fd, struct elfobj *o)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return 0;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		char buf[PATH_MAX];

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		if (!ph.p_filesz || ph.p_filesz >= sizeof(buf) ||
		    pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
			return 0;
		buf[ph.p_filesz] = '\0';
		o->interp = strdup(buf);
		return o->interp ? 0 : -ENOMEM;
	}
	return 0;
}

/* Reads @path's class, machine, interpreter and dynamic section. */
static int elfobj_read(const char *path, struct elfobj *o)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	int fd, err = 0;

	memset(o, 0, sizeof(*o));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = -PREC_E_FORMAT;
		goto out;
	}
	o->machine = eh.e_machine;
	o->class = gelf_getclass(elf);
	err = read_interp(elf, fd, o);
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNAMIC)
			err = read_dynamic(elf, scn, &sh, o);
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err)
		elfobj_fini(o);
	return err;
}

/* ---- the dynamic linker's search ---- */

struct search {
	struct prec_loadlist *ll;
	struct elfobj exe;	/* class and machine every library must match */
	char **confdirs;	/* /etc/ld.so.conf's directories */
	size_t nconf;
};

static bool listed(const struct prec_loadlist *ll, const char *path)
{
	size_t i;

	for (i = 0; i < ll->n; i++)
		if (!strcmp(ll->paths[i], path))
			return true;
	return false;
}

/* A library file of the program's class and machine (as ld.so checks ELF headers). */
static bool usable(const struct search *s, const char *path)
{
	struct elfobj o;
	bool ok;

	if (access(path, R_OK) || elfobj_read(path, &o))
		return false;
	ok = o.class == s->exe.class && o.machine == s->exe.machine;
	elfobj_fini(&o);
	return ok;
}

/* @dir/@name with $ORIGIN (and ${ORIGIN}) replaced by @origin. */
static bool try_dir(const struct search *s, const char *dir, size_t dlen, const char *origin,
		    const char *name, char *out)
{
	char d[PATH_MAX];
	size_t i = 0, k = 0;

	while (i < dlen && k < sizeof(d) - 1) {
		if (!strncmp(dir + i, "$ORIGIN", 7) || !strncmp(dir + i, "${ORIGIN}", 9)) {
			int w = snprintf(d + k, sizeof(d) - k, "%s", origin);

			if (w < 0 || (size_t)w >= sizeof(d) - k)
				return false;
			k += (size_t)w;
			i += dir[i + 1] == '{' ? 9 : 7;
		} else {
			d[k++] = dir[i++];
		}
	}
	d[k] = '\0';
	if (!k)
		snprintf(d, sizeof(d), ".");
	if (snprintf(out, PATH_MAX, "%s/%s", d, name) >= PATH_MAX)
		return false;
	return usable(s, out);
}

/* Each directory of the colon-separated @list. */
static bool try_list(const struct search *s, const char *list, const char *origin,
		     const char *name, char *out)
{
	while (list && *list) {
		size_t len = strcspn(list, ":;");

		if (try_dir(s, list, len, origin, name, out))
			return true;
		list += len;
		if (*list)
			list++;
	}
	return false;
}

/* The loader's built-in directories for the program's machine (Debian's multiarch ones first). */
static bool try_default(const struct search *s, const char *name, char *out)
{
	static const char *x86_64 = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu";
	static const char *a64 = "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu";
	static const char *i386 = "/lib/i386-linux-gnu:/usr/lib/i386-linux-gnu";
	const char *multi = s->exe.machine == EM_X86_64 ? x86_64 :
			    s->exe.machine == EM_AARCH64 ? a64 :
			    s->exe.machine == EM_386 ? i386 : NULL;
	size_t i;

	if (multi && try_list(s, multi, "", name, out))
		return true;
	for (i = 0; i < s->nconf; i++)
		if (try_dir(s, s->confdirs[i], strlen(s->confdirs[i]), "", name, out))
			return true;
	return try_list(s, s->exe.class == ELFCLASS64 ? "/lib64:/usr/lib64:/lib:/usr/lib" :
							  "/lib:/usr/lib", "", name, out);
}

/*
 * Where ld.so finds DT_NEEDED @name of @o (at @opath): a name with a slash
 * as it is; else DT_RPATH (when there is no DT_RUNPATH), LD_LIBRARY_PATH,
 * DT_RUNPATH, then the system directories; as _dl_map_object() in glibc's
 * elf/dl-load.c orders them. (The RPATH of the objects that loaded @o is not
 * inherited here: the executable's RPATH is tried too, which covers the
 * common case.)
 */
static bool find_lib(const struct search *s, const struct elfobj *o, const char *opath,
		     const char *name, char *out)
{
	char origin[PATH_MAX];
	const char *slash = strrchr(opath, '/');

	snprintf(origin, sizeof(origin), "%.*s", slash ? (int)(slash - opath) : 1,
		 slash ? opath : ".");
	if (strchr(name, '/')) {
		snprintf(out, PATH_MAX, "%s", name);
		return usable(s, out);
	}
	if (!o->runpath && o->rpath && try_list(s, o->rpath, origin, name, out))
		return true;
	if (!o->runpath && o != &s->exe && !s->exe.runpath && s->exe.rpath &&
	    try_list(s, s->exe.rpath, origin, name, out))
		return true;
	if (try_list(s, getenv("LD_LIBRARY_PATH"), origin, name, out))
		return true;
	if (o->runpath && try_list(s, o->runpath, origin, name, out))
		return true;
	return try_default(s, name, out);
}

/* ---- /etc/ld.so.conf ---- */

static int read_conf(struct search *s, const char *path, int depth);

static int conf_include(struct search *s, const char *pat, int depth)
{
	char full[PATH_MAX];
	glob_t g;
	size_t i;
	int err = 0;

	/* A relative include is relative to /etc (glibc's ldconfig parse_conf_include()). */
	if (snprintf(full, sizeof(full), "%s%s", pat[0] == '/' ? "" : "/etc/", pat) >=
	    (int)sizeof(full))
		return 0;
	if (glob(full, 0, NULL, &g))
		return 0;
	for (i = 0; !err && i < g.gl_pathc; i++)
		err = read_conf(s, g.gl_pathv[i], depth + 1);
	globfree(&g);
	return err;
}

static int read_conf(struct search *s, const char *path, int depth)
{
	char line[PATH_MAX];
	FILE *f;
	int err = 0;

	if (depth > MAX_CONF_DEPTH || !(f = fopen(path, "re")))
		return 0;
	while (!err && fgets(line, sizeof(line), f)) {
		char *p = line, *e;

		line[strcspn(line, "#\n")] = '\0';
		while (isspace((unsigned char)*p))
			p++;
		e = p + strlen(p);
		while (e > p && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (!*p || !strncmp(p, "hwcap", 5))
			continue;
		if (!strncmp(p, "include", 7) && isspace((unsigned char)p[7])) {
			p += 8;
			while (isspace((unsigned char)*p))
				p++;
			err = conf_include(s, p, depth);
		} else if (*p == '/') {
			err = add_str(&s->confdirs, &s->nconf, p);
		}
	}
	fclose(f);
	return err;
}

/* ---- the load list ---- */

static int push_path(struct prec_loadlist *ll, const char *path)
{
	char real[PATH_MAX];

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	if (listed(ll, real))
		return 0;
	return add_str(&ll->paths, &ll->n, real);
}

/* Breadth-first over DT_NEEDED from the executable, as the loader's symbol search order. */
static int walk(struct search *s)
{
	struct prec_loadlist *ll = s->ll;
	size_t i, j;
	int err = 0;

	for (i = 0; !err && i < ll->n && ll->n < MAX_OBJECTS; i++) {
		struct elfobj o, *op = &o;
		char path[PATH_MAX];

		if (i == 0)
			op = &s->exe;
		else if (elfobj_read(ll->paths[i], &o))
			continue;
		for (j = 0; !err && j < op->nneeded; j++)
			if (find_lib(s, op, ll->paths[i], op->needed[j], path))
				err = push_path(ll, path);
		if (op != &s->exe)
			elfobj_fini(&o);
	}
	/* The loader itself comes last in the search order. */
	if (!err && s->exe.interp && !access(s->exe.interp, R_OK))
		err = push_path(ll, s->exe.interp);
	return err;
}

int prec_loadlist_build(const char *prog, struct prec_loadlist *ll, struct prec_diag *d)
{
	struct search s;
	char exe[PATH_MAX];
	size_t i;
	int err;

	memset(ll, 0, sizeof(*ll));
	memset(&s, 0, sizeof(s));
	s.ll = ll;
	if (!prog)
		return 0;
	err = prec_find_exec(prog, exe, sizeof(exe));
	if (err)
		return prec_diag_set(d, err, -1, "cannot find the program '%s'", prog);
	err = elfobj_read(exe, &s.exe);
	if (err)
		return prec_diag_set(d, err, -1, "%s: not an ELF program (%s)", exe,
				     err == -PREC_E_FORMAT ? "no ELF header" : strerror(-err));
	err = push_path(ll, exe);
	if (!err)
		err = read_conf(&s, "/etc/ld.so.conf", 0);
	if (!err)
		err = walk(&s);
	for (i = 0; i < s.nconf; i++)
		free(s.confdirs[i]);
	free(s.confdirs);
	elfobj_fini(&s.exe);
	if (err) {
		prec_loadlist_free(ll);
		return prec_diag_set(d, err, -1, "reading the libraries of %s: %s", exe,
				     strerror(-err));
	}
	return 0;
}

void prec_loadlist_free(struct prec_loadlist *ll)
{
	size_t i;

	for (i = 0; i < ll->n; i++)
		free(ll->paths[i]);
	free(ll->paths);
	memset(ll, 0, sizeof(*ll));
}

/* ---- the function ---- */

/* Whether @path defines function @name; other function names go to @near. */
static bool defines(const char *path, const char *name, struct prec_near *near)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	bool hit = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !hit && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n && !hit; i++) {
			GElf_Sym sym;
			const char *s;
			int t;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			t = GELF_ST_TYPE(sym.st_info);
			if (t != STT_FUNC && t != STT_GNU_IFUNC)
				continue;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!s || !*s)
				continue;
			if (!strcmp(s, name))
				hit = true;
			else
				prec_near_add(near, s);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return hit;
}

/* @path is @obj, or its file name starts with @obj. */
static bool obj_matches(const char *path, const char *obj)
{
	const char *base = strrchr(path, '/');
	char real[PATH_MAX];

	base = base ? base + 1 : path;
	if (strchr(obj, '/'))
		return realpath(obj, real) && !strcmp(real, path);
	return !strncmp(base, obj, strlen(obj));
}

int prec_func_find(struct prec_loadlist *ll, const char *name, const char *obj,
		   struct prec_diag *d)
{
	struct prec_near near;
	size_t i, searched = 0;
	char real[PATH_MAX];

	prec_near_init(&near, name, 3, 3);
	/* A path outside the load list (a library dlopen()ed later): taken as it is. */
	if (obj && strchr(obj, '/') && realpath(obj, real) && !listed(ll, real) &&
	    push_path(ll, real))
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
	for (i = 0; i < ll->n; i++) {
		if (obj && !obj_matches(ll->paths[i], obj))
			continue;
		searched++;
		if (defines(ll->paths[i], name, &near))
			return (int)i;
	}
	if (obj && !searched) {
		prec_diag_set(d, -ENOENT, -1, "--func %s@%s: the program loads no object '%s'",
			      name, obj, obj);
		prec_diag_hint(d, "give a path or the start of a library's name, e.g. @libc; "
				  "the program is %s", ll->n ? ll->paths[0] : "?");
		return -ENOENT;
	}
	prec_diag_set(d, -PREC_E_NOSYM, -1, "--func %s: no function '%s' in %s%s", name, name,
		      obj ? obj : ll->n ? ll->paths[0] : "the program",
		      obj ? "" : " or the libraries it loads");
	if (prec_near_get(&near, 0))
		prec_diag_hint(d, "did you mean '%s'%s%s%s?", prec_near_get(&near, 0),
			       prec_near_get(&near, 1) ? " or '" : "",
			       prec_near_get(&near, 1) ? prec_near_get(&near, 1) : "",
			       prec_near_get(&near, 1) ? "'" : "");
	else
		prec_diag_hint(d, "list the functions with: nm -C %s", ll->n ? ll->paths[0] : "PROG");
	return -PREC_E_NOSYM;
}

/* ---- the specs ---- */

int prec_func_group(struct prec_buf *b, const char *tracer, const char *const *paths,
		    const char *const *names, size_t n)
{
	size_t i;
	int err = prec_buf_printf(b, "{%s/aux-start-paused/u", tracer);

	for (i = 0; !err && i < n; i++)
		err = prec_buf_printf(b, ",uprobe:\"%s\":%s/aux-resume,name=%s/"
					 ",uretprobe:\"%s\":%s/aux-pause,name=%s__return/",
				      paths[i], names[i], names[i], paths[i], names[i], names[i]);
	return err ?: prec_buf_printf(b, "}");
}

static bool syscall_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 64)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

int prec_syscall_group(struct prec_buf *b, const char *tracer, const char *list, bool user)
{
	const char *p = list;
	int err = prec_buf_printf(b, "{%s/aux-start-paused/%s", tracer, user ? "u" : "k");

	while (!err) {
		size_t n = strcspn(p, ",");

		if (!syscall_name_ok(p, n))
			return -EINVAL;
		err = prec_buf_printf(b, ",syscalls:sys_enter_%.*s/aux-resume/"
					 ",syscalls:sys_exit_%.*s/aux-pause/",
				      (int)n, p, (int)n, p);
		if (!p[n])
			break;
		p += n + 1;
	}
	return err ?: prec_buf_printf(b, "}");
}
