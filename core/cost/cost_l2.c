/* cost_l2.c - HBM bytes per kernel class with the GPU's L2 between kernels (cost.h,
 * dkv_cost_count_hw; docs/COST_MODEL.md "HBM bytes with an L2").
 *
 * The forward of cuda/backend_fwd.c is replayed as a sequence of kernels, each a list of buffer
 * accesses, through a model of the L2: one LRU list of entries (a buffer's resident part, its
 * dirty part), capacity hw->l2_bytes / hw->l2_partitions: on the A100/H100/H200 the L2 is two
 * halves, each caching what the SMs attached to it read, and the forward's operands (activations
 * read by every column of CTAs, weight tiles by every row) are read from both, so held twice.  A read costs HBM bytes for the part of the buffer that is
 * not resident; a write lands in L2 dirty (whole 32-byte sectors: no fetch), replacing the
 * buffer's older lines in place; lines pushed out past the capacity (the oldest, by a soft edge:
 * cost_l2_edge.h) that are dirty are written to HBM and charged to the kernel that pushed them (what
 * Nsight Compute's dram__bytes_write.sum of that kernel counts when caches are not flushed between
 * kernels), and so are the oldest dirty
 * lines past DKV_COST_L2_DIRTY_FRAC of the L2 (they stay, clean).  A kernel that walks its rows
 * (norms, RoPE and the store, SwiGLU, attention) reads and writes as it goes: its reads count
 * in turn, then the lines it read and wrote enter the L2 interleaved (walk()).  Weights and KV written in
 * earlier layers or steps are streamed: never resident when read (their last use is a whole
 * forward ago), they occupy L2 and push older lines out.
 *
 * A GEMM runs in waves of n_sms output tiles: each wave reads its share of the weights (a GEMM of
 * one row tile has one CTA reading each weight line, and such lines take DKV_COST_L2_ONE_READER of
 * their bytes in the L2; a later row group re-reads what is left of them),
 * touches the whole input (its tiles of every row block), and writes its share of the output at
 * the end (the epilogue), so a GEMM whose weight stream after a wave exceeds the L2 pushes its
 * own earlier output out (the SwiGLU then reads it from HBM); a GEMM of few tiles splits K and
 * writes fp32 partials (gemm_replay()).  Where the profile's gemm_reads block measured the GEMM's
 * shape alone at its warm-up bucket, its reads take the measurement's correction (gemm_measured()).
 *
 * Layers are identical: the layer is replayed three times after the step's start and the third
 * is counted (the weight streams flush everything older, so the state repeats); the step's start
 * (reset, embeddings) runs after the previous step's LM head of the same plan. */
#include "cost/cost.h"
#include "cost/cost_l2_edge.h"
#include "cost/cost_l2_memo.h"
#include "cost/profile.h"

#include <math.h>
#include <string.h>

#define GEMM_CHUNKS 8.0
#define MAX_ENT 96
_Static_assert(MAX_ENT <= L2_EDGE_MAX, "the soft edge handles every entry of the list");

dkv_cost_hw dkv_cost_hw_of(const dkv_gpu *g)
{
    dkv_cost_hw hw = {.l2_bytes = g->l2_bytes, .l2_partitions = g->l2_partitions, .n_sms = g->n_sms,
                      .profile = g->profile ? dkv_profile_get_info(g->profile) : NULL};
    return hw;
}

enum { B_STREAM = 0, B_X, B_H, B_QKV, B_Q, B_K, B_V, B_ATT, B_GU, B_FF, B_KVNEW, B_SC, B_ST, B_COL, B_SEL, B_LOGITS, B_ARG, B_SPLITK, B_WGT };   /* B_WGT + i: a GEMM's weight slice i, during the GEMM */

typedef l2_ent ent;

#define READS_CACHE 8

typedef struct { double b, n, k, delta; } reads_fix;   /* a gemm_measured correction: bucket rows, N, K */

typedef struct {
    ent e[MAX_ENT];   /* e[0]: least recently used */
    int n;
    double cap, tot;
    double dcap;      /* dirty bytes the L2 keeps at most (DKV_COST_L2_DIRTY_FRAC) */
    l2_edge edge;     /* which lines leave past the capacity (cost_l2_edge.h) */
    double dub;       /* an upper bound of the dirty bytes: only push adds dirty lines (every other
                         change moves or removes them), so it grows there and is reset when summed */
    double rd, wr;    /* the current kernel's HBM bytes */
    unsigned ep;      /* current kernel */
    double n_sms;
    const dkv_profile_info *prof;   /* the GEMMs' K splits (gemm_splitk) and reads (gemm_reads), or NULL */
    bool measured;    /* a GEMM the profile's gemm_reads holds takes its measured reads (gemm_measured) */
    bool left;        /* a GEMM the profile's gemm_left holds leaves its measured output in L2 (gemm_left) */
    int tail;         /* the buffer a GEMM just wrote whose resident part is its last rows (-1: none): the part
                         gemm_left measured, or the LM head's logits */
    unsigned tail_ep; /* ... the GEMM's kernel (the walk of kernel tail_ep + 1 meets it: walk_to_tail) */
    double tail_mnk[3];   /* ... and its shape, M, N, K (the store's measurement: gemm_store) */
    reads_fix rc[READS_CACHE];   /* gemm_measured's corrections this step */
    int nrc;
} l2m;

static void drop(l2m *s, int i)
{
    memmove(&s->e[i], &s->e[i + 1], (size_t)(s->n - i - 1) * sizeof s->e[0]);
    s->n--;
}

/* Dirty lines past dcap are written to HBM, the oldest first; they stay, clean.  The sum over the
 * entries (the replay's hot path) is skipped while the bound dub is clearly under dcap. */
static void clean_oldest(l2m *s)
{
    if (s->dub <= s->dcap * (1 - 1e-9))
        return;
    double dirty = 0;
    for (int i = 0; i < s->n; i++)
        dirty += s->e[i].dirty;
    for (int i = 0; i < s->n && dirty > s->dcap; i++) {
        double t = fmin(dirty - s->dcap, s->e[i].dirty);
        s->e[i].dirty -= t, s->wr += t, dirty -= t;
    }
    s->dub = dirty;
}

