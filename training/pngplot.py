"""A tiny dependency-free line-chart writer (numpy + zlib) for training loss curves.

matplotlib is not among training/requirements.txt (and adding it would rebuild every cached venv), so the
recipes draw their loss-curve PNG with this: axes, grid, tick labels in a 5x7 bitmap font, a legend, and one
polyline or point series per curve.
"""
import struct
import zlib

import numpy as np

# 5x7 glyphs: 7 rows of 5 pixels ('#' = ink).
_FONT = {
    '0': ['.###.', '#...#', '#..##', '#.#.#', '##..#', '#...#', '.###.'],
    '1': ['..#..', '.##..', '..#..', '..#..', '..#..', '..#..', '.###.'],
    '2': ['.###.', '#...#', '....#', '...#.', '..#..', '.#...', '#####'],
    '3': ['.###.', '#...#', '....#', '..##.', '....#', '#...#', '.###.'],
    '4': ['...#.', '..##.', '.#.#.', '#..#.', '#####', '...#.', '...#.'],
    '5': ['#####', '#....', '####.', '....#', '....#', '#...#', '.###.'],
    '6': ['..##.', '.#...', '#....', '####.', '#...#', '#...#', '.###.'],
    '7': ['#####', '....#', '...#.', '..#..', '.#...', '.#...', '.#...'],
    '8': ['.###.', '#...#', '#...#', '.###.', '#...#', '#...#', '.###.'],
    '9': ['.###.', '#...#', '#...#', '.####', '....#', '...#.', '.##..'],
    '.': ['.....', '.....', '.....', '.....', '.....', '.##..', '.##..'],
    '-': ['.....', '.....', '.....', '.###.', '.....', '.....', '.....'],
    ':': ['.....', '.##..', '.##..', '.....', '.##..', '.##..', '.....'],
    '/': ['....#', '....#', '...#.', '..#..', '.#...', '#....', '#....'],
    '(': ['...#.', '..#..', '.#...', '.#...', '.#...', '..#..', '...#.'],
    ')': ['.#...', '..#..', '...#.', '...#.', '...#.', '..#..', '.#...'],
    '=': ['.....', '.....', '#####', '.....', '#####', '.....', '.....'],
    ' ': ['.....', '.....', '.....', '.....', '.....', '.....', '.....'],
    'a': ['.....', '.....', '.###.', '....#', '.####', '#...#', '.####'],
    'b': ['#....', '#....', '####.', '#...#', '#...#', '#...#', '####.'],
    'c': ['.....', '.....', '.###.', '#....', '#....', '#...#', '.###.'],
    'd': ['....#', '....#', '.####', '#...#', '#...#', '#...#', '.####'],
    'e': ['.....', '.....', '.###.', '#...#', '#####', '#....', '.###.'],
    'f': ['..##.', '.#..#', '.#...', '###..', '.#...', '.#...', '.#...'],
    'g': ['.....', '.####', '#...#', '#...#', '.####', '....#', '.###.'],
    'h': ['#....', '#....', '#.##.', '##..#', '#...#', '#...#', '#...#'],
    'i': ['..#..', '.....', '.##..', '..#..', '..#..', '..#..', '.###.'],
    'k': ['#....', '#....', '#..#.', '#.#..', '##...', '#.#..', '#..#.'],
    'l': ['.##..', '..#..', '..#..', '..#..', '..#..', '..#..', '.###.'],
    'm': ['.....', '.....', '##.#.', '#.#.#', '#.#.#', '#...#', '#...#'],
    'n': ['.....', '.....', '#.##.', '##..#', '#...#', '#...#', '#...#'],
    'o': ['.....', '.....', '.###.', '#...#', '#...#', '#...#', '.###.'],
    'p': ['.....', '.....', '####.', '#...#', '####.', '#....', '#....'],
    'r': ['.....', '.....', '#.##.', '##..#', '#....', '#....', '#....'],
    's': ['.....', '.....', '.####', '#....', '.###.', '....#', '####.'],
    't': ['.#...', '.#...', '###..', '.#...', '.#...', '.#..#', '..##.'],
    'u': ['.....', '.....', '#...#', '#...#', '#...#', '#..##', '.##.#'],
    'v': ['.....', '.....', '#...#', '#...#', '#...#', '.#.#.', '..#..'],
    'w': ['.....', '.....', '#...#', '#...#', '#.#.#', '#.#.#', '.#.#.'],
    'x': ['.....', '.....', '#...#', '.#.#.', '..#..', '.#.#.', '#...#'],
    'y': ['.....', '.....', '#...#', '#...#', '.####', '....#', '.###.'],
    'z': ['.....', '.....', '#####', '...#.', '..#..', '.#...', '#####'],
    'M': ['#...#', '##.##', '#.#.#', '#.#.#', '#...#', '#...#', '#...#'],
    'T': ['#####', '..#..', '..#..', '..#..', '..#..', '..#..', '..#..'],
}
_GLYPH = {k: np.array([[c == "#" for c in row] for row in v], dtype=bool) for k, v in _FONT.items()}


