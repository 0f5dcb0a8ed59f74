/* Independent of ptrec: asks the kernel about aux_action directly and prints
 * the errno of a dummy event opened without and with aux_start_paused. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

int main(void)
{
	unsigned char attr[136];
	struct perf_event_attr *a = (struct perf_event_attr *)attr;
	unsigned int bit = 1; /* aux_start_paused: bit 0 of the 32-bit word at offset 116 */
	long fd;
	int e1, e2;

	memset(attr, 0, sizeof(attr));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->size = sizeof(attr);
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
	e1 = fd < 0 ? errno : 0;
	if (fd >= 0)
		close((int)fd);
	memcpy(attr + 116, &bit, 4);
	fd = syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
	e2 = fd < 0 ? errno : 0;
	if (fd >= 0)
		close((int)fd);
	printf("%d %d\n", e1, e2);
	return 0;
}
