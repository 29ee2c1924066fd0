import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf } from '../api';
import {
  codePoints,
  type FormState,
  INITIAL_STATE,
  MODEL_A,
  namesUploads,
  requestBody,
} from './form-state';
import { ImageInputs } from './image-inputs';
import { Field, ParameterFields, SizeFields } from './parameter-fields';
import { ResultView } from './result-view';
import { cancelTask, type RunState, runAsTask, STARTED, streamGeneration } from './run-request';
import { snippetsFor } from './snippets';
import { useValidation } from './use-validation';

const MAX_PROMPT = 5000;

interface ModelName {
  name: string;
  model: string;
}

function useModelNames(): ModelName[] {
  const [names, setNames] = useState<ModelName[]>([
    { name: MODEL_A, model: MODEL_A },
    { name: 'txt-image-2.0-pro', model: 'txt-image-2.0-pro' },
  ]);
  useEffect(() => {
    void api<{ models: { id: string; aliases: string[] }[] }>('/console/api/models').then(
      (answer) =>
        setNames(
          answer.models.flatMap((entry) => [
            { name: entry.id, model: entry.id },
            ...entry.aliases.map((alias) => ({ name: alias, model: entry.id })),
          ]),
        ),
    );
  }, []);
  return names;
}

export function Playground() {
  const [state, setState] = useState<FormState>(INITIAL_STATE);
  const [run, setRun] = useState<RunState | undefined>();
  const stopPolling = useRef<AbortController | undefined>(undefined);
  const names = useModelNames();
  const set = (change: Partial<FormState>) => setState((old) => ({ ...old, ...change }));
  const body = requestBody(state);
  const validation = useValidation(body);
  const running = run?.phase === 'running';
  useEffect(() => () => stopPolling.current?.abort(), []);

  async function generate(): Promise<void> {
    stopPolling.current?.abort();
    const controller = new AbortController();
    stopPolling.current = controller;
    setRun(STARTED);
    const update = (change: (old: RunState) => RunState) => setRun((old) => change(old ?? STARTED));
    try {
      if (state.delivery === 'task')
        await runAsTask(body, namesUploads(state), update, controller.signal);
      else await streamGeneration(body, namesUploads(state), update);
    } catch (error) {
      update((old) => ({ ...old, phase: 'failed', error: messageOf(error) }));
    }
  }
  async function cancel(): Promise<void> {
    const id = run?.task?.id;
    if (id === undefined) return;
    try {
      await cancelTask(id);
    } catch (error) {
      setRun((old) => old && { ...old, error: messageOf(error) });
    }
  }

  const prompt = codePoints(state.prompt);
  return (
    <div class="playground">
      <form
        class="request"
        aria-label="Request"
        onSubmit={(event) => {
          event.preventDefault();
          if (validation.state === 'valid' && !running) void generate();
        }}
      >
        <h1>Playground</h1>
        <Field label="Model" id="model">
          <select
            id="model"
            value={state.model}
            onChange={(event) => {
              const name = event.currentTarget.value;
              const model = names.find((entry) => entry.name === name)?.model ?? name;
              set({
                model: name,
                modelId: model,
                sizeChoice: model === MODEL_A ? '1K' : 'default',
              });
            }}
          >
            {names.map((entry) => (
              <option key={entry.name} value={entry.name}>
                {entry.name === entry.model
                  ? entry.name
                  : `${entry.name} (alias of ${entry.model})`}
              </option>
            ))}
          </select>
        </Field>
        <label for="prompt">Prompt</label>
        <textarea
          id="prompt"
          rows={4}
          value={state.prompt}
          aria-describedby="prompt-count"
          onInput={(event) => set({ prompt: event.currentTarget.value })}
        />
        <p id="prompt-count" class={prompt > MAX_PROMPT ? 'hint warn' : 'hint'}>
          {prompt.toLocaleString()} / {MAX_PROMPT.toLocaleString()} characters
          {prompt > MAX_PROMPT ? ' — the rest will be cut' : ''}
        </p>
        <ImageInputs
          model={state.model}
          images={state.images}
          boxesAllowed={state.modelId === MODEL_A}
          onImages={(change) => setState((old) => ({ ...old, images: change(old.images) }))}
        />
        <SizeFields state={state} set={set} />
        <ParameterFields state={state} set={set} />
        <ValidationLine validation={validation} />
        <div class="actions">
          <Field label="Delivery" id="delivery">
            <select
              id="delivery"
              value={state.delivery}
              onChange={(event) =>
                set({ delivery: event.currentTarget.value as FormState['delivery'] })
              }
            >
              <option value="stream">Stream (images as they arrive)</option>
              <option value="task">Task (submit, then poll)</option>
            </select>
          </Field>
          <button type="submit" class="primary" disabled={validation.state !== 'valid' || running}>
            {running ? 'Generating…' : 'Generate'}
          </button>
        </div>
      </form>
      <ResultView
        run={run}
        snippets={snippetsFor(body, location.origin)}
        onCancelTask={() => void cancel()}
      />
    </div>
  );
}

function ValidationLine({ validation }: { validation: ReturnType<typeof useValidation> }) {
  if (validation.state === 'invalid')
    return (
      <p class="error" role="alert" data-testid="validation">
        {validation.message}
      </p>
    );
  return (
    <p class="hint" data-testid="validation" aria-live="polite">
      {validation.state === 'checking' ? 'Checking…' : `Ready: ${validation.mode}`}
    </p>
  );
}
