import type { OpenAiChannelConfig } from '../../config/channel-config.js';
import {
  type AttemptCall,
  type AttemptResult,
  type AttemptRun,
  type ChannelAdapter,
  failure,
} from '../attempt-result.js';
import { answersAtOnce } from '../../engine/engine-run.js';
import { excerpt, parseJson } from '../json-fields.js';
import { transportFailure } from '../transport-failure.js';
import { retryAfterMs, type UpstreamHttp } from '../upstream-http.js';
import { encodeMultipart, newBoundary } from './multipart.js';
import {
  classifyOpenAiError,
  closestSize,
  EDITS_PATH,
  editsParts,
  GENERATIONS_PATH,
  generationsBody,
  readOpenAiOutput,
} from './openai-protocol.js';

/** b64_json answers carry whole PNGs: up to a dozen large images. */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/** The OpenAI Images API: generations for text-to-image, multipart edits with input images. */
export class OpenAiAdapter implements ChannelAdapter {
  constructor(
    private readonly config: OpenAiChannelConfig,
    private readonly http: UpstreamHttp,
  ) {}

  attempt(call: AttemptCall): AttemptRun {
    return answersAtOnce(() => this.answer(call));
  }

  private async answer(call: AttemptCall): Promise<AttemptResult> {
    const size = closestSize(call.job.output, this.config.sizes);
    const options = {
      upstreamModel: call.upstreamModel,
      size,
      sendResponseFormat: this.config.sendResponseFormat,
    };
    const edit = call.job.inputs.length > 0;
    const boundary = newBoundary();
    const answer = await this.http.send({
      method: 'POST',
      url: `${this.config.baseUrl}${edit ? EDITS_PATH : GENERATIONS_PATH}`,
      headers: this.headers(
        edit ? `multipart/form-data; boundary=${boundary}` : 'application/json',
      ),
      body: edit
        ? encodeMultipart(editsParts(call.job, options), boundary)
        : Buffer.from(JSON.stringify(generationsBody(call.job, options))),
      // Read to its end even when the caller has left: what the upstream produced is recorded.
      signal: call.upstreamSignal,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    if (answer.kind === 'failed') return transportFailure(answer, call);
    const text = answer.body.toString('utf8');
    const json = parseJson(answer.body);
    if (answer.status === 200) {
      if (json === undefined)
        return failure('malformed', `HTTP 200 with an unreadable body: ${excerpt(text, 120)}`, {
          mayHaveBeenAccepted: true,
        });
      const read = readOpenAiOutput(json, size);
      if (read.ok) return { ok: true, output: read.output };
      return failure('malformed', `HTTP 200 but ${read.problem}`, { mayHaveBeenAccepted: true });
    }
    return classifyOpenAiError(
      answer.status,
      json,
      excerpt(text, 200),
      this.config.apiKey,
      retryAfterMs(answer.headers),
    );
  }

  private headers(contentType: string): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.config.apiKey !== undefined)
      headers.authorization = `Bearer ${this.config.apiKey.reveal()}`;
    headers.accept = 'application/json';
    headers['user-agent'] = 'imagegate';
    headers['content-type'] = contentType;
    return headers;
  }
}