def _text(img, x, y, s, color, scale=1):
    for ch in s:
        g = _GLYPH.get(ch) if ch in _GLYPH else _GLYPH.get(ch.lower())
        if g is not None:
            big = np.kron(g, np.ones((scale, scale), dtype=bool))
            h, w = big.shape
            if 0 <= y and y + h <= img.shape[0] and 0 <= x and x + w <= img.shape[1]:
                img[y:y + h, x:x + w][big] = color
        x += 6 * scale


def _line(img, x0, y0, x1, y1, color, width=1):
    n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    xs = np.linspace(x0, x1, n).round().astype(int)
    ys = np.linspace(y0, y1, n).round().astype(int)
    for dx in range(-(width // 2), width - width // 2):
        for dy in range(-(width // 2), width - width // 2):
            xx, yy = xs + dx, ys + dy
            ok = (xx >= 0) & (xx < img.shape[1]) & (yy >= 0) & (yy < img.shape[0])
            img[yy[ok], xx[ok]] = color


def _nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** np.floor(np.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = np.ceil(lo / step) * step
    return [float(v) for v in np.arange(start, hi + step * 1e-9, step)]


def _fmt(v):
    if abs(v) >= 1000:
        return f"{v / 1000:g}k" if v % 1000 == 0 else f"{v:.0f}"
    return f"{v:.3g}"


def write_png(path, pixels):
    """pixels: (H, W, 3) uint8."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[r].tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]


def plot(path, series, title="", xlabel="step", ylabel="loss", width=720, height=440):
    """series: list of (label, xs, ys, style) with style 'line' or 'points'. Writes a PNG."""
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    left, right, top, bottom = 64, 16, 30, 44
    pw, ph = width - left - right, height - top - bottom
    xs_all = np.concatenate([np.asarray(s[1], float) for s in series if len(s[1])] or [np.zeros(1)])
    ys_all = np.concatenate([np.asarray(s[2], float) for s in series if len(s[2])] or [np.zeros(1)])
    ys_all = ys_all[np.isfinite(ys_all)]
    if ys_all.size == 0:
        ys_all = np.zeros(1)
    x0, x1 = float(xs_all.min()), float(xs_all.max())
    if x1 <= x0:
        x1 = x0 + 1
    # robust y range: ignore the first spike so the interesting part is visible
    y0 = float(ys_all.min())
    y1 = float(np.percentile(ys_all, 98)) if ys_all.size > 20 else float(ys_all.max())
    if y1 <= y0:
        y1 = y0 + 1
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad

    def tx(x):
        return left + (np.asarray(x, float) - x0) / (x1 - x0) * pw

    def ty(y):
        return top + ph - (np.clip(np.asarray(y, float), y0, y1) - y0) / (y1 - y0) * ph

    grid, axis, ink = (228, 228, 228), (90, 90, 90), (30, 30, 30)
    for v in _nice_ticks(y0, y1):
        yy = int(round(float(ty(v))))
        _line(img, left, yy, left + pw, yy, grid)
        s = _fmt(v)
        _text(img, left - 6 - 6 * len(s), yy - 3, s, ink)
    for v in _nice_ticks(x0, x1, 6):
        xx = int(round(float(tx(v))))
        _line(img, xx, top, xx, top + ph, grid)
        s = _fmt(v)
        _text(img, xx - 3 * len(s), top + ph + 6, s, ink)
    _line(img, left, top, left, top + ph, axis)
    _line(img, left, top + ph, left + pw, top + ph, axis)
    _text(img, left + pw // 2 - 3 * len(xlabel), height - 16, xlabel, ink)
    _text(img, 6, top - 18, ylabel, ink)
    if title:
        _text(img, left + pw // 2 - 6 * len(title), 6, title, ink, scale=2)

    for i, (label, xs, ys, style) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        xs, ys = np.asarray(xs, float), np.asarray(ys, float)
        ok = np.isfinite(ys)
        xs, ys = xs[ok], ys[ok]
        px, py = tx(xs), ty(ys)
        if style == "points":
            for a, b in zip(px, py):
                img[int(b) - 2:int(b) + 3, int(a) - 2:int(a) + 3] = c
            if len(px) > 1:
                for j in range(len(px) - 1):
                    _line(img, px[j], py[j], px[j + 1], py[j + 1], c)
        else:
            for j in range(len(px) - 1):
                _line(img, px[j], py[j], px[j + 1], py[j + 1], c, width=1)
        ly = top + 8 + 14 * i
        _line(img, left + pw - 110, ly + 3, left + pw - 90, ly + 3, c, width=3)
        _text(img, left + pw - 84, ly, label, ink)
    write_png(path, img)
