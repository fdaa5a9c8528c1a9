/*
 * lockbench clock shim: LD_PRELOAD into a Redis server, it adds an offset,
 * read from an 8-byte file mapped at start (LOCKBENCH_CLOCK), to every
 * reading of the wall clock. The monotonic clock and the host are untouched.
 *
 * Written by hand because libfaketime, the usual tool, dies at Redis start-up
 * in a clock_gettime recursion through jemalloc. This shim never allocates
 * and never calls dlsym: it reads the clock with the raw system call.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ns;

__attribute__((constructor)) static void lockbench_clock_init(void) {
	const char *path = getenv("LOCKBENCH_CLOCK");
	if (!path)
		return;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		offset_ns = p;
}

static void shift(struct timespec *ts) {
	int64_t off = offset_ns ? *offset_ns : 0;
	int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + off;
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000LL;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = (int)syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		shift(ts);
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	(void)tz;
	if (r == 0 && tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
