import type { JSX } from 'preact';
import { type FormState, MODEL_A } from './form-state';
import { PaletteEditor } from './palette-editor';

interface FieldsProps {
  state: FormState;
  set: (change: Partial<FormState>) => void;
}

/** Display hints only: the validator decides (docs/api.md §3.2, §4.2). */
const SIZE_HINT_A =
  'Presets 1K, 2K, 4K (4K and custom up to 4096*4096 for text-to-image only; 2048*2048 with images or sequential); custom from 768*768, aspect 1:8 to 8:1.';
const SIZE_HINT_B = 'Custom only: 512*512 to 2048*2048 pixels in all, aspect 1:8 to 8:1.';

export function SizeFields({ state, set }: FieldsProps) {
  const modelA = state.modelId === MODEL_A;
  const presets = modelA ? ['1K', '2K', '4K'] : [];
  return (
    <fieldset class="size">
      <legend>Size</legend>
      <label for="size-choice">Size</label>
      <select
        id="size-choice"
        value={state.sizeChoice}
        onChange={(event) => set({ sizeChoice: event.currentTarget.value })}
      >
        <option value="default">Model default</option>
        {presets.map((preset) => (
          <option key={preset} value={preset}>
            {preset}
          </option>
        ))}
        <option value="custom">Custom…</option>
      </select>
      {state.sizeChoice === 'custom' && (
        <span class="custom-size">
          <NumberField
            label={'Width'}
            id="width"
            value={state.width}
            onValue={(width) => set({ width })}
          />
          <NumberField
            label={'Height'}
            id="height"
            value={state.height}
            onValue={(height) => set({ height })}
          />
        </span>
      )}
      <p class="hint">{modelA ? SIZE_HINT_A : SIZE_HINT_B}</p>
    </fieldset>
  );
}

export function Field(props: { label: string; id: string; children: JSX.Element }) {
  return (
    <span class="field">
      <label for={props.id}>{props.label}</label>
      {props.children}
    </span>
  );
}

function NumberField(props: {
  label: string;
  id: string;
  value: string;
  onValue: (value: string) => void;
}) {
  return (
    <Field label={props.label} id={props.id}>
      <input
        id={props.id}
        inputMode="numeric"
        value={props.value}
        onInput={(event) => props.onValue(event.currentTarget.value)}
      />
    </Field>
  );
}

function Check(props: { label: string; checked: boolean; onChange: (on: boolean) => void }) {
  return (
    <label class="check">
      <input
        type="checkbox"
        checked={props.checked}
        onChange={(event) => props.onChange(event.currentTarget.checked)}
      />
      {props.label}
    </label>
  );
}

export function ParameterFields({ state, set }: FieldsProps) {
  const modelA = state.modelId === MODEL_A;
  return (
    <fieldset class="parameters">
      <legend>Parameters</legend>
      <div class="row">
        <NumberField
          label={modelA ? (state.sequential ? 'n (at most, 1-12)' : 'n (1-4)') : 'n (1-6)'}
          id="n"
          value={state.n}
          onValue={(n) => set({ n })}
        />
        <NumberField
          label={'Seed (empty: random)'}
          id="seed"
          value={state.seed}
          onValue={(seed) => set({ seed })}
        />
      </div>
      <div class="row">
        <Check
          label="Watermark"
          checked={state.watermark}
          onChange={(watermark) => set({ watermark })}
        />
        {modelA && (
          <Check
            label="Sequential (a group of images)"
            checked={state.sequential}
            onChange={(sequential) => set({ sequential })}
          />
        )}
        {modelA && (
          <Check
            label="Thinking mode"
            checked={state.thinking}
            onChange={(thinking) => set({ thinking })}
          />
        )}
        {!modelA && (
          <Check
            label="Prompt extension"
            checked={state.promptExtend}
            onChange={(promptExtend) => set({ promptExtend })}
          />
        )}
      </div>
      {!modelA && (
        <Field label="Negative prompt" id="negative-prompt">
          <textarea
            id="negative-prompt"
            rows={2}
            value={state.negativePrompt}
            onInput={(event) => set({ negativePrompt: event.currentTarget.value })}
          />
        </Field>
      )}
      {modelA && (
        <div>
          <Check
            label="Colour palette"
            checked={state.usePalette}
            onChange={(usePalette) => set({ usePalette })}
          />
          {state.usePalette && (
            <PaletteEditor palette={state.palette} onChange={(palette) => set({ palette })} />
          )}
        </div>
      )}
    </fieldset>
  );
}
