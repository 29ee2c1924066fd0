import { hslToRgb, mixRgb, type Rgb } from './colour.js';
import { SeededRandom } from './seeded-random.js';

/**
 * What the local engine paints, in size-independent units: positions are fractions of the
 * width and height (u, v), lengths are fractions of sqrt(width * height). The same composition
 * painted at 1K and at 4K is the same picture.
 */
export interface Composition {
  background: LinearGradient;
  /** Painted in order, later over earlier. */
  shapes: Shape[];
}

export interface LinearGradient {
  /** Direction of the gradient in radians, 0 = left to right. */
  angle: number;
  stops: readonly [Rgb, Rgb, Rgb];
}

/** The pixels within `halfWidth` of the line through (u, v) whose normal has direction `angle`. */
export interface Slab {
  angle: number;
  u: number;
  v: number;
  halfWidth: number;
}

interface Paint {
  colour: Rgb;
  /** 0..1 */
  opacity: number;
}

/** A filled circle, or a ring when `hole` (inner radius / radius) is above 0. */
export interface Disc extends Paint {
  kind: 'disc';
  u: number;
  v: number;
  radius: number;
  hole: number;
}

/** A stripe crossing the whole image. */
export interface Band extends Paint {
  kind: 'band';
  slab: Slab;
}

/** A rotated rectangle: the crossing of two perpendicular slabs. */
export interface Panel extends Paint {
  kind: 'panel';
  across: Slab;
  along: Slab;
}

export type Shape = Disc | Band | Panel;
type ShapeKind = 'disc' | 'ring' | 'band' | 'panel';

/**
 * Everything the images of one request share: colour scheme, background, the kinds of shapes.
 * Images of a request (n > 1, or sequential mode) are variants of one family, so they read as
 * a related set.
 */
export interface CompositionFamily {
  scheme: readonly Rgb[];
  /** The background runs from one end through a scheme colour (varying by image) to the other. */
  backgroundEnds: readonly [Rgb, Rgb];
  baseAngle: number;
  kinds: readonly ShapeKind[];
  /** Small accents over the main shapes; thinking mode asks for more detail. */
  accentCount: number;
}

const HARMONIES: readonly (readonly number[])[] = [
  [0, 30, -30, 15, -15],
  [0, 180, 20, 200, -20],
  [0, 120, 240, 60, 180],
  [0, 150, 210, 30, 330],
];

export function compositionFamily(seed: number, detailed: boolean): CompositionFamily {
  const random = new SeededRandom(seed);
  const baseHue = random.between(0, 360);
  const harmony = random.pick(HARMONIES);
  const saturation = random.between(0.45, 0.9);
  const scheme = harmony.map((offset, index) =>
    hslToRgb(
      baseHue + offset,
      Math.min(1, saturation + random.between(-0.15, 0.15)),
      0.3 + ((index * 0.37 + random.next() * 0.3) % 0.5),
    ),
  );
  const dark = hslToRgb(
    baseHue + random.between(-20, 20),
    saturation * 0.8,
    random.between(0.08, 0.22),
  );
  const light = hslToRgb(
    baseHue + random.between(-40, 40),
    saturation * 0.6,
    random.between(0.75, 0.92),
  );
  const backgroundEnds: [Rgb, Rgb] = random.next() < 0.5 ? [dark, light] : [light, dark];
  const shapeCount = detailed ? random.integer(9, 13) : random.integer(5, 8);
  const kinds = Array.from({ length: shapeCount }, () =>
    random.pick<ShapeKind>(['disc', 'disc', 'ring', 'band', 'panel', 'panel']),
  );
  return {
    scheme,
    backgroundEnds,
    baseAngle: random.between(0, 2 * Math.PI),
    kinds,
    accentCount: detailed ? random.integer(8, 14) : random.integer(0, 3),
  };
}

/**
 * One image of a family. `index` turns the background and `seed` places the shapes; the shapes
 * and the middle of the background take `colours` when given (e.g. from reference images), else
 * the family scheme.
 */
export function compositionVariant(
  family: CompositionFamily,
  seed: number,
  index: number,
  colours: readonly Rgb[] = family.scheme,
): Composition {
  const random = new SeededRandom(seed);
  const palette = colours.length > 0 ? colours : family.scheme;
  const [start, end] = family.backgroundEnds;
  const middle = palette[index % palette.length] ?? mixRgb(start, end, 0.5);
  const background: LinearGradient = {
    angle: family.baseAngle + index * 0.7,
    stops: [start, middle, end],
  };
  const main = family.kinds.map((kind) => shapeOf(kind, random, random.pick(palette)));
  const accents = Array.from({ length: family.accentCount }, (): Shape => {
    const base = random.pick(palette);
    return {
      kind: 'disc',
      u: random.next(),
      v: random.next(),
      radius: random.between(0.008, 0.035),
      hole: random.next() < 0.3 ? 0.6 : 0,
      colour: mixRgb(base, { r: 255, g: 255, b: 255 }, random.between(0, 0.5)),
      opacity: random.between(0.7, 1),
    };
  });
  return { background, shapes: [...main.sort((a, b) => areaOf(b) - areaOf(a)), ...accents] };
}

function shapeOf(kind: ShapeKind, random: SeededRandom, colour: Rgb): Shape {
  const opacity = random.between(0.55, 0.95);
  const u = random.between(0.05, 0.95);
  const v = random.between(0.05, 0.95);
  const angle = random.between(0, Math.PI);
  switch (kind) {
    case 'disc':
    case 'ring':
      return {
        kind: 'disc',
        u,
        v,
        radius: random.between(0.06, 0.3),
        hole: kind === 'ring' ? random.between(0.45, 0.8) : 0,
        colour,
        opacity,
      };
    case 'band':
      return {
        kind: 'band',
        slab: { angle, u, v, halfWidth: random.between(0.015, 0.09) },
        colour,
        opacity,
      };
    case 'panel':
      return {
        kind: 'panel',
        across: { angle, u, v, halfWidth: random.between(0.05, 0.22) },
        along: { angle: angle + Math.PI / 2, u, v, halfWidth: random.between(0.05, 0.22) },
        colour,
        opacity,
      };
  }
}

/** Rough area in scale units squared; only used to put large shapes under small ones. */
function areaOf(shape: Shape): number {
  switch (shape.kind) {
    case 'disc':
      return Math.PI * shape.radius ** 2 * (1 - shape.hole ** 2);
    case 'band':
      return shape.slab.halfWidth * 2;
    case 'panel':
      return 4 * shape.across.halfWidth * shape.along.halfWidth;
  }
}
