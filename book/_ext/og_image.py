"""The book's Open Graph image (1200 x 630 px, book/_ext/static/posgeom-og.png): the title over sinusoids.

Run from the repository root to redraw it: ``python book/_ext/og_image.py``.
"""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

fig = plt.figure(figsize=(12, 6.3), dpi=100)
fig.patch.set_facecolor("#1f3b63")
ax = fig.add_axes([0, 0, 1, 1]); ax.set_xlim(0, 1); ax.set_ylim(0, 1); ax.axis("off")
x = np.linspace(0, 1, 600)
for k, colour in zip(range(1, 6), ["#f2c14e", "#e07a5f", "#81b29a", "#a8dadc", "#f4f1de"]):
    ax.plot(x, 0.22 + 0.09 * np.sin(2 * np.pi * k * 1.3 * x) * (1 - 0.12 * k), color=colour, lw=3, alpha=0.85)
ax.text(0.06, 0.74, "The geometry of positional encodings", color="white", fontsize=34, weight="bold", va="center")
ax.text(0.06, 0.58, "An executable companion to Cirrincione (arXiv:2604.05217):\nevery result, checked by code you can run.",
        color="#dfe7f2", fontsize=24, va="center", linespacing=1.4)
fig.savefig("book/_ext/static/posgeom-og.png", facecolor=fig.get_facecolor())
