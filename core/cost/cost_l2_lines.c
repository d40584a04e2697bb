/* cost_l2_lines.c - a line-level model of the GPU's L2 (cost_l2_lines.h; docs/COST_MODEL.md "A line-level L2").
 *
 * Each half is an array of sets of `ways` slots; a slot holds a line's number + 1 (0: empty), the tick of its last
 * use and whether it is dirty.  The tick advances once a line access (a read, a write or a turn of one line), so a
 * dirty line's credit is in line accesses: credit bytes / line bytes.  The dirty bound takes a half's least recently
 * used dirty line from a queue of (line, tick) pairs pushed whenever a line is made dirty or a dirty line used; an
 * entry whose line has since been used again, cleaned or evicted is stale and skipped. */
#include "cost/cost_l2_lines.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t *line, *tick;
    size_t head, n, cap;
} dq;

struct dkv_l2l {
    dkv_l2l_cfg cfg;
    int sets, shift, seg_shift;   /* line = 1 << shift; a 4 KB segment = 1 << seg_shift lines */
    uint64_t *tag, *use;          /* [part][set][way] */
    unsigned char *dirt;
    uint64_t tick, credit;        /* credit in ticks */
    long dirty_n[2], dirty_max, valid_n;
    double rd, wr;
    dq q[2];
};

static uint64_t mix(uint64_t x)   /* splitmix64's finaliser */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

dkv_l2l_cfg dkv_l2l_h200(void)
{
    return (dkv_l2l_cfg){.l2_bytes = 60.0 * 1024 * 1024, .parts = 2, .ways = 64, .line = 128,
                         .dirty_frac = 28.8e6 / (60.0 * 1024 * 1024), .credit = 4.0e6, .seed = 1,
                         .keep_copy = true};   /* keep_copy: device call 129's clause, session 48 */
}

dkv_l2l *dkv_l2l_new(const dkv_l2l_cfg *c, const char **err)
{
    static const char *e_cfg = "L2 line model: parts must be 1 or 2, ways 1-1024, line a power of two 32-4096, "
                               "dirty_frac in (0, 1], credit >= 0, clean_ways 0 to ways - 1 and at most 64, and "
                               "l2_bytes at least one set a half";
    *err = NULL;
    int shift = 0;
    while (shift < 13 && (1 << shift) != c->line)
        shift++;
    double half = c->l2_bytes / (c->parts > 0 ? c->parts : 1);
    if (!(c->parts == 1 || c->parts == 2) || c->ways < 1 || c->ways > 1024 || shift < 5 || shift > 12 ||
        !(c->dirty_frac > 0 && c->dirty_frac <= 1) || !(c->credit >= 0) || c->clean_ways < 0 ||
        c->clean_ways >= c->ways || c->clean_ways > 64 || !(half >= (double)c->line * c->ways) ||
        !(c->l2_bytes < 1e12)) {
        *err = e_cfg;
        return NULL;
    }
    dkv_l2l *l = calloc(1, sizeof *l);
    if (!l) {
        *err = "L2 line model: out of memory";
        return NULL;
    }
    l->cfg = *c;
    l->shift = shift;
    l->seg_shift = shift < 12 ? 12 - shift : 0;
    l->sets = (int)(half / ((double)c->line * c->ways));
    size_t slots = (size_t)c->parts * l->sets * c->ways;
    l->tag = calloc(slots, sizeof *l->tag);
    l->use = calloc(slots, sizeof *l->use);
    l->dirt = calloc(slots, 1);
    l->credit = (uint64_t)(c->credit / c->line + 0.5);
    l->dirty_max = (long)(c->dirty_frac * half / c->line);
    if (!l->tag || !l->use || !l->dirt) {
        dkv_l2l_free(l);
        *err = "L2 line model: out of memory";
        return NULL;
    }
    return l;
}

void dkv_l2l_free(dkv_l2l *l)
{
    if (!l)
        return;
    free(l->tag), free(l->use), free(l->dirt);
    for (int p = 0; p < 2; p++)
        free(l->q[p].line), free(l->q[p].tick);
    free(l);
}

static int home_of(const dkv_l2l *l, uint64_t ln) { return l->cfg.parts == 1 ? 0 : (int)(mix(ln ^ l->cfg.seed) & 1); }

/* the half of reader r of line ln (L2L_ONE: reader 0): a hash of its 4 KB segment and r */
static int side_of(const dkv_l2l *l, uint64_t ln, unsigned r)
{
    return l->cfg.parts == 1 ? 0 : (int)(mix((ln >> l->seg_shift) ^ (l->cfg.seed * 0x2545f4914f6cdd1dull) ^
                                             ((uint64_t)r * 0x9e3779b97f4a7c15ull)) >> 63);
}

/* the first slot of line ln's set in half p */
static size_t set_of(const dkv_l2l *l, int p, uint64_t ln)
{
    uint64_t h = mix(ln * 2 + (uint64_t)p + (l->cfg.seed << 32));
    return ((size_t)p * l->sets + (size_t)(h % (uint64_t)l->sets)) * l->cfg.ways;
}

