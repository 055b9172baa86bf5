#!/usr/bin/env python3
"""Writes the ImageDecoder test images and their expected pixels.

Run with a Python that has Pillow and numpy (ONNX's reference ImageDecoder
decodes with Pillow, so Pillow's output is the expectation):

    python tools/image_fixtures/make_image_decoder_fixtures.py tests/backends/cpu/data/image_decoder

For every image NAME.EXT it writes NAME.rgb (Pillow's convert("RGB"), raw
H*W*3 bytes) and NAME.l (convert("L"), raw H*W bytes), and one line in
manifest.txt: "NAME.EXT HEIGHT WIDTH". The images are small (13 x 11 and
such: odd sizes) so that the files stay a few KB. BMP variants Pillow does
not write (16-bit, bit fields, an index past the palette) and plain PNM
(P1, P2, P3) and PNM with maxval other than 255 are written byte by byte.
16-bit greyscale is the one place where the expectation is not Pillow's
(see main()).
"""
import io
import os
import struct
import sys

import numpy as np
from PIL import Image

W, H = 13, 11


def picture(seed=7, w=W, h=H):
    """Gradients plus random blocks: smooth and sharp content for the codecs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x + y) * 255 // (w + h - 2)], axis=2).astype(np.uint8)
    for _ in range(4):
        x0, y0 = rng.integers(0, w - 3), rng.integers(0, h - 3)
        img[y0:y0 + 3, x0:x0 + 4] = rng.integers(0, 256, 3)
    return img


def save(pil, fmt, **kw):
    f = io.BytesIO()
    pil.save(f, format=fmt, **kw)
    return f.getvalue()


def le_bmp(bpp, w, h, rows, compression=0, masks=b"", palette=b"", header=40):
    """A bottom-up BMP with the given rows (top row first), each padded to 4 bytes."""
    data = b"".join(r + b"\0" * (-len(r) % 4) for r in reversed(rows))
    offset = 14 + header + len(masks) + len(palette)
    dib = struct.pack("<IiiHHIIiiII", header, w, h, 1, bpp, compression, len(data), 2835, 2835,
                      len(palette) // 4, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + dib + masks + palette + data


def images():
    rgb = picture()
    pil = Image.fromarray(rgb)
    grey = pil.convert("L")
    rgba = Image.fromarray(np.dstack([rgb, (np.arange(W * H) % 256).reshape(H, W).astype(np.uint8)]))
    pal = pil.convert("P", palette=Image.Palette.ADAPTIVE, colors=12)
    out = {}
    # JPEG: 4:2:0 (Pillow's default), 4:4:4, progressive, greyscale.
    out["rgb_420.jpg"] = save(pil, "JPEG", quality=90)
    out["rgb_444.jpg"] = save(pil, "JPEG", quality=95, subsampling=0)
    out["progressive.jpg"] = save(pil, "JPEG", quality=85, progressive=True)
    out["grey.jpg"] = save(grey, "JPEG", quality=90)
    # PNG: RGB, RGBA, palette with transparency, 1-bit, grey + alpha, 16-bit RGB, interlaced.
    out["rgb.png"] = save(pil, "PNG")
    out["rgba.png"] = save(rgba, "PNG")
    out["palette.png"] = save(pal, "PNG", transparency=3)
    out["bilevel.png"] = save(grey.point(lambda v: 255 if v > 100 else 0).convert("1"), "PNG")
    out["grey_alpha.png"] = save(rgba.convert("LA"), "PNG")
    out["grey16.png"] = save(Image.fromarray((np.asarray(grey).astype(np.uint16) * 257 + 1).astype(np.uint16)), "PNG")
    # WebP: lossy, lossless, lossless with alpha.
    out["lossy.webp"] = save(pil, "WEBP", quality=80)
    out["lossless.webp"] = save(pil, "WEBP", lossless=True)
    out["alpha.webp"] = save(rgba, "WEBP", lossless=True)
    # TIFF: raw, LZW, deflate, PackBits, greyscale, palette, RGBA, CMYK, JPEG (YCbCr).
    out["raw.tif"] = save(pil, "TIFF")
    out["lzw.tif"] = save(pil, "TIFF", compression="tiff_lzw")
    out["deflate.tif"] = save(pil, "TIFF", compression="tiff_adobe_deflate")
    out["packbits.tif"] = save(pil, "TIFF", compression="packbits")
    out["grey.tif"] = save(grey, "TIFF", compression="tiff_lzw")
    out["palette.tif"] = save(pal, "TIFF")
    out["rgba.tif"] = save(rgba, "TIFF", compression="tiff_lzw")  # unassociated alpha: not premultiplied
    out["cmyk.tif"] = save(Image.fromarray(np.dstack([rgb, rgb[:, :, 0] // 2]), "CMYK"), "TIFF")
    out["jpeg_ycbcr.tif"] = save(pil, "TIFF", compression="jpeg")
    # JPEG 2000: JP2 lossless, JP2 lossy, bare codestream, greyscale, with alpha.
    out["lossless.jp2"] = save(pil, "JPEG2000")
    out["lossy.jp2"] = save(pil, "JPEG2000", quality_mode="rates", quality_layers=[8])
    out["codestream.j2k"] = save(pil, "JPEG2000", no_jp2=True)
    out["grey.jp2"] = save(grey, "JPEG2000")
    out["rgba.jp2"] = save(rgba, "JPEG2000")
    out["grey_alpha.jp2"] = save(rgba.convert("LA"), "JPEG2000")
    # BMP: Pillow's 24-bit, 8-bit and 1-bit; hand-made 4-bit, 16-bit, bit fields, top-down.
    out["rgb24.bmp"] = save(pil, "BMP")
    out["palette8.bmp"] = save(pal, "BMP")
    out["bilevel1.bmp"] = save(grey.convert("1"), "BMP")
    out["rgba32.bmp"] = save(rgba, "BMP")
    pal16 = bytes(v for i in range(6) for v in (i * 40, 255 - i * 40, (i * 97) % 256, 0))
    idx = (np.arange(W * H).reshape(H, W) * 5) % 7  # index 6 is past the 6-entry palette: black
    rows4 = [bytes((int(r[i]) << 4) | (int(r[i + 1]) if i + 1 < W else 0) for i in range(0, W, 2)) for r in idx]
    out["palette4.bmp"] = le_bmp(4, W, H, rows4, palette=pal16)
    px16 = (np.arange(W * H).reshape(H, W) * 2654435761 % 65536).astype(np.uint16)
    rows16 = [b"".join(struct.pack("<H", int(v) & 0x7FFF) for v in r) for r in px16]
    out["rgb555.bmp"] = le_bmp(16, W, H, rows16)
    rows565 = [b"".join(struct.pack("<H", int(v)) for v in r) for r in px16]
    out["rgb565.bmp"] = le_bmp(16, W, H, rows565, compression=3, masks=struct.pack("<III", 0xF800, 0x07E0, 0x001F))
    rows32 = [b"".join(bytes([p[2], p[1], p[0], 0x55]) for p in r) for r in rgb]
    out["bgrx32.bmp"] = le_bmp(32, W, H, rows32)
    rows32f = [b"".join(bytes([0x55, p[2], p[1], p[0]]) for p in r) for r in rgb]
    out["bitfields32.bmp"] = le_bmp(32, W, H, rows32f, compression=3,
                                    masks=struct.pack("<III", 0xFF000000, 0x00FF0000, 0x0000FF00))
    rows24 = [r[:, ::-1].tobytes() for r in rgb]  # B G R, top row first
    top_down = bytearray(le_bmp(24, W, H, rows24[::-1]))  # stored top row first
    struct.pack_into("<i", top_down, 22, -H)
    out["top_down.bmp"] = bytes(top_down)
    # PNM: Pillow's P6, P5, P4; hand-made plain P1, P2, P3 and maxvals 100 and 1000.
    out["rgb.ppm"] = save(pil, "PPM")
    out["grey.pgm"] = save(grey, "PPM")
    out["bilevel.pbm"] = save(grey.convert("1"), "PPM")
    g = np.asarray(grey)
    out["plain.pbm"] = b"P1\n# plain bitmap\n%d %d\n" % (W, H) + b"\n".join(
        b"".join(b"1" if v < 128 else b"0" for v in r) for r in g) + b"\n"
    out["plain.pgm"] = b"P2\n%d %d\n200\n" % (W, H) + b"\n".join(
        b" ".join(b"%d" % (int(v) * 200 // 255) for v in r) for r in g) + b"\n"
    out["plain.ppm"] = b"P3\n%d %d\n100\n" % (W, H) + b"\n".join(
        b" ".join(b"%d" % (int(v) * 100 // 255) for v in r.reshape(-1)) for r in rgb) + b"\n"
    out["maxval100.ppm"] = b"P6\n%d %d\n100\n" % (W, H) + bytes((rgb.astype(int) * 100 // 255).astype(np.uint8))
    big = (rgb.astype(np.int64) * 1000 // 255).astype(">u2")
    out["maxval1000.ppm"] = b"P6 %d %d 1000\n" % (W, H) + big.tobytes()
    out["maxval1000.pgm"] = b"P5\n%d %d\n1000\n" % (W, H) + big[:, :, 0].tobytes()
    return {k: v for k, v in out.items() if v is not None}


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    lines = []
    for name, data in images().items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        im = Image.open(io.BytesIO(data))
        if im.mode in ("I", "I;16"):
            # 16-bit greyscale: Pillow opens it as integers and its convert()
            # clips them at 255; vigil scales it to 8 bits as it does 16-bit
            # colour (PNG: the high byte; PNM: v * 255 / maxval rounded half to even).
            v = np.asarray(im).astype(np.int64)
            maxval = 65535 if im.format == "PNG" else int(data.split()[3])
            if im.format != "PNG":  # the raw samples (Pillow has scaled them to 65535)
                h, w = v.shape
                v = np.frombuffer(data[-h * w * 2:], dtype=">u2").reshape(h, w).astype(np.int64)
            lum = (v >> 8 if im.format == "PNG" else np.round(v * 255.0 / maxval)).astype(np.uint8)
            rgb = np.repeat(lum[:, :, None], 3, axis=2)
        else:
            rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
            lum = np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.uint8)
        base = os.path.splitext(name)[0] + "_" + os.path.splitext(name)[1][1:]
        open(os.path.join(folder, base + ".rgb"), "wb").write(rgb.tobytes())
        open(os.path.join(folder, base + ".l"), "wb").write(lum.tobytes())
        lines.append("%s %s %d %d" % (name, base, rgb.shape[0], rgb.shape[1]))
        print("%-18s %5d bytes  %s %s" % (name, len(data), im.format, im.mode))
    with open(os.path.join(folder, "manifest.txt"), "w") as f:
        f.write("# image expected-prefix height width (tools/image_fixtures/make_image_decoder_fixtures.py)\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