/* Lines past the capacity leave by the soft edge (cost_l2_edge.h): a share of every entry old enough, dirty lines
 * later than clean ones; their dirty share goes to HBM.  What the edge cannot take (the newest entry alone holds
 * more than the capacity) leaves from the LRU end. */
static void evict(l2m *s)
{
    clean_oldest(s);
    if (s->tot > s->cap * (1 + 1e-12) && s->n > 1) {
        double gone = l2_edge_evict(&s->edge, s->e, s->n, s->tot, s->tot - s->cap, &s->wr);
        if (gone > 0) {
            s->tot -= gone;
            for (int i = s->n - 2; i >= 0; i--)
                if (s->e[i].res <= 1e-9 * s->cap)
                    s->tot -= s->e[i].res, drop(s, i);
        }
    }
    while (s->tot > s->cap * (1 + 1e-12) && s->n > 1) {
        ent *x = &s->e[0];
        double take = fmin(s->tot - s->cap, x->res), dd = x->res > 0 ? x->dirty * take / x->res : 0;
        s->wr += dd;
        x->res -= take, x->dirty -= dd, s->tot -= take;
        if (x->res <= 1e-9 * s->cap)
            s->tot -= x->res, drop(s, 0);
    }
}

static void compact(l2m *s);

static void push(l2m *s, int key, double res, double dirty, unsigned wep)
{
    if (res <= 0)
        return;
    if (s->n == MAX_ENT)
        compact(s);
    ent *m = s->n ? &s->e[s->n - 1] : NULL;
    if (m && ((key == B_STREAM && m->key == B_STREAM) || s->n == MAX_ENT)) {   /* merge: same behaviour */
        m->res += res, m->dirty += dirty;
        if (m->key != key)
            m->key = B_STREAM;
    } else
        s->e[s->n++] = (ent){key, res, dirty, wep};
    s->tot += res, s->dub += dirty;
    evict(s);
}

/* Takes every entry of buffer key out of the L2: its resident and dirty bytes and the latest
 * kernel that wrote it. */
static void take(l2m *s, int key, double *res, double *dirty, unsigned *wep)
{
    *res = *dirty = 0, *wep = 0;
    for (int i = s->n - 1; i >= 0; i--)
        if (s->e[i].key == key) {
            *res += s->e[i].res, *dirty += s->e[i].dirty;
            *wep = s->e[i].wep > *wep ? s->e[i].wep : *wep;
            s->tot -= s->e[i].res;
            drop(s, i);
        }
}

/* Reads bytes of a GEMM's weights that take foot x bytes of the L2 (DKV_COST_L2_ONE_READER when one
 * CTA reads each line, 1 otherwise): key B_STREAM streams them (all from HBM); a weight slice key
 * (B_WGT + i) finds what is left of the slice in L2 first. */
static void wread(l2m *s, int key, double bytes, double foot)
{
    if (bytes <= 0)
        return;
    double r = 0, d;
    unsigned wep;
    if (key != B_STREAM)
        take(s, key, &r, &d, &wep);
    s->rd += fmax(0, bytes - r / foot);
    push(s, key, fmin(fmax(r, bytes * foot), s->cap), 0, 0);
}

/* Reads bytes of a streamed operand (weights, KV of other layers): all from HBM. */
static void stream(l2m *s, double bytes) { wread(s, B_STREAM, bytes, 1); }

/* Reads bytes of buffer key, tot bytes in all (tot <= bytes: the whole buffer): of a whole buffer the
 * resident part hits, of a part of one (a request's rows, the rows a selection keeps) the resident
 * share res / tot of it; the rest comes from HBM; the buffer becomes the most recent. */
static void rd_of(l2m *s, int key, double bytes, double tot)
{
    if (bytes <= 0)
        return;
    double r, d;
    unsigned wep;
    take(s, key, &r, &d, &wep);
    double hit = tot > bytes ? bytes * fmin(1, r / tot) : fmin(r, bytes);
    s->rd += bytes - hit;
    double nr = fmin(tot > bytes ? fmin(tot, r + bytes - hit) : fmax(r, bytes), s->cap);
    push(s, key, nr, fmin(d, nr), wep);
}

static void rd(l2m *s, int key, double bytes) { rd_of(s, key, bytes, 0); }

/* A GEMM's read of bytes of its input (a row group's rows): the resident part hits, the rest
 * comes from HBM (counted unless the caller counted it: all_miss, the rows were pushed out).
 * Only these rows become the most recent: the buffer's other resident lines (other groups' rows;
 * all of them when the rows were pushed out) go to the LRU end, where the GEMM's weight stream
 * pushes them out, dirty ones to HBM, during this GEMM. */
static void rd_rows(l2m *s, int key, double bytes, bool all_miss)
{
    if (bytes <= 0)
        return;
    double r, d;
    unsigned wep;
    take(s, key, &r, &d, &wep);
    s->rd += all_miss ? bytes : fmax(0, bytes - r);
    double old = all_miss ? r : fmax(0, r - bytes), dold = r > 0 ? d * old / r : 0;
    if (old > 0 && s->n < MAX_ENT) {
        memmove(&s->e[1], &s->e[0], (size_t)s->n * sizeof s->e[0]);
        s->e[0] = (ent){key, old, dold, wep};
        s->n++, s->tot += old;
    } else if (old > 0) {   /* no room for the entry (a bound, never reached): they leave now */
        s->wr += dold;
    }
    double nr = all_miss ? fmin(bytes, s->cap) : fmin(fmax(r, bytes), s->cap) - old;
    push(s, key, nr, fmin(d - dold, nr), wep);
}

/* Writes bytes of buffer key: they replace up to bytes of the buffer's lines written by earlier
 * kernels (in place, no write-back) and land dirty; more than the L2 holds streams out now. */