static long find(const dkv_l2l *l, size_t s, uint64_t ln)
{
    const uint64_t t = ln + 1;
    for (int w = 0; w < l->cfg.ways; w++)
        if (l->tag[s + w] == t)
            return (long)(s + w);
    return -1;
}

/* find() and, where line ln is not in set s, the slot an insertion takes (*victim): the first empty one, else the
 * least recently used line, a dirty one's use counted credit ticks later (the first such in way order) */
static long scan(const dkv_l2l *l, size_t s, uint64_t ln, long *victim)
{
    const uint64_t t = ln + 1;
    long v = -1, empty = -1;
    uint64_t best = UINT64_MAX;
    for (int w = 0; w < l->cfg.ways; w++) {
        size_t i = s + w;
        uint64_t tg = l->tag[i];
        if (tg == t)
            return (long)i;
        if (!tg) {
            if (empty < 0)
                empty = (long)i;
            continue;
        }
        uint64_t age = l->use[i] + (l->dirt[i] ? l->credit : 0);
        if (age < best)
            best = age, v = (long)i;
    }
    *victim = empty >= 0 ? empty : v;
    return -1;
}

static int dq_push(dq *q, uint64_t ln, uint64_t tick)
{
    if (q->head > 0 && q->n == q->cap) {   /* drop what was popped */
        memmove(q->line, q->line + q->head, (q->n - q->head) * sizeof *q->line);
        memmove(q->tick, q->tick + q->head, (q->n - q->head) * sizeof *q->tick);
        q->n -= q->head, q->head = 0;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 4096;
        uint64_t *a = realloc(q->line, cap * sizeof *a);
        if (!a)
            return -1;
        q->line = a;
        uint64_t *b = realloc(q->tick, cap * sizeof *b);
        if (!b)
            return -1;
        q->tick = b, q->cap = cap;
    }
    q->line[q->n] = ln, q->tick[q->n] = tick, q->n++;
    return 0;
}

/* Whether queue entry i still names a dirty line last used at its tick (its slot, or -1). */
static long dq_live(const dkv_l2l *l, int p, const dq *q, size_t i)
{
    long w = find(l, set_of(l, p, q->line[i]), q->line[i]);
    return w >= 0 && l->dirt[w] && l->use[w] == q->tick[i] ? w : -1;
}

/* Keeps half p's queue no longer than a few times its live entries (stale ones are dropped). */
static void dq_trim(dkv_l2l *l, int p)
{
    dq *q = &l->q[p];
    if (q->n - q->head <= (size_t)(4 * (l->dirty_n[p] + 1024)))
        return;
    size_t k = 0;
    for (size_t i = q->head; i < q->n; i++)
        if (dq_live(l, p, q, i) >= 0)
            q->line[k] = q->line[i], q->tick[k] = q->tick[i], k++;
    q->head = 0, q->n = k;
}

static void used(dkv_l2l *l, int p, long w)
{
    l->use[w] = l->tick;
    if (l->dirt[w]) {
        uint64_t ln = l->tag[w] - 1;
        if (dq_push(&l->q[p], ln, l->tick) < 0)   /* no memory: the line is cleaned now rather than lost track of */
            l->dirt[w] = 0, l->dirty_n[p]--, l->wr += l->cfg.line;
        dq_trim(l, p);
    }
}

/* The dirty bound: half p's least recently used dirty lines are written back (and stay, clean). */
static void bound(dkv_l2l *l, int p)
{
    dq *q = &l->q[p];
    while (l->dirty_n[p] > l->dirty_max && q->head < q->n) {
        long w = dq_live(l, p, q, q->head);
        q->head++;
        if (w >= 0)
            l->dirt[w] = 0, l->dirty_n[p]--, l->wr += l->cfg.line;
    }
}

/* The clean_ways variant: once the set at s (half p) is full, its clean_ways least recently used lines are made
 * clean (a set not yet full gives nothing up soon). */
static void clean_low(dkv_l2l *l, int p, size_t s)
{
    const int k = l->cfg.clean_ways;   /* at most 64 (dkv_l2l_new) */
    size_t low[64];
    int n = 0;
    for (int w = 0; w < l->cfg.ways; w++) {   /* the k oldest slots, oldest first (insertion into low[]) */
        size_t i = s + w;
        if (!l->tag[i])
            return;   /* not full */
        if (n == k && l->use[i] >= l->use[low[n - 1]])
            continue;
        int j = n < k ? n++ : k - 1;
        while (j > 0 && l->use[low[j - 1]] > l->use[i])
            low[j] = low[j - 1], j--;
        low[j] = i;
    }
    for (int j = 0; j < n; j++)
        if (l->dirt[low[j]])
            l->dirt[low[j]] = 0, l->dirty_n[p]--, l->wr += l->cfg.line;
}

