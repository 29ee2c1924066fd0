/** An sRGB colour, each channel an integer in 0..255. */
export interface Rgb {
  readonly r: number;
  readonly g: number;
  readonly b: number;
}

/** `#RRGGBB` (as validation leaves it) to channels. */
export function hexToRgb(hex: string): Rgb {
  const value = Number.parseInt(hex.slice(1), 16);
  return { r: (value >> 16) & 0xff, g: (value >> 8) & 0xff, b: value & 0xff };
}

/** Hue in degrees, saturation and lightness in [0, 1]. */
export function hslToRgb(hue: number, saturation: number, lightness: number): Rgb {
  const h = (((hue % 360) + 360) % 360) / 60;
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const second = chroma * (1 - Math.abs((h % 2) - 1));
  const [r, g, b] =
    h < 1
      ? [chroma, second, 0]
      : h < 2
        ? [second, chroma, 0]
        : h < 3
          ? [0, chroma, second]
          : h < 4
            ? [0, second, chroma]
            : h < 5
              ? [second, 0, chroma]
              : [chroma, 0, second];
  const offset = lightness - chroma / 2;
  const channel = (value: number) => Math.round((value + offset) * 255);
  return { r: channel(r), g: channel(g), b: channel(b) };
}

/** `from` at amount 0, `to` at amount 1. */
export function mixRgb(from: Rgb, to: Rgb, amount: number): Rgb {
  const channel = (a: number, b: number) => Math.round(a + (b - a) * amount);
  return { r: channel(from.r, to.r), g: channel(from.g, to.g), b: channel(from.b, to.b) };
}

/** Rec. 601 luma in 0..255, the ordering the palette painter uses. */
export function lumaOf(colour: Rgb): number {
  return (colour.r * 77 + colour.g * 150 + colour.b * 29) / 256;
}
