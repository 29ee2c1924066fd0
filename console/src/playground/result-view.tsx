import { useState } from 'preact/hooks';
import type { RunState } from './run-request';
import type { Snippet } from './snippets';

interface ResultViewProps {
  run: RunState | undefined;
  snippets: Snippet[];
  onCancelTask: () => void;
}

/** The answer: images as they arrive, its usage, request id and Server-Timing, and the code. */
export function ResultView({ run, snippets, onCancelTask }: ResultViewProps) {
  return (
    <section class="result" aria-label="Result" aria-busy={run?.phase === 'running'}>
      {run === undefined ? (
        <p class="hint">Images appear here as they arrive.</p>
      ) : (
        <RunSummary run={run} onCancelTask={onCancelTask} />
      )}
      {run !== undefined && run.images.length > 0 && (
        <ol class="gallery" data-testid="gallery">
          {run.images.map((image, index) => (
            <li key={image.url} data-arrived-ms={image.arrivedMs} data-index={index}>
              <a href={image.url} target="_blank" rel="noreferrer">
                <img src={image.url} alt={`Generated image ${index + 1}`} />
              </a>
              <span class="hint">
                #{index + 1}
                {image.arrivedMs > 0 ? ` · ${(image.arrivedMs / 1000).toFixed(1)} s` : ''}
              </span>
            </li>
          ))}
        </ol>
      )}
      <Snippets snippets={snippets} />
    </section>
  );
}

function RunSummary({ run, onCancelTask }: { run: RunState; onCancelTask: () => void }) {
  return (
    <dl class="facts" data-testid="run-summary" data-phase={run.phase}>
      <dt>Status</dt>
      <dd>
        <span role="status">
          {run.phase === 'running' ? `running… ${run.images.length} image(s) so far` : run.phase}
        </span>
      </dd>
      {run.task !== undefined && (
        <>
          <dt>Task</dt>
          <dd>
            <code>{run.task.id}</code> <span data-testid="task-status">{run.task.status}</span>{' '}
            {run.task.status === 'PENDING' && (
              <button type="button" onClick={onCancelTask}>
                Cancel task
              </button>
            )}
          </dd>
        </>
      )}
      {run.error !== undefined && (
        <>
          <dt>Error</dt>
          <dd class="error">
            <span role="alert">{run.error}</span>
          </dd>
        </>
      )}
      {run.requestId !== undefined && (
        <>
          <dt>Request id</dt>
          <dd>
            <code>{run.requestId}</code>
          </dd>
        </>
      )}
      {run.usage !== undefined && (
        <>
          <dt>Usage</dt>
          <dd data-testid="usage">
            {Object.entries(run.usage)
              .map(([key, value]) => `${key} ${String(value)}`)
              .join(' · ')}
          </dd>
        </>
      )}
      {run.serverTiming !== undefined && (
        <>
          <dt>Server-Timing</dt>
          <dd>{run.serverTiming}</dd>
        </>
      )}
      {run.recordedTiming !== undefined && (
        <>
          <dt>Time split (from the usage ledger)</dt>
          <dd data-testid="recorded-timing">{run.recordedTiming}</dd>
        </>
      )}
    </dl>
  );
}

function Snippets({ snippets }: { snippets: Snippet[] }) {
  const [shown, setShown] = useState('curl');
  const snippet = snippets.find((candidate) => candidate.id === shown) ?? snippets[0];
  if (snippet === undefined) return null;
  return (
    <details class="snippets">
      <summary>The same request as code</summary>
      <div role="tablist" aria-label="Language">
        {snippets.map((candidate) => (
          <button
            type="button"
            role="tab"
            key={candidate.id}
            aria-selected={candidate.id === snippet.id}
            onClick={() => setShown(candidate.id)}
          >
            {candidate.title}
          </button>
        ))}
      </div>
      <pre role="tabpanel">
        <code>{snippet.code}</code>
      </pre>
      <button type="button" onClick={() => void navigator.clipboard.writeText(snippet.code)}>
        Copy
      </button>
    </details>
  );
}