/* Puts line ln into slot v of half p (scan()'s victim), clean or dirty; a dirty line it replaces goes to HBM. */
static void insert(dkv_l2l *l, int p, long v, uint64_t ln, bool dirty)
{
    if (!l->tag[v])
        l->valid_n++;
    else if (l->dirt[v])
        l->wr += l->cfg.line, l->dirty_n[p]--;
    l->tag[v] = ln + 1, l->dirt[v] = dirty, l->use[v] = l->tick;
    if (dirty) {
        l->dirty_n[p]++;
        used(l, p, v);
    }
    if (l->cfg.clean_ways)
        clean_low(l, p, (size_t)v - (size_t)v % (size_t)l->cfg.ways);
}

/* A read of line ln from the halves in mask (bit p: an SM of half p reads it), the home half first. */
static void read_line(dkv_l2l *l, uint64_t ln, unsigned mask)
{
    int h = home_of(l, ln), n = 0;
    int sides[2];
    if (mask >> h & 1)
        sides[n++] = h;
    if (l->cfg.parts == 2 && (mask >> (1 - h) & 1))
        sides[n++] = 1 - h;
    l->tick++;
    for (int k = 0; k < n; k++) {
        int s = sides[k];
        long v, vh, w = scan(l, set_of(l, s, ln), ln, &v);
        if (w >= 0) {
            used(l, s, w);
            continue;
        }
        if (s != h) {   /* a far read: the home half serves it (from HBM if the line is not there) and the reader's
                           half keeps a copy */
            long wh = scan(l, set_of(l, h, ln), ln, &vh);
            if (wh >= 0) {
                used(l, h, wh);
            } else {
                l->rd += l->cfg.line;
                insert(l, h, vh, ln, false);
            }
        } else {
            l->rd += l->cfg.line;
        }
        insert(l, s, v, ln, false);
    }
}

static void write_line(dkv_l2l *l, uint64_t ln)
{
    int h = home_of(l, ln);
    l->tick++;
    if (l->cfg.parts == 2) {   /* a copy in the other half stays, updated, and is used (keep_copy; else dropped) */
        long o = find(l, set_of(l, 1 - h, ln), ln);
        if (o >= 0 && l->cfg.keep_copy)
            l->use[o] = l->tick;
        else if (o >= 0)
            l->tag[o] = 0, l->valid_n--;
    }
    long v, w = scan(l, set_of(l, h, ln), ln, &v);
    if (w >= 0) {
        if (!l->dirt[w])
            l->dirt[w] = 1, l->dirty_n[h]++;
        used(l, h, w);
    } else {
        insert(l, h, v, ln, true);
    }
    bound(l, h);
}

static void lines(const dkv_l2l *l, uint64_t addr, uint64_t bytes, uint64_t *a, uint64_t *b)
{
    *a = addr >> l->shift;
    *b = bytes ? ((addr + bytes - 1) >> l->shift) + 1 : *a;
}

static unsigned mask_of(const dkv_l2l *l, uint64_t ln, int who)
{
    return who == L2L_ALL ? (l->cfg.parts == 2 ? 3u : 1u) : 1u << side_of(l, ln, 0);
}

void dkv_l2l_read(dkv_l2l *l, uint64_t addr, uint64_t bytes, int who)
{
    uint64_t a, b;
    lines(l, addr, bytes, &a, &b);
    for (uint64_t ln = a; ln < b; ln++)
        read_line(l, ln, mask_of(l, ln, who));
}

void dkv_l2l_read_by(dkv_l2l *l, uint64_t addr, uint64_t bytes, int n)
{
    uint64_t a, b;
    lines(l, addr, bytes, &a, &b);
    for (uint64_t ln = a; ln < b; ln++) {
        unsigned m = 0;
        for (int r = 0; r < (n > 0 ? n : 1) && m != 3u; r++)
            m |= 1u << side_of(l, ln, (unsigned)r);
        read_line(l, ln, m);
    }
}

void dkv_l2l_write(dkv_l2l *l, uint64_t addr, uint64_t bytes, int who)
{
    (void)who;   /* a write goes to the home half whoever writes */
    uint64_t a, b;
    lines(l, addr, bytes, &a, &b);
    for (uint64_t ln = a; ln < b; ln++)
        write_line(l, ln);
}

void dkv_l2l_rmw(dkv_l2l *l, uint64_t addr, uint64_t bytes, int who)
{
    uint64_t a, b;
    lines(l, addr, bytes, &a, &b);
    for (uint64_t ln = a; ln < b; ln++)
        read_line(l, ln, mask_of(l, ln, who)), write_line(l, ln);
}

double dkv_l2l_hbm_read(const dkv_l2l *l) { return l->rd; }
double dkv_l2l_hbm_written(const dkv_l2l *l) { return l->wr; }
double dkv_l2l_resident(const dkv_l2l *l) { return (double)l->valid_n * l->cfg.line; }
double dkv_l2l_dirty(const dkv_l2l *l) { return (double)(l->dirty_n[0] + l->dirty_n[1]) * l->cfg.line; }
