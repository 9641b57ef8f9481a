/* progress.c - remaining critical path, rate and ETA; see progress.h. */
#include "sched/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* height[] in reverse topological order; returns the largest height. */
static uint32_t compute_heights(const struct dag *d, const uint32_t *order, uint32_t *height)
{
    uint32_t depth = 0;
    for (uint32_t k = d->ntasks; k-- > 0;) {
        uint32_t t = order[k], h = 0;
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            if (height[d->children[e]] > h)
                h = height[d->children[e]];
        height[t] = h + 1;
        if (h + 1 > depth)
            depth = h + 1;
    }
    return depth;
}

int progress_init(struct progress *p, const struct dag *d, const uint8_t *done)
{
    memset(p, 0, sizeof *p);
    p->rate = -1;
    uint32_t n = d->ntasks;
    uint32_t *order = malloc(sizeof *order * (n ? n : 1));
    p->height = malloc(sizeof *p->height * (n ? n : 1));
    if (!order || !p->height || dag_topo_order(d, order) < 0) {
        free(order);
        progress_free(p);
        return -1;
    }
    uint32_t depth = compute_heights(d, order, p->height);
    free(order);
    p->nheights = depth + 1;
    p->left = calloc(p->nheights, sizeof *p->left);
    if (!p->left) {
        progress_free(p);
        return -1;
    }
    for (uint32_t t = 0; t < n; t++) {
        if (done && done[t])
            continue;
        p->left[p->height[t]]++;
        if (p->height[t] > p->top)
            p->top = p->height[t];
    }
    return 0;
}

void progress_finished(struct progress *p, uint32_t t)
{
    uint32_t h = p->height[t];
    if (p->left[h] > 0)
        p->left[h]--;
    while (p->top > 0 && p->left[p->top] == 0)
        p->top--;
}

void progress_sample(struct progress *p, uint64_t n, double now)
{
    if (p->last_t == 0) {
        p->last_t = now;
        p->last_n = n;
        return;
    }
    double dt = now - p->last_t;
    if (dt < 1e-3)
        return;
    double r = (double)(n - p->last_n) / dt;
    double w = 1.0 - exp(-dt / PROGRESS_RATE_TAU_S);
    p->rate = p->rate < 0 ? r : p->rate + w * (r - p->rate);
    p->last_t = now;
    p->last_n = n;
}

double progress_eta(const struct progress *p, uint64_t tasks_left, double mean_duration)
{
    if (tasks_left == 0)
        return 0;
    double by_rate = p->rate > 0 ? (double)tasks_left / p->rate : 0;
    double by_path = mean_duration > 0 ? (double)p->top * mean_duration : 0;
    if (by_rate <= 0 && by_path <= 0)
        return -1; /* nothing finished yet */
    return by_rate > by_path ? by_rate : by_path;
}

void progress_free(struct progress *p)
{
    free(p->height);
    free(p->left);
    memset(p, 0, sizeof *p);
}
