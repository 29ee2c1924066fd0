import { mkdir } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { GatewayClient } from '../client/gateway-client.js';
import { imagesOf } from '../client/dashscope-generation.js';
import { cancelTask, getTask, listTasks, type TaskAnswer } from '../client/tasks-api.js';
import { CONNECTION_OPTIONS, CONNECTION_USAGE, readGatewayTarget } from './client-settings.js';
import type { ClientContext } from './client-context.js';
import { saveImage } from './image-files.js';
import { Interrupted } from './interrupted.js';
import { UsageError } from './usage-error.js';

export const TASKS_USAGE = `  imagegate tasks list [--status S] [--model M] [--page N] [--page-size N] [--json] [connection]
  imagegate tasks get ID [-o DIR] [--json] [connection]
  imagegate tasks cancel ID [connection]
    The caller's asynchronous tasks on a running gateway (every task for an admin token);
    get -o DIR saves a finished task's images there.`;

function usage(): string {
  return `usage:\n${TASKS_USAGE}\nconnection:\n${CONNECTION_USAGE}`;
}

/** `imagegate tasks list|get|cancel`: the task API of docs/api.md §11. */
export async function runTasksCommand(args: string[], context: ClientContext): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'list':
      return listCommand(rest, context);
    case 'get':
      return getCommand(rest, context);
    case 'cancel':
      return cancelCommand(rest, context);
    default:
      throw new UsageError(
        action === undefined ? 'tasks: missing action' : `tasks: unknown action "${action}"`,
        usage(),
      );
  }
}

async function listCommand(args: string[], context: ClientContext): Promise<void> {
  const { values } = parse(args, {
    status: { type: 'string' },
    model: { type: 'string' },
    page: { type: 'string' },
    'page-size': { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const query: Record<string, string> = {};
  if (typeof values.status === 'string') query.status = values.status;
  if (typeof values.model === 'string') query.model_name = values.model;
  if (typeof values.page === 'string') query.page_no = values.page;
  if (typeof values['page-size'] === 'string') query.page_size = values['page-size'];
  const listing = await listTasks(clientOf(values, context), query);
  if (values.json === true) {
    context.stdout.write(`${JSON.stringify(listing, null, 2)}\n`);
    return;
  }
  const rows = [['TASK', 'STATUS', 'MODEL', 'SUBMITTED', 'ENDED']];
  for (const task of listing.data)
    rows.push([task.task_id, task.status, task.model_name, task.submit_time, task.end_time ?? '-']);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const lines = rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd(),
  );
  context.stdout.write(
    `${lines.join('\n')}\npage ${listing.page_no} of ${listing.total_page}, ${listing.total} task${listing.total === 1 ? '' : 's'}\n`,
  );
}

async function getCommand(args: string[], context: ClientContext): Promise<void> {
  const { values, positionals } = parse(
    args,
    { json: { type: 'boolean', default: false }, output: { type: 'string', short: 'o' } },
    true,
  );
  if (values.json === true && typeof values.output === 'string')
    throw new UsageError(
      'tasks get: -o saves the images, --json prints the answer: give one',
      usage(),
    );
  const task = await getTask(clientOf(values, context), oneId('get', positionals));
  if (values.json === true) {
    context.stdout.write(`${JSON.stringify(task, null, 2)}\n`);
    return;
  }
  const files =
    typeof values.output === 'string' ? await saveAll(task, values.output, context) : undefined;
  context.stdout.write(describeTask(task, files));
}

/** Downloads a finished task's images into `dir`, in order; answers their paths. */
async function saveAll(task: TaskAnswer, dir: string, context: ClientContext): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  try {
    for (const [index, url] of imagesOf(task).entries())
      files.push(
        await saveImage(
          url,
          dir,
          task.output.task_id,
          index + 1,
          () => undefined,
          context.interrupt,
        ),
      );
  } catch (error) {
    if (context.interrupt?.aborted === true) throw new Interrupted();
    throw error;
  }
  return files;
}

async function cancelCommand(args: string[], context: ClientContext): Promise<void> {
  const { values, positionals } = parse(args, {}, true);
  const answer = await cancelTask(clientOf(values, context), oneId('cancel', positionals));
  context.stdout.write(`task ${answer.output.task_id}: ${answer.output.task_status}\n`);
}

/** `files`: where its images were saved, when they were; their URLs are printed otherwise. */
function describeTask(task: TaskAnswer, files?: readonly string[]): string {
  const { output } = task;
  const lines = [`task ${output.task_id}: ${output.task_status}`];
  if (output.submit_time !== undefined) lines.push(`submitted: ${output.submit_time}`);
  if (output.scheduled_time !== undefined) lines.push(`started:   ${output.scheduled_time}`);
  if (output.end_time !== undefined) lines.push(`ended:     ${output.end_time}`);
  if (output.code !== undefined) lines.push(`error:     ${output.code}: ${output.message ?? ''}`);
  for (const [index, url] of imagesOf(task).entries())
    lines.push(`image ${index + 1}: ${files?.[index] ?? url}`);
  if (task.usage !== undefined) lines.push(`usage:     ${JSON.stringify(task.usage)}`);
  return `${lines.join('\n')}\n`;
}

function oneId(action: string, positionals: string[]): string {
  if (positionals.length !== 1)
    throw new UsageError(`tasks ${action}: give exactly one task ID`, usage());
  return positionals[0]!;
}

function clientOf(values: { url?: unknown; token?: unknown }, context: ClientContext) {
  return new GatewayClient(readGatewayTarget(values, context.env, usage()));
}

function parse<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
  allowPositionals = false,
) {
  try {
    return parseArgs({
      args,
      options: { ...options, ...CONNECTION_OPTIONS },
      allowPositionals,
      strict: true as const,
    });
  } catch (error) {
    throw new UsageError(`tasks: ${(error as Error).message}`, usage());
  }
}
