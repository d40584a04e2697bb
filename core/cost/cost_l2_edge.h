/* cost_l2_edge.h - the L2 replay's soft edge (cost_l2.c evict; docs/COST_MODEL.md "The soft edge"); not a public
 * header.
 *
 * The replay's L2 is one list of entries, oldest first.  A line's age is the resident bytes newer than it.  When the
 * list holds more than the capacity, the lines that leave are not the oldest bytes alone (a sharp LRU edge) but a
 * share of every entry old enough: a line of age a leaves with the probability r(a - T) that rises linearly from 0
 * to 1 over `width` bytes of age centred on a threshold T, a dirty line's age counted `credit` bytes younger, and T
 * is the one at which the bytes removed are the bytes that must leave.  Both shapes were measured by
 * cuda/bench/l2drain.cu `order` (device calls 117 and 118: DKV_COST_L2_EDGE and DKV_COST_L2_DIRTY_CREDIT, cost.h). */
#ifndef DKV_COST_L2_EDGE_H
#define DKV_COST_L2_EDGE_H

#include <stdbool.h>

/* One entry of the replay's list: a buffer's resident bytes and, of them, the dirty ones. */
typedef struct l2_ent {
    int      key;
    double   res, dirty;
    unsigned wep;   /* the kernel that last wrote it */
} l2_ent;

#define L2_EDGE_MAX 128   /* entries the edge handles (cost_l2.c's list holds at most 96) */

typedef struct l2_edge {
    double width;    /* the ramp's width in bytes of age (> 0) */
    double credit;   /* a dirty line's age counted this many bytes younger (>= 0) */
    double gap;      /* the last solve's T below the list's bytes, the next solve's first guess (0: none) */
} l2_edge;

/* Removes need bytes (0 < need) from e[0 .. n-2] by the soft edge (e[n-1], the newest entry, stays whole); tot is
 * the list's bytes, e[n-1]'s included.  The dirty bytes removed are added to *written (they go to HBM).  Returns the
 * bytes removed (need within 1e-7 of tot), or 0, changing nothing, where the older entries cannot give need bytes
 * or n > L2_EDGE_MAX (the caller then takes them from the oldest end).  Entries left empty stay in the list for the caller to drop. */
double l2_edge_evict(l2_edge *ed, l2_ent *e, int n, double tot, double need, double *written);

#endif