static void wr(l2m *s, int key, double bytes)
{
    if (bytes <= 0)
        return;
    double left = bytes;
    for (int i = 0; i < s->n && left > 0;) {
        ent *x = &s->e[i];
        if (x->key != key || x->wep == s->ep) {
            i++;
            continue;
        }
        double t = fmin(left, x->res);
        left -= t;
        x->dirty = fmax(0, x->dirty - t), x->res -= t, s->tot -= t;
        if (x->res <= 0)
            drop(s, i);
        else
            i++;
    }
    if (bytes > s->cap)
        s->wr += bytes - s->cap;
    push(s, key, fmin(bytes, s->cap), fmin(bytes, s->cap), s->ep);
}

/* Merges the entries of buffer key into one at the place of its most recent. */
static void coalesce(l2m *s, int key)
{
    int last = -1;
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->e[i].key != key)
            continue;
        if (last < 0) {
            last = i;
            continue;
        }
        ent x = s->e[i];
        drop(s, i), last--;
        s->e[last].res += x.res, s->e[last].dirty += x.dirty;
        s->e[last].wep = x.wep > s->e[last].wep ? x.wep : s->e[last].wep;
    }
}

/* Room for an entry when the list is full (a bound the forward's kernels do not reach on the GPU presets; an L2
 * that evicts nothing does): the oldest buffer's entries become one, at its most recent (as every walk's did
 * before session 32), so its order is what goes first; of streamed lines (B_STREAM), the oldest entry takes in the
 * next one. */
static void compact(l2m *s)
{
    for (int i = 0; i < s->n && s->n == MAX_ENT; i++) {
        int before = s->n;
        if (s->e[i].key == B_STREAM) {
            for (int j = i + 1; j < s->n; j++)
                if (s->e[j].key == B_STREAM) {   /* the newer into the older: never read again, they go first */
                    s->e[i].res += s->e[j].res, s->e[i].dirty += s->e[j].dirty;
                    drop(s, j);
                    break;
                }
        } else {
            coalesce(s, s->e[i].key);
        }
        if (s->n < before)
            return;
    }
}

typedef struct { int key; double bytes, tot; } acc;   /* tot: the buffer's bytes when bytes are a part of it (rd_of) */

/* A kernel that walks its rows (the attention its heads) once, reading and writing each as it
 * goes: the norms, RoPE and the KV store, the SwiGLU, the attention, the selection's pack.  Its
 * reads count in turn as rd() (a buffer's resident part hits, what an earlier read pushed out
 * misses), then streamed bytes; then the lines it read (each buffer's bytes) and the lines it
 * writes enter the L2 in ROW_SLICES alternating slices, so what it keeps at its end is its last rows'
 * reads and writes in proportion to their bytes, and its own dirty lines that the rest pushed out
 * went to HBM during it (one write after all the reads keeps all of it).  The slices stay apart, in
 * the order the walk made them, so the kernels after it push its first rows out first (since session
 * 32, docs/COST_MODEL.md "Kernel by kernel": before it each buffer's slices were merged into one entry).  (Before session 21 a read
 * entered as at most C bytes, so a walk reading more than C, the SwiGLU of a large Refresh, kept
 * twice the share of its output it does: docs/COST_MODEL.md "What a GEMM leaves of its output".) */
#define ROW_SLICES 8
#define WALK_MAX 4

/* Whether buffer key is (a part of) the buffer gemm_left left, and one the walk reads whole. */
static bool of_tail(const l2m *s, int key, const acc *r, int nr)
{
    if (key != s->tail && !(s->tail == B_QKV && (key == B_Q || key == B_K || key == B_V)))
        return false;
    for (int j = 0; j < nr; j++)
        if (r[j].key == key && r[j].bytes > 0 && r[j].tot <= r[j].bytes)
            return true;
    return false;
}

/* What a GEMM left of its output (gemm_left) is its last rows, the lines it wrote last.  A row walk right after it
 * that goes through the rows in order (one block a row: the RoPE-store, the norms, the LM head's argmax) reaches
 * them last: by then the walk's own lines have entered, E = (Y - R) rho bytes for the Y - R bytes
 * of rows it read before them (rho: the bytes entering per byte read: its reads, streamed bytes and writes to
 * other buffers).  In an LRU they push out every older line first, then the left rows, oldest first; a row walk's
 * lines and the GEMM's output lines have one reader (writer) each and take DKV_COST_L2_ONE_READER of their bytes,
 * so the left rows start to go once E + R exceeds C / DKV_COST_L2_ONE_READER.  What goes leaves now (its dirty
 * share to HBM, in this walk), before the walk's reads count.  (LLaDA-8B's RoPE-store at 1,664 rows finds 0.6 MB
 * of the 8.8 its q|k|v GEMM leaves: it writes K and V to new lines beside its reads, rho = 1.67, E = 53.5 MB;
 * Dream-7B's, rho = 1.22, finds all of it at every row count measured; docs/COST_MODEL.md "The walk after a
 * GEMM".)  The SwiGLU after gate|up does not go in row order: its grid-stride loop (cuda/swiglu.cu, at most 4,096
 * blocks) has each block take a vector of every 8 Mi elements, so it meets the left rows evenly through its run,
 * and finds those it meets before its own lines push them out (tail_kept's spread form: LLaDA-8B at 1,280 rows
 * 4.0 of 8.7 MB, the GPU 5.2; at 3,072 rows 1.8 of 10.1, the GPU 3.4). */
static double tail_kept(double Y, double R, double rho, double C1, bool spread)
{
    double T = (Y - R) * rho;   /* the walk's entering bytes */
    if (!spread)                /* the left rows met last, after T */
        return fmax(0, fmin(R, C1 - T));
    if (T <= 0 || C1 - R >= T)  /* every left line still there when met */
        return R;
    /* met evenly through the walk: until x0 nothing older than the left lines is left to push out; after it the
     * lines not met yet go, the oldest first, at the rate the walk's lines enter, all by x0 + dx */
    double x0 = fmax(0, (C1 - R) / T), dx = fmin(1 - x0, R * (1 - x0) / T);
    return R * x0 + R * dx / 2;
}

