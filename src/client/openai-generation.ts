import { openAsBlob } from 'node:fs';
import path from 'node:path';
import { GatewayTransportError } from './answer-error.js';
import type { GatewayClient } from './gateway-client.js';
import {
  type GenerationOutcome,
  type ImageRequest,
  type ImageUsage,
  type InputImage,
  sharedParameters,
} from './image-request.js';

interface OpenAiAnswer {
  data?: { url?: string }[];
  usage?: ImageUsage;
}

/**
 * Generates through the OpenAI door (docs/openai.md): `/v1/images/generations` without input
 * images, `/v1/images/edits` with them as files. Answers are asked as URLs, so that images are
 * saved as on the DashScope door.
 */
export async function openAiGeneration(
  client: GatewayClient,
  request: ImageRequest,
  signal?: AbortSignal,
): Promise<GenerationOutcome> {
  const fields: Record<string, unknown> = Object.assign(
    { model: request.model, prompt: request.prompt },
    sharedParameters(request),
    { response_format: 'url' },
  );
  // OpenAI writes a custom size WIDTHxHEIGHT; presets pass as they are.
  if (typeof fields.size === 'string') fields.size = fields.size.replace('*', 'x');
  const edit = request.images.length > 0;
  const { body, response } = await client.json<OpenAiAnswer>(
    edit ? client.paths.openAiEdits : client.paths.openAiGenerations,
    {
      body: edit ? await editForm(fields, request.images, signal) : JSON.stringify(fields),
      signal,
    },
  );
  return {
    requestId: response.headers.get('x-request-id') ?? '',
    images: (body.data ?? []).flatMap((item) => (typeof item.url === 'string' ? [item.url] : [])),
    usage: body.usage ?? {},
  };
}

async function editForm(
  fields: Record<string, unknown>,
  images: readonly InputImage[],
  signal?: AbortSignal,
): Promise<FormData> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields))
    form.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  for (const [index, image] of images.entries()) {
    const { blob, name } = await imageFile(image.source, index, signal);
    form.append('image[]', blob, name);
  }
  return form;
}

/** An input image as a form file: a local file, or the bytes of a URL fetched by the client. */
async function imageFile(
  source: string,
  index: number,
  signal?: AbortSignal,
): Promise<{ blob: Blob; name: string }> {
  if (source.startsWith('oss://'))
    throw new GatewayTransportError(`--openai cannot send ${source}: the OpenAI door takes files`);
  if (!/^(https?:|data:)/i.test(source))
    return { blob: await openAsBlob(source), name: path.basename(source) };
  const response = await fetch(source, { signal });
  if (!response.ok)
    throw new GatewayTransportError(`fetching ${source.slice(0, 80)} answered ${response.status}`);
  return { blob: await response.blob(), name: `image-${index + 1}` };
}
