/* Test workload for the recorder: calls uname(2) N times in a tight loop
 * (enough to exceed a lowered perf_event_max_sample_rate within one tick).
 * usage: uname_loop N */
#include <stdlib.h>
#include <sys/utsname.h>

int main(int argc, char **argv)
{
	struct utsname u;
	long i, n = argc > 1 ? atol(argv[1]) : 100000;

	for (i = 0; i < n; i++)
		uname(&u);
	return 0;
}