/* What the RoPE-store's walk finds of what the q|k|v GEMM before it left, measured alone (the profile's gemm_store,
 * docs/COST_MODEL.md "The walk after a GEMM"): the measurement at the nearest row count R, scaled by M / R below it;
 * -1 (tail_kept's rule) when the profile lacks it or the walk is not the one measured.  The measured walk reads the
 * Y bytes of q|k|v and writes every row's k and v to new lines, Y (N - K) / N bytes (N = K + 2 hkv); a walk counts
 * as it when it writes 85-105 % of that fresh: a Refresh step's store of every row, or under prefix caching of the
 * prompt's rows (4 x (304 + 32) tokens: 90 %); not a RoPE without a store, nor a store into an 8-bit pool (50 %).
 * The GPU's retention there is no LRU edge: LLaDA-8B's store finds 3.4-6.0 MB of the 6.5-8.6 its GEMM leaves at
 * 1,344-1,536 rows, where the rule finds at most 1.2. */
static double store_found(const l2m *s, double Y, double fresh)
{
    double R, M = s->tail_mnk[0], N = s->tail_mnk[1], K = s->tail_mnk[2], x = fresh / (Y * (N - K) / N);
    if (s->tail != B_QKV || !(Y > 0) || !(N > K) || x < 0.85 || x > 1.05)
        return -1;
    double v = dkv_profile_gemm_store(s->prof, M, N, K, &R);
    return v < 0 ? -1 : v * fmin(1, M / R);
}

static void walk_to_tail(l2m *s, const acc *r, int nr, double streamed, const acc *w, int nw)
{
    if (s->tail < 0 || s->ep != s->tail_ep + 1)
        return;
    double Y = 0, read = 0, fresh = streamed, R = 0;
    for (int j = 0; j < nr; j++) {
        read += r[j].bytes;
        if (of_tail(s, r[j].key, r, nr))
            Y += r[j].bytes;
    }
    for (int j = 0; j < nw; j++) {
        bool inplace = false;
        for (int i = 0; i < nr; i++)
            inplace = inplace || r[i].key == w[j].key;
        fresh += inplace ? 0 : w[j].bytes;
    }
    for (int i = 0; i < s->n; i++)
        R += of_tail(s, s->e[i].key, r, nr) ? s->e[i].res : 0;
    const bool spread = s->tail == B_GU;   /* the SwiGLU's grid-stride loop; the other walks go row by row */
    double kept = Y > 0 && R > 0 ? tail_kept(Y, fmin(R, Y), (read + fresh) / read, s->cap / DKV_COST_L2_ONE_READER,
                                             spread) : 0;
    double found = store_found(s, Y, fresh);
    if (found >= 0 && Y > 0 && R > 0)
        kept = fmin(fmin(R, Y), found);
    double f = Y > 0 && R > 0 ? 1 - kept / fmin(R, Y) : 0;
    for (int i = 0; i < s->n && f > 0; i++)
        if (of_tail(s, s->e[i].key, r, nr)) {
            ent *x = &s->e[i];
            double gone = x->res * f, dg = x->dirty * f;
            s->wr += dg, x->dirty -= dg, x->res -= gone, s->tot -= gone;
        }
    s->tail = -1;
}

static void walk(l2m *s, const acc *r, int nr, double streamed, const acc *w, int nw)
{
    double res[WALK_MAX], dirty[WALK_MAX];
    unsigned wep[WALK_MAX];
    walk_to_tail(s, r, nr, streamed, w, nw);
    for (int j = 0; j < nr; j++)
        rd_of(s, r[j].key, r[j].bytes, r[j].tot);
    stream(s, streamed);
    for (int j = 0; j < nr; j++) {
        res[j] = dirty[j] = 0, wep[j] = 0;
        if (r[j].bytes <= 0)
            continue;
        take(s, r[j].key, &res[j], &dirty[j], &wep[j]);
        res[j] = fmax(res[j], r[j].bytes), dirty[j] = fmin(dirty[j], res[j]);
    }
    for (int c = 0; c < ROW_SLICES; c++) {
        for (int j = 0; j < nr; j++)
            push(s, r[j].key, res[j] / ROW_SLICES, dirty[j] / ROW_SLICES, wep[j]);
        for (int j = 0; j < nw; j++)
            wr(s, w[j].key, w[j].bytes / ROW_SLICES);
    }
}

/* The attention's walk: the flash kernel reads its inputs head by head, across the rows the kernels
 * before wrote row by row, so a line resident at the kernel's start hits only if it is still there at
 * its head's turn.  Lines entering (misses, streamed bytes, writes: T bytes over the walk, evenly)
 * first replace the J bytes of the L2 that are not the walk's inputs; after that the L2 replaces lines
 * as if at random, so a resident input line survives E more bytes entering with probability
 * exp(-E / C).  With R of the B read bytes resident at the start: dE/dx = T - R exp(-E / C) over
 * what is left of the walk after the first x1 = J / (T - R), solved in closed form; the
 * reads are the bytes entering less the writes.  The walk's own count (every resident byte hits)
 * is raised to that. */
static void walk_heads(l2m *s, const acc *r, int nr, double streamed, const acc *w, int nw)
{
    double B = 0, R = 0, W = 0, rd0 = s->rd, tot = s->tot;
    for (int j = 0; j < nr; j++) {
        double res = 0;
        for (int i = 0; i < s->n; i++)
            res += s->e[i].key == r[j].key ? s->e[i].res : 0;
        B += r[j].bytes, R += r[j].tot > r[j].bytes ? r[j].bytes * fmin(1, res / r[j].tot) : fmin(res, r[j].bytes);
    }
    for (int j = 0; j < nw; j++)
        W += w[j].bytes;
    walk(s, r, nr, streamed, w, nw);
    const double C = s->cap, T = B + streamed + W, J = fmax(0, fmax(tot, C) - R);
    if (R <= 0 || T <= R)
        return;
    const double x1 = J / (T - R);   /* the part of the walk whose entering lines replace the J bytes */
    if (x1 >= 1)
        return;
    double E = C * log(R / T + (1 - R / T) * exp(fmin(T * (1 - x1) / C, 600)));
    s->rd = fmax(s->rd, rd0 + (B - R + streamed) * x1 + E - W * (1 - x1));
}

