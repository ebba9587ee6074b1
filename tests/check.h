/* SPDX-License-Identifier: GPL-2.0 */
/* A minimal test harness: each TEST is a function, a failed CHECK names
 * what was expected and what was seen, main() prints one line per test and
 * the summary line tests/run.sh adds up. */
#ifndef TB_CHECK_H
#define TB_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct test_case {
	const char *name;
	void (*fn)(void);
};

/* One count for a test binary, however many of its files include this
 * (weak: the linker keeps one). */
__attribute__((weak)) int check_failures;

/* CHECK and CHECK_EQ are expressions: true when the check held, so a
 * failed precondition can stop its test (if (!CHECK(...)) return;), as
 * the kernel selftests' ASSERT_* do. */
#define CHECK(cond, ...)                                                        \
	({                                                                      \
		bool held_ = (cond);                                            \
		if (!held_) {                                                   \
			fprintf(stderr, "    %s:%d: ", __FILE__, __LINE__);        \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			check_failures++;                                       \
		}                                                               \
		held_;                                                          \
	})

#define CHECK_EQ(seen, expected, ...)                                           \
	({                                                                      \
		unsigned long long s_ = (unsigned long long)(seen);             \
		unsigned long long e_ = (unsigned long long)(expected);         \
		if (s_ != e_) {                                                 \
			char w_[256];                                           \
			snprintf(w_, sizeof(w_), __VA_ARGS__);                  \
			CHECK(0, "%s: expected %llu, saw %llu", w_, e_, s_);    \
		}                                                               \
		s_ == e_;                                                       \
	})

/* Whether test name is one of those the arguments pick: any whose name
 * holds one of them, or all when there are none. */
static inline int test_picked(const char *name, int argc, char **argv)
{
	for (int a = 1; a < argc; a++)
		if (strstr(name, argv[a]))
			return 1;
	return argc < 2;
}

static inline int run_tests(const char *suite, const struct test_case *t, int n,
			    int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (int i = 0; i < n; i++) {
		int before = check_failures;

		if (!test_picked(t[i].name, argc, argv))
			continue;
		t[i].fn();
		if (check_failures == before) {
			passed++;
			printf("ok   %s: %s\n", suite, t[i].name);
		} else {
			failed++;
			printf("FAIL %s: %s\n", suite, t[i].name);
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#define TEST_LIST(...) static const struct test_case tests[] = { __VA_ARGS__ }
/* A binary of several files, a topic each: a file lists its tests with
 * TOPIC(name, T(...), ...), and main runs every topic's with run_topics. */
struct test_topic {
	const struct test_case *cases;
	int n;
};
#define TOPIC(name, ...)                                                                           \
	static const struct test_case name##_cases[] = { __VA_ARGS__ };                            \
	const struct test_topic name = { name##_cases, sizeof(name##_cases) / sizeof(name##_cases[0]) }

static inline int run_topics(const char *suite, const struct test_topic *const *topics, int ntopics, int argc,
			     char **argv)
{
	int n = 0, k = 0, rc;
	struct test_case *all;

	for (int i = 0; i < ntopics; i++)
		n += topics[i]->n;
	all = calloc(n ? n : 1, sizeof(*all));
	if (!all)
		return 1;
	for (int i = 0; i < ntopics; i++)
		for (int j = 0; j < topics[i]->n; j++)
			all[k++] = topics[i]->cases[j];
	rc = run_tests(suite, all, n, argc, argv);
	free(all);
	return rc;
}
#define T(fn) { #fn, fn }
#define RUN(suite) run_tests(suite, tests, sizeof(tests) / sizeof(tests[0]), argc, argv)

#endif
