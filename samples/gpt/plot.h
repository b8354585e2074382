/* plot.h - the GPT sample's loss curve as an SVG picture. */
#ifndef GPT_PLOT_H
#define GPT_PLOT_H

typedef struct gpt_point {
    double step, train, valid; /* valid NaN where not measured */
} gpt_point;

/* Writes the curve of n points to path; 0 if it cannot. */
int gpt_plot_svg(const char *path, const char *title, const gpt_point *p, int n);

#endif