/* The QKV GEMM's output as three buffers (q, k, v columns, in proportion fq, fk, 1 - fq - fk),
 * each entry split where it lies in the LRU order: later kernels read and write them apart. */
static void split_qkv(l2m *s, double fq, double fk)
{
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->e[i].key != B_QKV)
            continue;
        if (s->n + 2 > MAX_ENT) {   /* no room: the whole entry becomes q (a bound, never reached) */
            s->e[i].key = B_Q;
            continue;
        }
        ent x = s->e[i];
        memmove(&s->e[i + 3], &s->e[i + 1], (size_t)(s->n - i - 1) * sizeof s->e[0]);
        s->n += 2;
        double f[3] = {fq, fk, 1 - fq - fk};
        for (int j = 0; j < 3; j++)
            s->e[i + j] = (ent){B_Q + j, x.res * f[j], x.dirty * f[j], x.wep};
    }
}

/* A GEMM out[M x N] = in[M x K] W (+ residual).  Tiles: dkv_cost_gemm_tiles (cost_gemm.c).  With at most n_sms / 2 tiles
 * cuBLAS splits K over floor(n_sms / tiles) CTAs per tile: each writes an fp32 partial
 * (splitKreduce then reads them and writes the output, same class).  Otherwise the persistent grid
 * of n_sms CTAs walks the output in super-tiles (dkv_cost_gemm_plan): a group of row tiles across
 * as many column tiles as there are CTAs; every group streams the weights once more, every
 * column wave of a group reads the group's input rows; the output share is written at the end of
 * each column wave (the epilogue). */
static void gemm_replay(l2m *s, int in, double in_b, double w_b, int res, double res_b, int out, double out_b,
                        double M, double N, double K)
{
    dkv_cost_gemm_plan g;
    dkv_cost_gemm_tiles(M, N, K, s->n_sms, dkv_profile_gemm_splitk(s->prof, M, N, K), &g);
    rd(s, res, res_b);
    /* with one row tile each weight line is read by one CTA: it takes less of the L2 than the
     * operands every CTA reads (docs/COST_MODEL.md "What the L2 keeps between kernels") */
    const double foot = g.tiles_m == 1 ? DKV_COST_L2_ONE_READER : 1;
    if (g.splits > 0) {
        double ws = g.splits * M * N * 4.0;
        rd(s, in, in_b), wread(s, B_STREAM, w_b, foot), wr(s, B_SPLITK, ws);
        rd(s, B_SPLITK, ws), wr(s, out, out_b);
        return;
    }
    /* spill: the GEMM's operands do not fit the L2 together, so a later group finds its input rows
     * gone (the weight stream of the groups before pushed them out); sweep: one column wave's input
     * rows, weights and output do not fit together, so the next column wave of the group finds the
     * rows gone (LRU over a cyclic sweep) */
    double fr = fmin(g.group_rows, g.tiles_m) / g.tiles_m, fc = fmin(g.group_cols, g.tiles_n) / g.tiles_n;
    bool spill = g.groups > 1 && in_b + w_b + out_b + res_b > s->cap;
    bool sweep = g.col_waves > 1 && fr * (in_b + res_b) + fc * (w_b + fr * out_b) > s->cap;
    /* at most GEMM_CHUNKS x GEMM_CHUNKS replay steps: consecutive groups and column waves merged */
    double gs = ceil(g.groups / GEMM_CHUNKS), cs = ceil(g.col_waves / GEMM_CHUNKS);
    for (double g0 = 0; g0 < g.groups; g0 += gs) {
        double ng = fmin(gs, g.groups - g0);
        double rows = fmin(g.tiles_m, (g0 + ng) * g.group_rows) - g0 * g.group_rows, slab = in_b * rows / g.tiles_m / ng;
        for (double c0 = 0; c0 < g.col_waves; c0 += cs) {
            double nc = fmin(cs, g.col_waves - c0);
            double cols = fmin(g.tiles_n, (c0 + nc) * g.group_cols) - c0 * g.group_cols, fb = cols / g.tiles_n;
            /* ng x nc reads of a group's input rows: a group's first (c0 == 0) finds them where the
             * kernels before left them (the first group) or misses on a spill (later groups); the
             * others miss on a sweep */
            double miss = 0;
            if (c0 == 0) {
                rd_rows(s, in, slab, g0 > 0 && spill);
                miss = ((ng - 1) * spill + ng * (nc - 1) * sweep) * slab;
            } else {
                rd_rows(s, in, slab, sweep);
                miss = (ng * nc - 1) * sweep * slab;
            }
            s->rd += miss;
            /* every group reads the weights: a later group's read of a column chunk finds what is
             * left of that chunk in L2 (the last chunks of a GEMM whose weights are near C); merged
             * groups (more than GEMM_CHUNKS) stream theirs, unless nothing spills */
            if (gs == 1)
                wread(s, B_WGT + (int)(c0 / cs), w_b * fb, foot);
            else
                stream(s, w_b * fb * (spill ? ng : g0 == 0));
            wr(s, out, out_b * rows / g.tiles_m * fb);
        }
    }
    for (int i = 0; i < s->n; i++)   /* to the kernels after, the weights are streamed lines */
        if (s->e[i].key >= B_WGT)
            s->e[i].key = B_STREAM;
}

/* The correction of a GEMM's reads from the profile's gemm_reads (docs/COST_MODEL.md "Large-M GEMM reads,
 * measured"): what the GEMM read measured alone at its warm-up bucket b rows (L2 flushed, the input just
 * written, the residual cold), less what the replay counts for that measurement (an empty L2, the input of
 * b rows written, then gemm_replay at b rows).  The replay carries the context (what the kernels before
 * left resident), the measurement the traversal (how often cuBLAS's tiles re-read the weights and the
 * input); 0 without a measurement. */
