import type { PaletteEntry } from './form-state';

const MIN_COLOURS = 3;
const MAX_COLOURS = 10;

interface PaletteEditorProps {
  palette: PaletteEntry[];
  onChange: (palette: PaletteEntry[]) => void;
}

/** Hundredths of a percent of `12.50%`; NaN for text of another form. */
function hundredths(ratio: string): number {
  const match = /^(\d+)\.(\d{2})%$/.exec(ratio.trim());
  return match === null ? Number.NaN : Number(match[1]) * 100 + Number(match[2]);
}

/**
 * The colour palette: 3 to 10 colours, each with its share of the picture, and the live sum.
 * The sum is shown as typed; whether the palette is valid is the gateway validator's answer.
 */
export function PaletteEditor({ palette, onChange }: PaletteEditorProps) {
  const total = palette.reduce((sum, entry) => sum + hundredths(entry.ratio), 0);
  const change = (at: number, entry: Partial<PaletteEntry>) =>
    onChange(palette.map((old, index) => (index === at ? { ...old, ...entry } : old)));
  return (
    <div class="palette">
      {palette.map((entry, at) => (
        <div class="palette-row" key={at}>
          <input
            type="color"
            aria-label={`Colour ${at + 1}`}
            value={/^#[0-9a-fA-F]{6}$/.test(entry.hex) ? entry.hex : '#000000'}
            onInput={(event) => change(at, { hex: event.currentTarget.value.toUpperCase() })}
          />
          <input
            type="text"
            class="hex"
            aria-label={`Colour ${at + 1} hex`}
            value={entry.hex}
            onInput={(event) => change(at, { hex: event.currentTarget.value })}
          />
          <input
            type="text"
            class="ratio"
            aria-label={`Colour ${at + 1} share`}
            value={entry.ratio}
            onInput={(event) => change(at, { ratio: event.currentTarget.value })}
          />
          <button
            type="button"
            class="link"
            aria-label={`Remove colour ${at + 1}`}
            disabled={palette.length <= MIN_COLOURS}
            onClick={() => onChange(palette.filter((_, index) => index !== at))}
          >
            Remove
          </button>
        </div>
      ))}
      <div class="palette-foot">
        <button
          type="button"
          disabled={palette.length >= MAX_COLOURS}
          onClick={() => onChange([...palette, { hex: '#808080', ratio: '0.00%' }])}
        >
          Add colour
        </button>
        <output
          class={total === 10_000 ? 'sum ok' : 'sum bad'}
          aria-live="polite"
          data-testid="palette-sum"
        >
          Sum: {Number.isNaN(total) ? '—' : `${(total / 100).toFixed(2)}%`} of 100.00%
        </output>
      </div>
    </div>
  );
}
