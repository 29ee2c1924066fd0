import { mkdir } from 'node:fs/promises';
import { GatewayClient } from '../client/gateway-client.js';
import { streamGeneration, submitTask } from '../client/dashscope-generation.js';
import type { GenerationOutcome, ImageUsage } from '../client/image-request.js';
import { openAiGeneration } from '../client/openai-generation.js';
import { cancelTask, waitForTask } from '../client/tasks-api.js';
import { readGatewayTarget } from './client-settings.js';
import { generateUsage, type GenerateOptions, readGenerateOptions } from './generate-options.js';
import { Interrupted } from './interrupted.js';
import type { ClientContext } from './client-context.js';
import { type Progress, progressFor } from './progress.js';
import { saveImage } from './image-files.js';

interface Saved {
  url: string;
  file: string;
}

/** `imagegate generate`: generates on a running gateway and saves the images (docs/cli.md). */
export async function runGenerateCommand(args: string[], context: ClientContext): Promise<void> {
  const options = readGenerateOptions(args);
  const client = new GatewayClient(
    readGatewayTarget(options.connection, context.env, generateUsage()),
  );
  await mkdir(options.outputDir, { recursive: true });
  const progress = progressFor(context.stdout, options.json);
  const saved: Saved[] = [];
  const save = async (url: string, index: number, requestId: string) => {
    const file = await saveImage(
      url,
      options.outputDir,
      requestId,
      index,
      (received, total) => progress.downloading(index, received, total),
      context.interrupt,
    );
    saved.push({ url, file });
    progress.saved(index, file);
    // A sequential group streams on: its next image may follow.
    if (options.mode === 'stream' && options.request.sequential)
      progress.waiting(`generating image ${index + 1}`);
  };
  let outcome: GenerationOutcome;
  try {
    outcome = await generate(client, options, progress, save, context);
    // A stream saved its images as they came; a task's and the OpenAI door's come at the end.
    const already = saved.length;
    for (const [offset, url] of outcome.images.slice(already).entries())
      await save(url, already + offset + 1, outcome.requestId);
  } catch (error) {
    if (context.interrupt?.aborted === true) throw new Interrupted();
    throw error;
  } finally {
    progress.finish();
  }
  context.stdout.write(
    options.json
      ? `${JSON.stringify(
          {
            request_id: outcome.requestId,
            ...(outcome.taskId === undefined ? {} : { task_id: outcome.taskId }),
            images: saved,
            usage: outcome.usage,
          },
          null,
          2,
        )}\n`
      : `${describeUsage(outcome)}\n`,
  );
}

async function generate(
  client: GatewayClient,
  options: GenerateOptions,
  progress: Progress,
  save: (url: string, index: number, requestId: string) => Promise<void>,
  context: ClientContext,
): Promise<GenerationOutcome> {
  const signal = context.interrupt;
  if (options.mode === 'openai') {
    progress.waiting(`generating with ${options.request.model} (OpenAI door)`);
    return openAiGeneration(client, options.request, signal);
  }
  if (options.mode === 'stream') {
    progress.waiting(`generating with ${options.request.model}`);
    return streamGeneration(client, options.request, save, signal);
  }
  progress.waiting('submitting the task');
  const { taskId, requestId } = await submitTask(client, options.request, signal);
  try {
    return await waitForTask(
      client,
      taskId,
      requestId,
      (state) => progress.taskState(taskId, state),
      signal,
    );
  } catch (error) {
    if (signal?.aborted === true) await cancelOnInterrupt(client, taskId, progress, context);
    throw error;
  }
}

/** Ctrl-C while the task waits or runs: the task is canceled rather than left to run unwatched. */
async function cancelOnInterrupt(
  client: GatewayClient,
  taskId: string,
  progress: Progress,
  context: ClientContext,
): Promise<void> {
  progress.finish();
  try {
    await cancelTask(client, taskId);
    context.stderr.write(`imagegate: interrupted: task ${taskId} canceled\n`);
  } catch (error) {
    context.stderr.write(
      `imagegate: interrupted: task ${taskId} could not be canceled: ${(error as Error).message}\n`,
    );
  }
}

function describeUsage({ usage, requestId, taskId }: GenerationOutcome): string {
  const task = taskId === undefined ? '' : `, task ${taskId}`;
  return `usage: ${describeImages(usage)}; request ${requestId}${task}`;
}

function describeImages(usage: ImageUsage): string {
  const count = usage.image_count ?? 0;
  const size =
    usage.size ?? (usage.width === undefined ? undefined : `${usage.width}*${usage.height}`);
  return `${count} image${count === 1 ? '' : 's'}${size === undefined ? '' : `, ${size}`}`;
}