static double gemm_measured(l2m *s, int in, double in_b, double w_b, int res, double res_b, int out, double out_b,
                            double M, double N, double K)
{
    double b, meas = s->measured ? dkv_profile_gemm_reads(s->prof, M, N, K, &b) : 0;
    if (!(meas > 0))
        return 0;
    for (int i = 0; i < s->nrc; i++)
        if (s->rc[i].b == b && s->rc[i].n == N && s->rc[i].k == K)
            return s->rc[i].delta;
    l2m t = {.cap = s->cap, .dcap = s->dcap, .edge = {s->edge.width, s->edge.credit, 0}, .n_sms = s->n_sms,
             .prof = s->prof, .ep = 1, .tail = -1};
    const double f = b / M;
    wr(&t, in, in_b * f);
    t.ep = 2, t.rd = t.wr = 0;
    gemm_replay(&t, in, in_b * f, w_b, res, res_b * f, out, out_b * f, b, N, K);
    double delta = meas - t.rd;
    if (s->nrc < READS_CACHE)
        s->rc[s->nrc++] = (reads_fix){b, N, K, delta};
    return delta;
}

/* What the GEMM leaves of its output (out_b bytes of buffer out) in L2, from the profile's gemm_left
 * (docs/COST_MODEL.md "What a GEMM leaves of its output"): the measurement alone at the nearest row count R,
 * scaled by M / R below it, at most the output and C.  The output's resident part becomes that.  Lines the
 * replay pushed out during the GEMM but the GPU kept stay clean, their write-back counted (in the forward the
 * O projection at 2,400 rows writes back as much as its input and output together, Dream-7B's 35.4 MB of
 * 17.2 + 17.2, though alone it leaves its kept lines dirty: kept dirty here, the writes are worse,
 * docs/COST_MODEL.md); lines the replay kept but the GPU did not go now, their dirty share to HBM. */
static void gemm_left(l2m *s, int out, double out_b, double M, double N, double K)
{
    double R, left = s->left ? dkv_profile_gemm_left(s->prof, M, N, K, &R) : -1;
    if (left < 0)
        return;
    double L = fmin(fmin(out_b, s->cap), left * fmin(1, M / R)), r, d;
    unsigned wep;
    take(s, out, &r, &d, &wep);
    if (L < r) {
        double gone = d * (r - L) / r;
        s->wr += gone, d -= gone;
    }
    push(s, out, L, fmin(d, L), wep ? wep : s->ep);
    s->tail = out, s->tail_ep = s->ep;
    s->tail_mnk[0] = M, s->tail_mnk[1] = N, s->tail_mnk[2] = K;
}

/* A GEMM: the replay's bytes, its reads corrected by the profile's measurement where it holds the shape, and
 * what it leaves of its output in L2 the measured part where the profile holds that. */
static void gemm(l2m *s, int in, double in_b, double w_b, int res, double res_b, int out, double out_b, double M,
                 double N, double K)
{
    double rd0 = s->rd;
    gemm_replay(s, in, in_b, w_b, res, res_b, out, out_b, M, N, K);
    double delta = gemm_measured(s, in, in_b, w_b, res, res_b, out, out_b, M, N, K);
    s->rd = rd0 + fmax(0, s->rd - rd0 + delta);
    gemm_left(s, out, out_b, M, N, K);
}

typedef struct {
    l2m s;
    dkv_cost_class *cls;   /* where the current kernel's bytes go (NULL: warm-up, dropped) */
    int kind;              /* its class */
    dkv_cost_l2_trace *trace;
} run;

static void kbegin(run *r, dkv_cost_class *c, int kind)
{
    r->s.ep++;
    r->s.rd = r->s.wr = 0;
    r->cls = c, r->kind = kind;
}

static void kend(run *r)
{
    if (!r->cls)
        return;
    r->cls->rd += r->s.rd, r->cls->wr += r->s.wr;
    dkv_cost_l2_trace *t = r->trace;
    if (t && t->n < DKV_COST_L2_TRACE_MAX) {
        dkv_cost_l2_kernel k = {(dkv_kernel_class)r->kind, r->s.rd, r->s.wr, 0, 0, 0, 0};
        for (int i = 0; i < r->s.n; i++) {
            const ent *e = &r->s.e[i];
            k.dirty += e->dirty;
            k.held_x += e->key == B_X ? e->res : 0;
            k.held_qkv += e->key == B_QKV || e->key == B_Q || e->key == B_K || e->key == B_V ? e->res : 0;
            k.held_att += e->key == B_ATT ? e->res : 0;
        }
        t->k[t->n++] = k;
    }
    else if (t)
        t->dropped++;
}

/* What the replay reads of the step's items besides their rows (cost_l2_memo.h's l2_inputs): one place, so that
 * the replay and its memo's key read the same values. */
static void replay_inputs(const dkv_model *m, const dkv_step_plan *plan, l2_inputs *in)
{
    const double hkv = (double)m->n_kv_heads * m->head_dim, ab = dkv_dtype_bytes(m->act_dtype);
    memset(in, 0, sizeof *in);
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        double kb = it->kv_dtype_bytes ? it->kv_dtype_bytes : dkv_dtype_bytes(m->kv_dtype);
        if (it->kv_write_tokens && it->kv_select_rows)
            in->select = true;
        else if (it->kv_write_tokens)
            in->stored += it->kv_write_tokens * 2 * hkv * kb;
    }
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        double kb = it->kv_dtype_bytes ? it->kv_dtype_bytes : dkv_dtype_bytes(m->kv_dtype);
        in->own += (double)(it->kv_tokens - it->kv_cached_tokens) * 2 * hkv * ab;
        in->cached += it->kv_cached_tokens * 2 * hkv * kb;
    }
}

