/* plot.c - the loss curve as an SVG picture (plot.h): training loss at
 * every step, validation loss where it was measured, on linear axes with
 * a few labelled ticks. Plain text out, no library. */
#include "plot.h"

#include <math.h>
#include <stdio.h>

enum { W = 720, H = 420, LEFT = 64, RIGHT = 16, TOP = 32, BOTTOM = 48, TICKS = 5 };

static double px(double x, double x0, double x1) { return LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT); }
static double py(double y, double y0, double y1) { return H - BOTTOM - (y - y0) / (y1 - y0) * (H - TOP - BOTTOM); }

static void polyline(FILE *f, const gpt_point *p, int n, int which, double x0, double x1, double y0, double y1,
                     const char *color) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
    for (int i = 0; i < n; i++) {
        double y = which ? p[i].valid : p[i].train;
        if (!isnan(y)) fprintf(f, "%.1f,%.1f ", px(p[i].step, x0, x1), py(y, y0, y1));
    }
    fprintf(f, "\"/>\n");
}

int gpt_plot_svg(const char *path, const char *title, const gpt_point *p, int n) {
    if (n < 1) return 0;
    double x0 = p[0].step, x1 = p[n - 1].step, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        double v[2] = {p[i].train, p[i].valid};
        for (int k = 0; k < 2; k++)
            if (!isnan(v[k])) y0 = fmin(y0, v[k]), y1 = fmax(y1, v[k]);
    }
    if (x1 <= x0) x1 = x0 + 1;
    if (!(y1 > y0)) y0 = isfinite(y0) ? y0 - 1 : 0, y1 = y0 + 2;
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"14\">", LEFT);
    for (const char *c = title; *c; c++) /* the title is the user's text: escape it */
        fputs(*c == '<' ? "&lt;" : *c == '&' ? "&amp;" : *c == '>' ? "&gt;" : (char[2]){*c, 0}, f);
    fprintf(f, "</text>\n");
    for (int t = 0; t <= TICKS; t++) {
        double y = y0 + (y1 - y0) * t / TICKS, x = x0 + (x1 - x0) * t / TICKS;
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", LEFT, W - RIGHT,
                py(y, y0, y1), py(y, y0, y1));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", LEFT - 6, py(y, y0, y1) + 4, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", px(x, x0, x1), H - BOTTOM + 18,
                x);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", (LEFT + W - RIGHT) / 2, H - 8);
    polyline(f, p, n, 0, x0, x1, y0, y1, "#1f77b4");
    polyline(f, p, n, 1, x0, x1, y0, y1, "#d62728");
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#1f77b4\">training loss</text>\n", W - RIGHT - 200, TOP + 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#d62728\">validation loss</text>\n", W - RIGHT - 100, TOP + 4);
    fprintf(f, "</svg>\n");
    return fclose(f) == 0;
}
