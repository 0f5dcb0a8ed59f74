// SPDX-License-Identifier: MIT
/*
 * A workload with known event counts for the sampling tests:
 *   sysloop GETPIDS WRITES PAGES
 * makes GETPIDS getpid(2) calls, WRITES one-byte write(2)s to /dev/null,
 * then touches PAGES fresh anonymous pages (one page fault each).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long getpids, writes, pages, i, psz = sysconf(_SC_PAGESIZE);
	volatile char *m;
	int fd;

	if (argc != 4)
		return 2;
	getpids = atol(argv[1]);
	writes = atol(argv[2]);
	pages = atol(argv[3]);
	for (i = 0; i < getpids; i++)
		syscall(SYS_getpid);
	fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return 1;
	for (i = 0; i < writes; i++)
		if (write(fd, "x", 1) != 1)
			return 1;
	close(fd);
	if (pages) {
		m = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 1;
		for (i = 0; i < pages; i++)
			m[i * psz] = 1;
	}
	return 0;
}