/* One layer of cuda/backend_fwd.c's bk_forward; out[c] receives class c's bytes (NULL: none). */
static void layer(run *r, const dkv_model *m, const dkv_step_plan *plan, const dkv_cost_step *cs, const l2_inputs *in,
                  double streams, dkv_cost_class *out)
{
    const double d = m->hidden, f = m->ffn, Q = cs->q_rows, ab = dkv_dtype_bytes(m->act_dtype);
    const double wb = dkv_dtype_bytes(m->weight_dtype), hq = (double)m->n_heads * m->head_dim;
    const double hkv = (double)m->n_kv_heads * m->head_dim, qkv = hq + 2 * hkv;
    l2m *s = &r->s;
#define K(c) kbegin(r, out ? &out[c] : NULL, c)
    const acc xin[] = {{B_X, Q * d * ab, 0}}, hout[] = {{B_H, Q * d * ab, 0}};
    K(DKV_KCLASS_ELEMENTWISE), walk(s, xin, 1, d * wb, hout, 1), kend(r);
    K(DKV_KCLASS_QKV), gemm(s, B_H, Q * d * ab, streams * d * qkv * wb, -1, 0, B_QKV, Q * qkv * ab, Q, qkv, d), kend(r);
    split_qkv(s, hq / qkv, hkv / qkv);
    const double qb = Q * hq * ab, kb1 = Q * hkv * ab;   /* the step's q, and its k (or v) */
    const double stored = in->stored;
    const bool select = in->select;
    /* RoPE rotates q and k in place (every row); fused with the store it also writes the stored
     * rows' K and V into the pool (cuda/fused_rope_store.cu; rows not kept go to the one discard
     * block, rewritten in L2) */
    const acc qk[] = {{B_Q, qb, 0}, {B_K, kb1, 0}, {B_V, cs->any_store ? kb1 : 0, 0}};
    const acc qkst[] = {{B_Q, qb, 0}, {B_K, kb1, 0}, {B_KVNEW, stored, 0}};
    K(cs->any_store ? DKV_KCLASS_KV_STORE : DKV_KCLASS_ELEMENTWISE), walk(s, qk, 3, 0, qkst, cs->any_store ? 3 : 2),
        kend(r);
    for (uint32_t i = 0; select && i < plan->n_items; i++) {   /* scores, row stats, col sums, top-k, pack */
        const dkv_step_item *it = &plan->items[i];
        if (!(it->kv_write_tokens && it->kv_select_rows))
            continue;
        double q = it->q_tokens, rows = it->kv_select_rows, keep = it->kv_write_tokens, H = m->n_heads;
        double Hk = m->n_kv_heads, sc = H * rows * q * 4.0, kvb = keep * 2 * hkv * ab;
        K(DKV_KCLASS_KV_GATHER), rd_of(s, B_Q, rows * hq * ab, qb), rd_of(s, B_K, q * hkv * ab, kb1), wr(s, B_SC, sc);
        kend(r);
        K(DKV_KCLASS_KV_GATHER), rd(s, B_SC, sc), wr(s, B_ST, H * rows * 8.0), kend(r);
        K(DKV_KCLASS_KV_GATHER), rd(s, B_SC, sc), rd(s, B_ST, H * rows * 8.0), wr(s, B_COL, Hk * q * 4.0), kend(r);
        K(DKV_KCLASS_KV_GATHER), rd(s, B_COL, Hk * q * 4.0), wr(s, B_SEL, Hk * keep * 4.0), kend(r);
        const acc pin[] = {{B_SEL, Hk * keep * 4.0, 0}, {B_K, kvb / 2, kb1}, {B_V, kvb / 2, kb1}}, pout[] = {{B_KVNEW, kvb, 0}};
        K(DKV_KCLASS_KV_GATHER), walk(s, pin, 3, 0, pout, 1), kend(r);
    }
    /* attention: queries and the item's own K/V (computed this layer: from the QKV buffer, or for
     * dual's in-place store from the pool rows just written, in L2 either way) and cached K/V from
     * the pool (written in earlier steps: streamed), output written head by head */
    const double own = in->own, cached = in->cached;
    const acc ain[] = {{B_Q, qb, 0}, {B_K, own / 2, 0}, {B_V, own / 2, 0}}, aout[] = {{B_ATT, Q * hq * ab, 0}};
    K(DKV_KCLASS_ATTN), walk_heads(s, ain, 3, cached, aout, 1), kend(r);
    K(DKV_KCLASS_O), gemm(s, B_ATT, Q * hq * ab, streams * hq * d * wb, B_X, Q * d * ab, B_X, Q * d * ab, Q, d, hq), kend(r);
    K(DKV_KCLASS_ELEMENTWISE), walk(s, xin, 1, d * wb, hout, 1), kend(r);
    K(DKV_KCLASS_FFN), gemm(s, B_H, Q * d * ab, streams * 2 * d * f * wb, -1, 0, B_GU, 2 * Q * f * ab, Q, 2 * f, d), kend(r);
    const acc gin[] = {{B_GU, 2 * Q * f * ab, 0}}, fout[] = {{B_FF, Q * f * ab, 0}};
    K(DKV_KCLASS_ELEMENTWISE), walk(s, gin, 1, 0, fout, 1), kend(r);
    K(DKV_KCLASS_FFN), gemm(s, B_FF, Q * f * ab, streams * d * f * wb, B_X, Q * d * ab, B_X, Q * d * ab, Q, d, f), kend(r);
#undef K
}

/* The LM head of the step (final norms, per chunk a GEMM into fp32 logits and the argmax), then
 * the unmask; into head / el (NULL: dropped). */
