/* cost_l2_lines.h - a line-level model of the GPU's L2 (docs/COST_MODEL.md "A line-level L2", session 44): the
 * candidate substrate for the per-buffer replay of cost_l2.c, which keeps a list of buffer entries and so cannot say
 * which lines of a buffer leave, nor who read them.  Pure computation; not yet used by dkv_cost_count_hw.
 *
 * The model is the L2's layout, each part of it a measured or published fact, none fitted to a probe's curve:
 *   - `parts` halves (2 on the A100/H100/H200), each l2_bytes / parts, of sets of `ways` lines of `line` bytes;
 *   - a line's address has a home half and a set in each half, by a hash (call 101: the KV pool's strides conflict
 *     in no set, so the mapping spreads them);
 *   - a write goes to the home half alone (one copy: call 102, the L2 holds about 37 MB of data written by every SM,
 *     more than the 30-31.5 it holds of data read by every SM); it lands dirty, whole lines, no fetch; a copy in the
 *     other half is kept and updated (keep_copy, the default since session 48: device call 129 at probe sizes no
 *     model had seen; off, the copy is dropped);
 *   - a read from an SM of one half finds the line there, else in its home half (no HBM read), else reads it from HBM
 *     into the home half; a read from the other half keeps a copy in the reader's half too (so a line read by SMs of
 *     both halves sits twice, and a line read by one reader on a random side 1.5 times: the one-reader footprint 0.75
 *     against the 0.725 calls 56-58 measured);
 *   - each set replaces its least recently used line, a dirty line's use counted `credit` bytes of traffic later
 *     (calls 117-118: a dirty half leaves about 4 MB of one-reader stream after a clean one);
 *   - a half keeps at most dirty_frac of its bytes dirty: past it its least recently used dirty line is written to
 *     HBM and stays, clean (calls 102 and 123: 28.2-29.7 MB dirty behind one writer, whatever the kind of write).
 * The edge's softness is not a parameter: a set of `ways` lines under a hashed stream gives up a line after a
 * Poisson number of newer lines in its set, which spreads the edge over about 2.6 / sqrt(ways) of the capacity
 * (calls 117-118: 10 -> 90 % gone over 13.7 MB of one-reader stream around 40: ways about 64).
 *
 * Addresses are bytes; a range is split into lines (a partial line at either end counts whole).  `who` says which
 * SMs access each line: L2L_ONE one reader (writer) a line, its half a hash of the line's 4 KB segment (a grid-stride
 * kernel's CTA covers 4 KB a pass), L2L_ALL readers in every half (a GEMM's input, read by every column of CTAs). */
#ifndef DKV_COST_L2_LINES_H
#define DKV_COST_L2_LINES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct dkv_l2l dkv_l2l;

typedef struct dkv_l2l_cfg {
    double   l2_bytes;     /* the whole L2 (H200: 60 MiB) */
    int      parts;        /* halves (1 or 2) */
    int      ways;         /* lines a set */
    int      line;         /* bytes a line (a power of two, 32 to 4,096) */
    double   dirty_frac;   /* the dirty bound, a share of the L2 (0 < f <= 1) */
    double   credit;       /* bytes of one-reader traffic a dirty line's use counts later (>= 0) */
    uint64_t seed;         /* the address hash's */
    bool     keep_copy;    /* a write keeps (updates) a copy in the other half instead of dropping it (session 44:
                              call 123's in-place stream pushes lines out like 1.1 times its bytes of plain reads,
                              where dropping the reader's copy makes it half as heavy; dkv_l2l_h200's since session
                              48, by call 129's clause: below the dropping model on its unseen rows) */
    int      clean_ways;   /* a variant (session 45), 0: off.  After each line put into a set, the set's clean_ways
                              least recently used lines are made clean (a dirty one among them written to HBM and
                              kept): a write-back ahead of eviction by a line's place in its set, which calls 117-118
                              saw (a stream writes back more than the dirty bytes it pushes out).  0 to ways - 1, <= 64 */
} dkv_l2l_cfg;

enum { L2L_ONE = 0, L2L_ALL = 1 };

/* The H200's: 60 MiB, 2 halves, 64 ways of 128 B, dirty bound 28.8 MB (call 123's bwrite), credit 4.0 MB (calls
 * 117-118), keep_copy on (call 129), clean_ways 0.  line may be coarsened for speed (the edge's spread depends on
 * the ways, not the line). */
dkv_l2l_cfg dkv_l2l_h200(void);

/* A new L2 of cfg, empty; NULL (and *err a static message) for a cfg out of range or no memory. */
dkv_l2l *dkv_l2l_new(const dkv_l2l_cfg *cfg, const char **err);
void dkv_l2l_free(dkv_l2l *l);

void dkv_l2l_read(dkv_l2l *l, uint64_t addr, uint64_t bytes, int who);
/* A read of each line by n readers (n >= 1), each reader's half a hash of the line's 4 KB segment and the reader's
 * number (reader 0's is L2L_ONE's): a GEMM's weight line read by the CTAs of its row tiles. */
void dkv_l2l_read_by(dkv_l2l *l, uint64_t addr, uint64_t bytes, int n);
void dkv_l2l_write(dkv_l2l *l, uint64_t addr, uint64_t bytes, int who);
/* Each line read, then written, before the next (a kernel turning rows in place: the RoPE). */
void dkv_l2l_rmw(dkv_l2l *l, uint64_t addr, uint64_t bytes, int who);

/* HBM bytes read and written so far (write-backs: lines pushed out dirty, and the bound's). */
double dkv_l2l_hbm_read(const dkv_l2l *l);
double dkv_l2l_hbm_written(const dkv_l2l *l);
/* Bytes resident (every copy counted) and dirty now. */
double dkv_l2l_resident(const dkv_l2l *l);
double dkv_l2l_dirty(const dkv_l2l *l);

#endif
