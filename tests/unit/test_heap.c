// SPDX-License-Identifier: GPL-2.0
/* heap.h against a full sort: the N kept of a random stream are the N
 * first in listing order, ties included, for N from 0 to past the
 * stream's length. */
#include <stdlib.h>
#include <string.h>
#include "lib/heap.h"
#include "../check.h"

struct item {
	unsigned long long value;
	unsigned int id;
};

/* Largest value first, then lowest id: a total order. */
static int listing(const void *x, const void *y)
{
	const struct item *a = x, *b = y;

	if (a->value != b->value)
		return a->value < b->value ? 1 : -1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static void keeps_the_first_n_in_listing_order(void)
{
	enum { LEN = 2000 };
	static struct item stream[LEN], sorted[LEN], kept[LEN + 10];
	static const size_t caps[] = { 0, 1, 2, 10, 100, 1999, 2000, 2010 };
	int wrong = 0;

	srand(99);
	for (int round = 0; round < 20; round++) {
		for (unsigned int i = 0; i < LEN; i++)
			stream[i] = (struct item){ (unsigned long long)(rand() % (round % 2 ? 50 : 1000000)), i };
		memcpy(sorted, stream, sizeof(stream));
		qsort(sorted, LEN, sizeof(*sorted), listing);
		for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			size_t n = 0, want = caps[c] < LEN ? caps[c] : LEN;

			for (unsigned int i = 0; i < LEN; i++)
				heap_offer(kept, &n, caps[c], sizeof(*kept), &stream[i], listing);
			qsort(kept, n, sizeof(*kept), listing);
			wrong += n != want || memcmp(kept, sorted, n * sizeof(*kept));
		}
	}
	CHECK_EQ(wrong, 0, "top-N sets that differ from the sort's first N, of 160");
}

TEST_LIST(
	T(keeps_the_first_n_in_listing_order),
);

int main(int argc, char **argv)
{
	return RUN("heap");
}