static void tail(run *r, const dkv_model *m, const dkv_step_plan *plan, const dkv_cost_step *cs, dkv_cost_class *head,
                 dkv_cost_class *el)
{
    const double d = m->hidden, V = m->vocab, R = cs->logit_rows, ab = dkv_dtype_bytes(m->act_dtype);
    const double wb = dkv_dtype_bytes(m->weight_dtype);
    l2m *s = &r->s;
    if (R <= 0)
        return;
    for (uint32_t i = 0; i < plan->n_items; i++)
        if (plan->items[i].logit_rows) {
            double rr = plan->items[i].logit_rows;
            kbegin(r, head, DKV_KCLASS_LM_HEAD), rd(s, B_X, rr * d * ab), stream(s, d * wb), wr(s, B_H, rr * d * ab);
            kend(r);
        }
    double C = plan->max_logit_rows ? plan->max_logit_rows : R;
    for (double done = 0; done < R; done += C) {
        double c = fmin(C, R - done);
        kbegin(r, head, DKV_KCLASS_LM_HEAD);
        gemm(s, B_H, c * d * ab, cs->weight_streams * V * d * wb, -1, 0, B_LOGITS, c * V * DKV_COST_LOGIT_BYTES, c, V, d);
        s->tail = B_LOGITS, s->tail_ep = s->ep;
        kend(r);
        const acc lin[] = {{B_LOGITS, c * V * DKV_COST_LOGIT_BYTES, 0}}, aout[] = {{B_ARG, c * 8.0, 0}};
        kbegin(r, head, DKV_KCLASS_LM_HEAD), walk(s, lin, 1, 0, aout, 1), kend(r);
    }
    kbegin(r, el, DKV_KCLASS_ELEMENTWISE), rd(s, B_ARG, R * 8.0), kend(r);
}

void dkv_cost_l2_bytes(const dkv_model *m, const dkv_step_plan *plan, const dkv_cost_hw *hw, dkv_cost_step *cs)
{
    if (!hw || hw->l2_bytes <= 0 || plan->n_items == 0)
        return;
    double parts = hw->l2_partitions ? hw->l2_partitions : 1;
    /* the gemm_reads and gemm_left measurements are of one weight copy: steps that stream several (instances
     * without shared weights) keep the replay's count */
    const double cap = hw->l2_bytes / parts;
    run r = {.s = {.cap = cap, .dcap = hw->l2_bytes * DKV_COST_L2_DIRTY_FRAC,
                   .edge = {DKV_COST_L2_EDGE * cap, DKV_COST_L2_DIRTY_CREDIT * cap, 0},
                   .n_sms = hw->n_sms ? hw->n_sms : 1, .prof = hw->profile,
                   .measured = hw->profile && hw->profile->reads_n > 0 && cs->weight_streams <= 1,
                   .left = hw->profile && hw->profile->left_n > 0 && cs->weight_streams <= 1, .tail = -1}};
    dkv_cost_class lay[DKV_KCLASS_N], once[DKV_KCLASS_N];
    memset(lay, 0, sizeof lay), memset(once, 0, sizeof once);
    l2_inputs in;
    replay_inputs(m, plan, &in);
    dkv_cost_l2_memo *mm = hw->trace ? NULL : hw->memo;   /* a trace wants the kernels: replay */
    double key[L2_MEMO_KEY];
    uint32_t nk = mm ? l2_memo_key(plan, cs, &in, key) : 0;
    void *slot = NULL;
    if (!nk || !l2_memo_get(mm, m, hw, parts, r.s.n_sms, key, nk, lay, once, &slot)) {
        const double d = m->hidden, Q = cs->q_rows, ab = dkv_dtype_bytes(m->act_dtype);
        dkv_cost_l2_trace *t = hw->trace;
        tail(&r, m, plan, cs, NULL, NULL);   /* the previous step's end */
        if ((r.trace = t) != NULL)
            t->n = t->n_start = t->n_layer = t->dropped = 0;
        kbegin(&r, &once[DKV_KCLASS_ELEMENTWISE], DKV_KCLASS_ELEMENTWISE), kend(&r);   /* reset: a few bytes */
        kbegin(&r, &once[DKV_KCLASS_ELEMENTWISE], DKV_KCLASS_ELEMENTWISE);
        stream(&r.s, Q * d * dkv_dtype_bytes(m->weight_dtype)), wr(&r.s, B_X, Q * d * ab);   /* embeddings */
        kend(&r);
        r.trace = NULL;   /* the two layers before the counted one are not charged */
        layer(&r, m, plan, cs, &in, cs->weight_streams, NULL);
        layer(&r, m, plan, cs, &in, cs->weight_streams, NULL);
        if ((r.trace = t) != NULL)
            t->n_start = t->n;
        layer(&r, m, plan, cs, &in, cs->weight_streams, lay);
        if (t)
            t->n_layer = t->n - t->n_start;
        tail(&r, m, plan, cs, &once[DKV_KCLASS_LM_HEAD], &once[DKV_KCLASS_ELEMENTWISE]);
        if (slot)
            l2_memo_put(mm, slot, key, nk, lay, once);
    }
    double seg[DKV_KCLASS_N] = {0};   /* per layer: the class's HBM segments (timed at their run length) */
    for (uint32_t i = 0; i < cs->n_segs; i++)
        if (cs->segs[i].via == DKV_COST_VIA_HBM)
            seg[cs->segs[i].kind] += cs->segs[i].bytes;
    for (size_t i = 0; i < L2_MODELLED_N; i++) {
        int c = l2_modelled[i];
        if (c == DKV_KCLASS_LM_HEAD) {
            cs->once[c].rd = once[c].rd, cs->once[c].wr = once[c].wr;
        } else if (c == DKV_KCLASS_ELEMENTWISE) {
            cs->layer[c].rd = lay[c].rd, cs->layer[c].wr = lay[c].wr;
            cs->once[c].rd = once[c].rd, cs->once[c].wr = once[c].wr;
        } else {   /* (zero-copy host reads, kv_gather without a selection, cross PCIe: no HBM bytes) */
            cs->layer[c].rd = lay[c].rd, cs->layer[c].wr = lay[c].wr;
        }
        /* the roofline streams what reaches HBM: the class's bytes less its segments (which keep
         * their own, run-length time) */
        cs->layer[c].bytes_fast = fmax(0, cs->layer[c].rd + cs->layer[c].wr - seg[c]);
        cs->once[c].bytes_fast = cs->once[c].rd + cs->once[c].wr;
    }
}
